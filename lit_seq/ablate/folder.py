"""The grid's output folder: which grid it belongs to, who is using it, where runs go.

Layout of an output folder (``results/<grid>`` by default)::

    grid.yaml          the grid as validated, plus every run's id, config and arguments
    fingerprint.json   each run's digest (its resolved configuration): the folder's grid
    records/<id>.json  one per finished run (status ok or failed): the source of truth
    runs/<id>/         the run folder of lit_seq.fit (checkpoints, output.log, W&B files)
    runs.* aggregate.* plots/   tables and plots, rebuilt from the records at the end

Resume rule: a run whose record says ``ok`` is skipped; a failed or missing one runs again
(its run folder is wiped first). A record is renamed into place only when complete, so a
``kill -9`` at any moment leaves each run either recorded once or not at all.
Fingerprint rule: reusing a folder with a grid whose runs differ in any way (arguments,
seeds, the contents of their base configs: each run's digest of its resolved configuration)
or that dropped runs is refused, naming those runs; use a new ``--out`` or delete it.
Growth rule: a grid that only gained runs (more seeds, a new cell), every run the folder
holds unchanged, resumes there; ``grid.yaml`` and ``fingerprint.json`` are rewritten to the
larger grid and its records are kept. A selected run's digest names its selection seeds and
candidates, so adding either changes the runs already trained at a choice and is refused.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml
from filelock import Timeout, UnixFileLock

from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.spec import Run
from lit_seq.fit.run_folder import check_folder_names
from lit_seq.record import RECORDS, RUNS, read_records
from lit_seq.util.checks import BadInput
from lit_seq.util.io import atomic_write_json, atomic_write_text, read_json

FINGERPRINT = "fingerprint.json"
GRID_FILE = "grid.yaml"


def run_dir(out_dir: Path, run_id: str) -> Path:
    return Path(out_dir) / RUNS / run_id


def fingerprint(grid_name: str, runs: list[Run]) -> str:
    """Hash of what the runs compute: ids, base configs, arguments (not workers or W&B)."""
    content = [grid_name, [[r.run_id, r.config, list(r.overrides)] for r in runs]]
    return hashlib.sha256(json.dumps(content).encode()).hexdigest()[:16]


def _read_marker(marker: Path) -> dict:
    """The folder's ``fingerprint.json``; BadGrid in one line if it cannot be read."""
    try:
        stored = read_json(marker)
    except (OSError, json.JSONDecodeError):
        stored = None
    if not isinstance(stored, dict):
        raise BadGrid(
            f"{str(marker)!r} is unreadable (truncated by a full disk?), so the grid that made "
            "this folder cannot be verified; use a new --out (the records stay here)"
        )
    return stored


def _differing_runs(marker: Path, grid_name: str, runs: list[Run]) -> list[str]:
    """Runs the folder holds that this grid dropped or computes otherwise (the runs it only
    gained are not among them: see the growth rule).

    A folder records each run's digest (its resolved configuration: base config contents
    included); a folder made before digests existed is compared by its fingerprint.
    """
    stored = _read_marker(marker)
    digests = stored.get("run_digests")
    if digests is None:
        return [] if stored.get("fingerprint") == fingerprint(grid_name, runs) else ["its runs"]
    now = {r.run_id: r.digest for r in runs}
    return [i for i in digests if now.get(i) != digests[i]]


def added_runs(out_dir: Path, runs: list[Run]) -> list[str]:
    """The ids of ``runs`` that the folder's grid did not have (none for a new folder or one
    made before run digests existed, which resumes only its exact grid)."""
    marker = Path(out_dir) / FINGERPRINT
    if not marker.exists():
        return []
    digests = _read_marker(marker).get("run_digests")
    return [] if digests is None else [r.run_id for r in runs if r.run_id not in digests]


def check_out_dir(out_dir: Path, grid_name: str, runs: list[Run]) -> bool:
    """Raise BadGrid if ``out_dir`` cannot hold this grid's results; True if it already does.

    Read-only, so ``--dry-run`` and bad grids never touch an existing folder.
    """
    out_dir = Path(out_dir)
    try:
        check_folder_names("--out", out_dir)
    except BadInput as err:
        raise BadGrid(str(err)) from None
    if out_dir.exists() and not out_dir.is_dir():
        raise BadGrid(
            f"--out {str(out_dir)!r} is a file; give a folder path for --out (a new one, or "
            "this grid's earlier out folder to resume it)"
        )
    marker = out_dir / FINGERPRINT
    if marker.exists():
        if differ := _differing_runs(marker, grid_name, runs):
            shown = ", ".join(differ[:3]) + (
                f" and {len(differ) - 3} more" if len(differ) > 3 else ""
            )
            raise BadGrid(
                f"out folder {str(out_dir)!r} was made by a different grid (or a different "
                f"version of this one): {shown} would compute something else or is no longer "
                "in the grid; use a new --out or delete it (a grid that only gains runs "
                "resumes in its folder)"
            )
        return True
    # what a driver killed while setting the folder up (or one setting it up right now)
    # leaves there is not someone's data: the grid file, the lock, temp files
    leftovers = {GRID_FILE, RECORDS}
    if out_dir.is_dir() and (
        any(p.name not in leftovers and not p.name.startswith(".") for p in out_dir.iterdir())
        or read_records(out_dir)
    ):
        raise BadGrid(
            f"out folder {str(out_dir)!r} is not empty and holds no grid results; use a new --out"
        )
    return False


def init_out_dir(out_dir: Path, spec: dict, runs: list[Run]) -> list[str]:
    """Create the folder and write ``grid.yaml`` and ``fingerprint.json``: once, and again
    when the grid gained runs (checked by :func:`check_out_dir` first); the ids gained."""
    out_dir = Path(out_dir)
    try:
        (out_dir / RECORDS).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BadGrid(f"out folder {str(out_dir)!r} is not writable: {err.strerror}") from None
    for stale in (out_dir / RECORDS).glob(".*.tmp"):
        stale.unlink(missing_ok=True)  # half-written records of a killed writer
    gained = added_runs(out_dir, runs)
    if (out_dir / FINGERPRINT).exists() and not gained:
        return []
    # the grid file first: a kill between the two leaves the old fingerprint, and the same
    # command grows the folder again
    listing = [{"run_id": r.run_id, "config": r.config, "args": list(r.overrides)} for r in runs]
    atomic_write_text(
        out_dir / GRID_FILE, yaml.safe_dump({**spec, "runs": listing}, sort_keys=False)
    )
    atomic_write_json(
        out_dir / FINGERPRINT,
        {
            "grid": spec["name"],
            "fingerprint": fingerprint(spec["name"], runs),
            "runs": len(runs),
            "run_digests": {r.run_id: r.digest for r in runs},
        },
    )
    return gained


def lock_out_dir(out_dir: Path) -> UnixFileLock:
    """Create the folder if needed and hold an exclusive lock on it until the returned lock
    is released (or this process ends, kill -9 included: flock is let go by the kernel);
    BadGrid if another driver holds it, since two drivers would run the same runs. Taken
    before anything else is written."""
    lock = UnixFileLock(
        Path(out_dir) / ".lock",
        blocking=False,  # in use: refuse at once
        thread_local=False,
        fallback_to_soft=False,  # a soft lock file would outlive a killed driver
    )
    try:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except Timeout:
        raise BadGrid(f"out folder {str(out_dir)!r} is in use by another lit_seq.ablate") from None
    except OSError as err:
        raise BadGrid(f"out folder {str(out_dir)!r} is not writable: {err.strerror}") from None
    return lock
