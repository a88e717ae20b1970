"""Where the shipped configs and grids live: inside the package, so that every install has them.

An editable install, a wheel and a plain ``pip install .`` all carry ``lit_seq/configs`` and
``lit_seq/ablations`` (package data); in a checkout, ``configs/`` and ``ablations/`` at the
top are links to them. A relative path such as ``configs/echo/rnn.yaml`` or
``ablations/smoke.yaml`` is looked up in the working directory first, then in the package, so
the commands in the README work from any folder.
"""

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # lit_seq/
CONFIG_DIR = PACKAGE_DIR / "configs"
GRID_DIR = PACKAGE_DIR / "ablations"
DEFAULT_CONFIG = CONFIG_DIR / "signal" / "transformer.yaml"


def find_file(path: str | Path) -> Path | None:
    """``path`` as given if it is a file, else the shipped file of that relative name, else None.

    A bare grid name (``smoke``) also finds ``ablations/smoke.yaml``.
    """
    path = Path(path)
    candidates = [path]
    if not path.is_absolute():
        candidates += [PACKAGE_DIR / path, GRID_DIR / path, GRID_DIR / f"{path}.yaml"]
    return next((p for p in candidates if p.is_file()), None)


def shipped_name(path: Path) -> str:
    """How a run stores its base config: relative to the package when shipped, else absolute.

    ``.../lit_seq/configs/echo/rnn.yaml`` -> ``configs/echo/rnn.yaml``, the same spelling in a
    checkout and in any install, so run ids and grid fingerprints do not depend on either.
    """
    path = Path(path).resolve()
    return str(path.relative_to(PACKAGE_DIR)) if path.is_relative_to(PACKAGE_DIR) else str(path)


def config_file(name: str) -> Path:
    """A stored base config name (:func:`shipped_name`) as a path from any working directory."""
    path = Path(name)
    return path if path.is_absolute() else PACKAGE_DIR / path
