"""One call's share of a resumable grid: seed, run under a limit, mirror, count.

1. The committed records (``docs/results/chomsky_gpu``) are merged into the working grid
   folder (``archive.merge_grid``), so ``lit_seq.ablate`` skips every run already done: its
   resume rule (a run whose record says ``ok`` is skipped) and its fingerprint rule (a
   folder of another grid version is refused, exit 2) do the rest.
2. The grid runs as populations (``--pack on``), W&B off, stopped at the call's limit
   (SIGTERM to the driver: its workers die with it, every finished run keeps its record).
   ``--compile`` is passed as the call says (``auto``: compiled on a GPU).
3. Every time a record lands, the working folder's records are packed into the archive
   under ``$OUT`` (``archive.pack_grid``): a call cut at any moment brings them back.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lit_seq.campaign.archive import FINGERPRINT, GRID_FILE, merge_grid, pack_grid
from lit_seq.campaign.limited import TICK_S, python_command, run_limited
from lit_seq.record import RECORDS, read_records


@dataclass
class GridCall:
    """What to run: the grid, where it works, what it resumes from, where it reports."""

    grid: Path
    work: Path  # the grid's --out on this machine (checkpoints stay here)
    out: Path  # $OUT: the archive and the log
    name: str  # the archive is ``<name>.tar.gz``, the log ``<name>.log``
    committed: Path | None = None  # records from earlier calls, merged in first
    workers: int = 4
    threads: int = 1
    compile_mode: str | None = None  # lit_seq.ablate's --compile (None: its default)
    stop_after: int | None = None  # stop once this many new runs are ok (CI's resume check)


@dataclass
class CallResult:
    """What one call did: runs ok before and after, the runs in all, rows complete."""

    code: int | None
    seconds: float
    stopped: str
    seeded: int  # ok records merged in from the committed folder
    ok_before: int
    ok_after: int
    failed: int
    runs: int  # in the whole grid (its fingerprint's count)
    rows_done: list[str] = field(default_factory=list)  # cells whose runs are all ok
    compile_flag: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def _snapshot(folder: Path) -> tuple:
    return tuple(sorted((p.name, p.stat().st_mtime_ns) for p in (folder / RECORDS).glob("*.json")))


def _ok_count(folder: Path) -> int:
    return sum(r.ok for r in read_records(folder).values())


def _planned_runs(folder: Path) -> int:
    from lit_seq.util.io import read_json

    path = folder / FINGERPRINT
    return int(read_json(path).get("runs", 0)) if path.exists() else 0


def rows_done(folder: Path) -> list[str]:
    """The cells (a row: one task, arch and rate) whose every planned run is ok."""
    from lit_seq.util.safe_yaml import load_yaml

    grid_file = folder / GRID_FILE
    if not grid_file.exists():
        return []
    listing = load_yaml(grid_file.read_text(), str(grid_file))["runs"]
    planned = Counter(r["run_id"].rsplit("__seed=", 1)[0] for r in listing)
    ok = Counter(r.cell for r in read_records(folder).values() if r.ok)
    return [cell for cell, n in planned.items() if ok[cell] >= n]


def run_call(call: GridCall, limit_s: float) -> CallResult:
    """Seed, run and mirror one call of the grid (see the module docstring)."""
    seeded = 0
    if call.committed is not None and call.committed.exists():
        seeded = merge_grid(call.committed, call.work).taken
    archive = call.out / f"{call.name}.tar.gz"
    ok_before = _ok_count(call.work) if (call.work / RECORDS).exists() else 0
    flags = ["--pack", "on", "--wandb", "off", "--workers", str(call.workers)]
    flags += ["--threads", str(call.threads), "--out", str(call.work)]
    compile_flag = f"--compile={call.compile_mode}" if call.compile_mode is not None else ""
    flags += [compile_flag] if compile_flag else []
    last = [None]

    def mirror() -> None:  # rewrite the archive whenever the records changed
        if not (call.work / RECORDS).exists():
            return
        now = _snapshot(call.work)
        if now != last[0]:
            pack_grid(call.work, archive)
            last[0] = now

    def enough() -> bool:
        return call.stop_after is not None and _ok_count(call.work) - ok_before >= call.stop_after

    outcome = run_limited(
        python_command("lit_seq.ablate", str(call.grid), *flags),
        call.out / f"{call.name}.log",
        limit_s,
        on_tick=mirror,
        stop_when=enough,
        group=False,  # SIGTERM to the driver alone: the grid's own resumable stop
        # a stop after N runs (CI's resume check) must land before the next population ends
        tick_s=0.1 if call.stop_after is not None else TICK_S,
    )
    records = read_records(call.work) if (call.work / RECORDS).exists() else {}
    return CallResult(
        code=outcome.code,
        seconds=outcome.seconds,
        stopped=outcome.stopped,
        seeded=seeded,
        ok_before=ok_before,
        ok_after=sum(r.ok for r in records.values()),
        failed=sum(not r.ok for r in records.values()),
        runs=_planned_runs(call.work),
        rows_done=rows_done(call.work),
        compile_flag=compile_flag,
    )
