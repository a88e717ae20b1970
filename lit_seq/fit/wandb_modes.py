"""Weights & Biases set-up shared by single fits and grid summaries.

W&B is on by default and never needs a network: without an API key it writes real
offline run files (``wandb sync DIR`` uploads them later). ``off`` disables it. Online,
``wandb.init`` waits at most :data:`WANDB_INIT_TIMEOUT_S` for the server.
"""

import configparser
import netrc
import os
from pathlib import Path
from urllib.parse import urlparse

from lit_seq.util.checks import check_choice

WANDB_MODES = ("auto", "online", "offline", "off")
WANDB_TAG_LIMIT = 64  # characters: W&B refuses a longer tag

# How long ``wandb.init`` may wait for the W&B server (wandb's ``init_timeout`` setting).
# wandb's own default is 90 s, and without a network it uses all of it (more where
# connections hang) before failing; a reachable server answers in a second or two. Going
# offline after a false alarm costs little: ``wandb sync`` uploads the run later.
WANDB_INIT_TIMEOUT_S = 5.0


DEFAULT_HOST = "api.wandb.ai"


def wandb_host() -> str:
    """The host of the W&B server runs go to: ``WANDB_BASE_URL``'s, else the ``base_url`` that
    ``wandb login --host`` saved in wandb's settings file, else wandb's cloud."""
    base = os.environ.get("WANDB_BASE_URL") or _saved_base_url()
    return (urlparse(base).hostname if base else None) or DEFAULT_HOST


def _saved_base_url() -> str:
    folder = os.environ.get("WANDB_CONFIG_DIR") or Path.home() / ".config" / "wandb"
    parser = configparser.ConfigParser()
    try:
        parser.read(Path(folder) / "settings")
    except (configparser.Error, OSError):
        return ""
    return parser.get("default", "base_url", fallback="")


def wandb_api_key_configured() -> bool:
    """True when an API key is in the environment or in ``~/.netrc`` (``wandb login``) for the
    host runs go to (:func:`wandb_host`: a self-hosted server counts)."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        return netrc.netrc().authenticators(wandb_host()) is not None
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False


def resolve_wandb_mode(mode: str) -> str:
    """Turn the user's choice into ``online``, ``offline`` or ``off``.

    ``auto`` honours ``WANDB_MODE`` when set (``disabled`` counts as ``off``), else goes
    online only when an API key is configured.
    """
    check_choice("wandb", mode, WANDB_MODES)
    if mode != "auto":
        return mode
    env = os.environ.get("WANDB_MODE", "").lower()
    if env in ("disabled", "off"):
        return "off"
    if env in ("online", "offline"):
        return env
    return "online" if wandb_api_key_configured() else "offline"


DEFAULT_PROJECT = "lit_seq"
# Where a run goes, first found wins: an explicit option (a fit's --wandb.project, the grid
# driver's --wandb-project), a grid's ``wandb: {project: ...}`` (handed to its runs as the
# fit option), the environment (WANDB_PROJECT / WANDB_ENTITY), the default (lit_seq; the
# entity: W&B's default for the API key).
WANDB_TARGET_HELP = "explicit option > grid key > WANDB_PROJECT / WANDB_ENTITY > default"


def wandb_target(project: str | None, entity: str | None) -> tuple[str, str | None]:
    """The W&B (project, entity) of a run: each as given, else from the environment, else
    the default (``lit_seq``; no entity: W&B's default for the API key)."""
    project = project or os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT
    return project, entity or os.environ.get("WANDB_ENTITY") or None


def wandb_run_path(run) -> str:
    """A string that finds the run again: ``entity/project/id`` online, the folder offline."""
    if run is None:
        return ""
    if getattr(run, "offline", False) or run.settings.mode == "offline":
        return str(Path(run.dir).parent)
    return run.path
