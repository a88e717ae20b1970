"""A grid's finished records carried between the device and the repository.

A device call brings back at most 8 files, none deeper than ``$OUT/a/b/file``, so a grid
folder (a record and a log per run, checkpoints) cannot come back as it is. The campaign
keeps the grid in a working folder on the device and, every time a record arrives, rewrites
one archive under ``$OUT`` (:func:`pack_grid`: ``fingerprint.json``, ``grid.yaml``,
``records/``, ``logs/``; no checkpoints), renamed into place whole, so a call cut at any
moment returns every record finished before it.

Both directions are one merge (:func:`merge_grid`): the committed folder
(``docs/results/chomsky_gpu``) into the working folder before a call, so the grid skips
what is done; an archive brought back into the committed folder after it
(``python -m lit_seq.campaign import``). A record is taken where the target has none or
only a failed one; an ``ok`` record already there is kept. Folders of two different grids
(their ``fingerprint.json`` differ) are refused: a record of another grid version would
be skipped as if it were this one's. As with the driver's growth rule
(``lit_seq.ablate.folder``), one grid that only gained runs is not another grid: when one
folder's runs include every run of the other with the same digest, they merge, and the
target keeps (or takes) the larger grid's ``fingerprint.json`` and ``grid.yaml``.
"""

from __future__ import annotations

import glob
import io
import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lit_seq.record import RECORDS, read_record

# a grid folder's files (lit_seq.ablate.folder's names; not imported from there, which
# would load Lightning into the campaign's own process for three strings)
FINGERPRINT = "fingerprint.json"
GRID_FILE = "grid.yaml"
LOGS = "logs"


class ArchiveError(ValueError):
    """Two grid folders that cannot be merged, or an archive that is not a grid's."""


@dataclass
class Merged:
    """What a merge did: records taken, ok records the target already had, failed ones."""

    taken: int = 0
    kept: int = 0
    failed: int = 0  # records taken that say the run failed (it runs again next call)


def _ok(path: Path) -> bool | None:
    """Whether a record file says ok (None: missing or unreadable)."""
    try:
        return read_record(path).ok
    except (OSError, ValueError, TypeError):
        return None


def _marker(folder: Path) -> dict | None:
    """The folder's ``fingerprint.json`` (None when it has none)."""
    path = folder / FINGERPRINT
    return json.loads(path.read_text()) if path.exists() else None


def _grown(smaller: dict, larger: dict) -> bool:
    """Whether ``larger``'s grid is ``smaller``'s with runs added: each of ``smaller``'s run
    digests is in ``larger`` unchanged (folders from before digests: never)."""
    small, large = smaller.get("run_digests"), larger.get("run_digests")
    if small is None or large is None:
        return False
    return all(large.get(run_id) == digest for run_id, digest in small.items())


def merge_grid(source: Path, target: Path) -> Merged:
    """Merge the grid folder ``source`` into ``target`` (made if missing); see the module."""
    source, target = Path(source), Path(target)
    theirs, ours = _marker(source), _marker(target)
    if theirs is None:
        if any((source / RECORDS).glob("*.json")):
            raise ArchiveError(f"{source} holds records but no {FINGERPRINT}")
        return Merged()
    take_files = ours is None
    if ours is not None and ours.get("fingerprint") != theirs.get("fingerprint"):
        if _grown(ours, theirs):
            take_files = True  # the source's grid gained runs: the target grows with it
        elif not _grown(theirs, ours):
            raise ArchiveError(
                f"{target} holds grid fingerprint {ours.get('fingerprint')}, {source} "
                f"{theirs.get('fingerprint')}: different versions of the grid (not one that "
                "only gained runs); merge into a new folder, or delete the stale one"
            )
    (target / RECORDS).mkdir(parents=True, exist_ok=True)
    if take_files:
        for name in (FINGERPRINT, GRID_FILE):
            if (source / name).exists():
                shutil.copy2(source / name, target / name)
    merged = Merged()
    for path in sorted((source / RECORDS).glob("*.json")):
        state = _ok(path)
        if state is None:
            continue  # a torn file: the run simply runs again
        mine = target / RECORDS / path.name
        if _ok(mine):
            merged.kept += 1
            continue
        shutil.copy2(path, mine)
        for log in (source / LOGS).glob(f"{glob.escape(path.stem)}.*log"):  # .log, .pack.log
            (target / LOGS).mkdir(exist_ok=True)
            shutil.copy2(log, target / LOGS / log.name)
        merged.taken += 1
        merged.failed += not state
    return merged


def pack_grid(folder: Path, archive: Path) -> int:
    """Write ``folder``'s fingerprint, grid file, records and logs as the tar.gz ``archive``
    (a temp file beside it, then renamed); the number of records in it."""
    folder, archive = Path(folder), Path(archive)
    names = [n for n in (FINGERPRINT, GRID_FILE) if (folder / n).exists()]
    records = sorted((folder / RECORDS).glob("*.json"))
    logs = sorted((folder / LOGS).glob("*.log"))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in [*(folder / n for n in names), *records, *logs]:
            tar.add(path, arcname=str(path.relative_to(folder)))
    archive.parent.mkdir(parents=True, exist_ok=True)
    temp = archive.with_name(f".{archive.name}.tmp")
    temp.write_bytes(buffer.getvalue())
    os.replace(temp, archive)
    return len(records)


def _check_members(tar: tarfile.TarFile) -> None:
    """Plain files and folders under the archive's root only (no links, no ``..``, no
    absolute paths): what :func:`pack_grid` writes, on any Python (tarfile's ``filter=``
    argument is not in every 3.10)."""
    for member in tar.getmembers():
        parts = Path(member.name).parts
        if not (member.isfile() or member.isdir()) or member.name.startswith("/") or ".." in parts:
            raise ArchiveError(
                f"archive member {member.name!r} is not a plain file of a grid folder"
            )


def import_archive(archive: Path, target: Path) -> Merged:
    """Merge the grid folder packed in ``archive`` into ``target`` (a committed folder)."""
    with tempfile.TemporaryDirectory() as scratch:
        try:
            with tarfile.open(archive, "r:gz") as tar:
                _check_members(tar)
                safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                tar.extractall(scratch, **safe)
        except (OSError, tarfile.TarError) as err:
            raise ArchiveError(f"{archive} is not a readable tar.gz: {err}") from None
        if not (Path(scratch) / FINGERPRINT).exists():
            raise ArchiveError(f"{archive} holds no {FINGERPRINT}: not a grid's archive")
        return merge_grid(Path(scratch), target)
