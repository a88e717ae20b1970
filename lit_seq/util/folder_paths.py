"""Paths stored relative to the folder that holds them, so a moved or cloned folder still reads.

A record names files of its own folder (a run folder's checkpoints, a grid's ``runs/`` and
``logs/``). Stored absolute, they name the machine that wrote them: a grid folder copied to
another machine, or committed and cloned, would point back at the first. Stored relative to
the folder, a reader resolves them against wherever it reads that folder. A path outside the
folder (a config file of the user's) stays as it is: it is not the folder's to carry.
"""

import os
from pathlib import Path


def relative_to_folder(path: str, folder: Path) -> str:
    """``path`` relative to ``folder`` when it lies inside it, else unchanged; "" stays "".

    ``/x/grid/runs/a/last.ckpt`` in ``/x/grid`` -> ``runs/a/last.ckpt``; a path relative to
    the working directory is read as one (``grid/runs/a`` in ``grid``: ``runs/a``).
    """
    if not path:
        return path
    here, base = Path(os.path.abspath(path)), Path(os.path.abspath(folder))
    return str(here.relative_to(base)) if here.is_relative_to(base) else path


def resolve_in_folder(path: str, folder: Path, written_in: Path | None = None) -> str:
    """A stored ``path`` as a path that finds the file from here: a relative one under
    ``folder`` (absolute, so it holds whatever the working directory); "" stays "".

    ``written_in``: the folder where a record with absolute paths was written (older
    records): a path inside it is taken to the same place under ``folder``, so a folder
    moved since still finds its own files; any other absolute path is kept.
    """
    if not path:
        return path
    if written_in is not None and Path(path).is_absolute():
        path = relative_to_folder(path, written_in)
    if Path(path).is_absolute():
        return path
    return str(Path(os.path.abspath(folder)) / path)
