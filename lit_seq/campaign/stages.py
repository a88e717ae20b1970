"""The campaign's stages, each a limited child process, and the summary they fill in.

Stage 1 (at most :data:`STAGE1_S` of a call): ``tests``, the GPU-marked tests (at most
:data:`TESTS_S`), then ``speed``, the population against solo rows (``campaign.speed``)
for what is left of it. Stage 2, ``chomsky``: the ``chomsky_gpu`` grid for the rest of the
call's budget less :data:`MARGIN_S` (``campaign.grid_call``); in the tiny mode, the tiny
grid's stop-and-resume check instead (``campaign.tiny``).

Files under ``$OUT`` (a device call brings back at most 8): ``campaign.log`` (this log),
``gpu_tests.log``, ``speed.log``, ``speed.jsonl``, ``chomsky_gpu.log``,
``chomsky_gpu.tar.gz`` (the grid's records) and ``summary.json``, rewritten after every
stage so that a call cut short still says what it finished.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from lit_seq.campaign.archive import ArchiveError
from lit_seq.campaign.grid_call import GridCall, run_call
from lit_seq.campaign.limited import Outcome, python_command, run_limited
from lit_seq.campaign.tiny import describe, resume_check, tiny_grid

STAGE1_S = 180.0  # tests and speed rows together: the issue's <= 3 minutes
TESTS_S = 100.0  # the GPU tests took 48 s on an H200 (2026-12-04), collection included
MARGIN_S = 20.0  # after the grid: its archive, the summary, the call's own exit
MIN_GRID_S = 60.0  # less than this left: the grid waits for the next call
STAGES = ("tests", "speed", "chomsky")
GRID_NAME = "chomsky_gpu"


@dataclass
class Campaign:
    """One call of the campaign: what to run, where, and for how long."""

    out: Path
    work: Path
    grid: Path
    committed: Path
    budget_s: float
    stages: tuple[str, ...] = STAGES
    tiny: bool = False
    workers: int = 4
    threads: int = 1
    compile_mode: str | None = "auto"
    summary: dict = field(default_factory=dict)
    start: float = field(default_factory=time.monotonic)

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def say(self, message: str) -> None:
        """Print ``message`` and append it to ``campaign.log`` (streamed back)."""
        line = f"[campaign {self.elapsed():5.0f} s] {message}"
        print(line, flush=True)
        with open(self.out / "campaign.log", "a") as log:
            log.write(line + "\n")

    def record(self, stage: str, result: dict) -> None:
        """Keep ``result`` under ``stage`` and rewrite ``summary.json`` at once."""
        self.summary[stage] = result
        (self.out / "summary.json").write_text(json.dumps(self.summary, indent=1) + "\n")


def _outcome(outcome: Outcome) -> dict:
    return {"code": outcome.code, "seconds": outcome.seconds, "stopped": outcome.stopped}


def run_tests(c: Campaign) -> bool:
    """The GPU-marked tests (on a CPU, every one skips: the tiny mode runs test_gpu.py's)."""
    where = ["tests/test_gpu.py"] if c.tiny else []
    command = python_command("pytest", "-m", "gpu", "-q", "-n", "0", "-p", "no:cacheprovider")
    outcome = run_limited([*command, *where], c.out / "gpu_tests.log", min(TESTS_S, STAGE1_S))
    lines = (c.out / "gpu_tests.log").read_text().strip().splitlines()
    tail = [line for line in lines if not line.startswith("[campaign]")][-2:]  # pytest's verdict
    passed = outcome.code in (0, 5)  # 5: no GPU-marked test collected, none failed
    c.record("tests", {**_outcome(outcome), "passed": passed, "tail": tail})
    c.say(f"GPU tests: {'passed' if passed else 'FAILED'} ({tail[-1] if tail else 'no output'})")
    return passed


def run_speed(c: Campaign) -> bool:
    """Population against solo rows until stage 1's time is spent."""
    left = STAGE1_S - c.elapsed()
    if left < 10:
        c.record("speed", {"skipped": f"stage 1's {STAGE1_S:.0f} s spent"})
        c.say("speed rows: skipped, stage 1's time is spent")
        return True
    rows_file = c.out / "speed.jsonl"
    flags = ["--out", str(rows_file), *(["--tiny"] if c.tiny else [])]
    outcome = run_limited(
        python_command("lit_seq.campaign.speed", *flags), c.out / "speed.log", left
    )
    rows = (
        [json.loads(line) for line in rows_file.read_text().splitlines()]
        if rows_file.exists()
        else []
    )
    errors = [r for r in rows if "error" in r]
    c.record("speed", {**_outcome(outcome), "rows": len(rows), "errors": len(errors)})
    c.say(
        f"speed rows: {len(rows)} ({len(errors)} with an error){' - cut at its limit' if outcome.stopped else ''}"
    )
    for row in rows:
        c.say(f"  {json.dumps(row)}")
    return bool(rows)  # a row's own error is in it (and in speed.log), not the stage's


def run_chomsky(c: Campaign) -> bool:
    """The grid for the rest of the call (or, tiny, the stop-and-resume check)."""
    left = c.budget_s - c.elapsed() - MARGIN_S
    if left < MIN_GRID_S:
        c.record("chomsky", {"skipped": f"{left:.0f} s left of the call's budget"})
        c.say(f"chomsky grid: skipped, {left:.0f} s left (needs {MIN_GRID_S:.0f})")
        return True
    grid = tiny_grid(c.grid, c.work) if c.tiny else c.grid
    call = GridCall(
        grid=grid,
        work=c.work / GRID_NAME,
        out=c.out,
        name=GRID_NAME,
        committed=c.committed,
        workers=c.workers,
        threads=c.threads,
        compile_mode=c.compile_mode,
    )
    c.say(f"chomsky grid {grid} for at most {left:.0f} s, resuming from {c.committed}")
    try:
        if c.tiny:
            check = resume_check(call, left / 2)
            c.record("chomsky", check)
            c.say(describe(check))
            return check["passed"]
        result = run_call(call, left).to_json()
    except ArchiveError as err:  # the committed records are another grid version's
        c.record("chomsky", {"error": str(err)})
        c.say(f"chomsky grid: not run: {err}")
        return False
    c.record("chomsky", result)
    c.say(
        f"chomsky grid: {result['ok_after']}/{result['runs']} runs ok ({result['ok_after'] - result['ok_before']} "
        f"this call, {result['seeded']} from {c.committed}), {result['failed']} failed, "
        f"{len(result['rows_done'])} rows complete, exit {result['code']}"
        f"{' (stopped at the limit: resumable)' if result['stopped'] else ''}; "
        f"records in {c.out / (GRID_NAME + '.tar.gz')}"
    )
    return result["code"] == 0 or (result["stopped"] == "limit" and result["failed"] == 0)


RUNNERS = {"tests": run_tests, "speed": run_speed, "chomsky": run_chomsky}
