"""The grid's output folder: which grid it belongs to, who is using it, where runs go.

Layout of an output folder (``results/<grid>`` by default)::

    grid.yaml          the grid as validated, plus every run's id, config and arguments
    fingerprint.json   hash of the expanded run list: the folder belongs to that grid only
    records/<id>.json  one per finished run (status ok or failed): the source of truth
    runs/<id>/         the run folder of lit_seq.fit (checkpoints, output.log, W&B files)
    runs.* aggregate.* plots/   tables and plots, rebuilt from the records at the end

Resume rule: a run whose record says ``ok`` is skipped; a failed or missing one runs again
(its run folder is wiped first). A record is renamed into place only when complete, so a
``kill -9`` at any moment leaves each run either recorded once or not at all.
Fingerprint rule: reusing a folder with a grid whose expanded runs differ in any way (ids,
configs, arguments, seeds; adding a seed counts) is refused; use a new ``--out`` or delete it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from pathlib import Path

import yaml

from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.spec import Run
from lit_seq.io import atomic_write_json, atomic_write_text, read_json
from lit_seq.record import RECORDS, read_records

RUNS = "runs"
FINGERPRINT = "fingerprint.json"
GRID_FILE = "grid.yaml"


def run_dir(out_dir: Path, run_id: str) -> Path:
    return Path(out_dir) / RUNS / run_id


def fingerprint(grid_name: str, runs: list[Run]) -> str:
    """Hash of what the runs compute: ids, base configs, arguments (not workers or W&B)."""
    content = [grid_name, [[r.run_id, r.config, list(r.overrides)] for r in runs]]
    return hashlib.sha256(json.dumps(content).encode()).hexdigest()[:16]


def check_out_dir(out_dir: Path, grid_name: str, runs: list[Run]) -> bool:
    """Raise BadGrid if ``out_dir`` cannot hold this grid's results; True if it already does.

    Read-only, so ``--dry-run`` and bad grids never touch an existing folder.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise BadGrid(f"out folder {str(out_dir)!r} is a file")
    marker = out_dir / FINGERPRINT
    if marker.exists():
        try:
            found = read_json(marker).get("fingerprint")
        except (OSError, json.JSONDecodeError, AttributeError):
            found = None
        if found != fingerprint(grid_name, runs):
            raise BadGrid(
                f"out folder {str(out_dir)!r} was made by a different grid (or a different "
                "version of this one); use a new --out or delete it"
            )
        return True
    # what a driver killed while setting the folder up leaves behind is not someone's data
    leftovers = {GRID_FILE, RECORDS, ".lock"}
    if out_dir.is_dir() and (
        any(p.name not in leftovers for p in out_dir.iterdir()) or read_records(out_dir)
    ):
        raise BadGrid(
            f"out folder {str(out_dir)!r} is not empty and holds no grid results; use a new --out"
        )
    return False


def init_out_dir(out_dir: Path, spec: dict, runs: list[Run]) -> None:
    """Create the folder and write ``grid.yaml`` and ``fingerprint.json`` (once)."""
    out_dir = Path(out_dir)
    try:
        (out_dir / RECORDS).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BadGrid(f"out folder {str(out_dir)!r} is not writable: {err.strerror}") from None
    for stale in (out_dir / RECORDS).glob(".*.tmp"):
        stale.unlink(missing_ok=True)  # half-written records of a killed writer
    if (out_dir / FINGERPRINT).exists():
        return
    listing = [{"run_id": r.run_id, "config": r.config, "args": list(r.overrides)} for r in runs]
    atomic_write_text(
        out_dir / GRID_FILE, yaml.safe_dump({**spec, "runs": listing}, sort_keys=False)
    )
    atomic_write_json(
        out_dir / FINGERPRINT,
        {"grid": spec["name"], "fingerprint": fingerprint(spec["name"], runs), "runs": len(runs)},
    )


def lock_out_dir(out_dir: Path):
    """Create the folder if needed and hold an exclusive lock on it until the returned handle
    is closed (or this process ends, kill -9 included); BadGrid if another driver holds it,
    since two drivers would run the same runs. Taken before anything else is written."""
    try:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        handle = open(Path(out_dir) / ".lock", "a")  # noqa: SIM115 - open while the lock is held
    except OSError as err:
        raise BadGrid(f"out folder {str(out_dir)!r} is not writable: {err.strerror}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise BadGrid(f"out folder {str(out_dir)!r} is in use by another lit_seq.ablate") from None
    return handle
