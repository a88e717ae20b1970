"""A fit's W&B options as one group, like ``target``: ``--wandb.mode off`` or, in a config,
``wandb: {mode: offline, project: P}``. The spellings from before the group (``--wandb
MODE``, ``--wandb_<field>``) are read on the command line and in config files, so a run
folder written before it still resumes and evaluates."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from lit_seq.fit.wandb_modes import WANDB_MODES, WANDB_TAG_LIMIT
from lit_seq.util.checks import check_choice


@dataclass
class WandbOptions:
    """Weights & Biases: where and how a fit logs (the ``wandb`` section of a config).

    The spellings from before the group are read too: ``--wandb MODE`` as ``wandb.mode``,
    ``--wandb_project P`` as ``wandb.project``, and so on (``wandb_<field>``).

    Args:
        mode: One of auto, online, offline, off; auto = online when an API key is configured,
            else offline run files (upload later with ``wandb sync``).
        project: W&B project (default: WANDB_PROJECT if set, else lit_seq; a grid gives its
            runs its own, from its wandb: key or its driver's --wandb-project).
        entity: W&B entity, a user or team (default: WANDB_ENTITY if set, else W&B's default
            for the API key).
        group: W&B group.
        tags: W&B run tags, at most 64 characters each.
        save_requirements: Let W&B record the installed packages with the run (slower start).
        config: Extra keys of the W&B run's config, as JSON (a grid gives each of its runs
            grid, block, cell, seed, run_id and one key per axis).
        log_model: Upload the best and last checkpoints to W&B as model artifacts after the
            fit.
    """

    mode: str = "auto"
    project: str | None = None
    entity: str | None = None
    group: str | None = None
    tags: list[str] = field(default_factory=list)
    save_requirements: bool = False
    config: dict = field(default_factory=dict)
    log_model: bool = False

    def check(self) -> None:
        """ValueError naming the field for a mode W&B has not or a tag W&B refuses."""
        check_choice("wandb.mode", self.mode, WANDB_MODES)
        if long := [t for t in self.tags if len(t) > WANDB_TAG_LIMIT]:
            raise ValueError(
                f"wandb.tags: {long[0]!r} is {len(long[0])} characters; W&B takes at most "
                f"{WANDB_TAG_LIMIT}"
            )


# the spellings from before the group: ``wandb`` was the mode, each other field ``wandb_<it>``
OLD_KEYS = {"wandb": "mode"} | {
    f"wandb_{f.name}": f.name for f in dataclasses.fields(WandbOptions) if f.name != "mode"
}


def new_spelling(args: list[str]) -> list[str]:
    """``args`` (a fit's command line) with each old W&B flag in the group's spelling:
    ``--wandb off`` -> ``--wandb.mode=off``, ``--wandb_project=P`` -> ``--wandb.project=P``."""
    args, out = list(args), []
    while args:
        arg = args.pop(0)
        name, eq, value = arg.partition("=")
        if not name.startswith("--") or name[2:] not in OLD_KEYS:
            out.append(arg)
            continue
        if not eq:  # the value is the next argument: --wandb_project P
            value = args.pop(0) if args else ""
        if name == "--wandb" and (value.lstrip().startswith("{") or Path(value).is_file()):
            out.append(f"--wandb={value}")  # the whole group: JSON or a file (--help says so)
        else:
            out.append(f"--wandb.{OLD_KEYS[name[2:]]}={value}")
    return out


def new_layout(content: dict) -> str | None:
    """A config file's ``content`` with its old top-level W&B keys moved into its ``wandb``
    section, as a config the parser reads (JSON); None when it has none to move."""
    old = {k: v for k, v in content.items() if k in OLD_KEYS}
    section = old.pop("wandb") if isinstance(content.get("wandb"), dict) else {}  # the group
    if not old:
        return None
    moved = {k: v for k, v in content.items() if k not in OLD_KEYS}
    moved["wandb"] = {**section, **{OLD_KEYS[k]: v for k, v in old.items()}}
    return json.dumps(moved, default=str)
