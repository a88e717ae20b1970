"""The driver's view of a grid while it runs: a rich progress bar, or plain lines.

On a terminal: a bar over the whole grid (ok / running / failed, elapsed, ETA) with one line
printed above it per finished run. Elsewhere (CI logs, pipes): just those lines.
"""

import sys

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from lit_seq.ablate.spec import Run
from lit_seq.record import RunRecord


def describe(record: RunRecord) -> str:
    """One line for a finished run: main metric at each test length (``acc_ood``, the
    positions past the training length, where a longer set has it), or the error."""
    if not record.ok:
        return f"{record.run_id}  {record.error}"
    metric, metrics = record.main_metric, record.metrics
    values = []
    for key in metrics:
        prefix, _, name = key.partition("/")
        ood = f"{prefix}/acc_ood" in metrics
        if name == metric and not (ood and metric == "acc"):
            values.append(f"{prefix.removeprefix('test_')} {metrics[key]:.3f}")
        if name == "acc_ood":
            values.append(f"{prefix.removeprefix('test_')} ood {metrics[key]:.3f}")
    line = f"{record.run_id}  {metric}: {', '.join(values)}  ({record.wall_seconds:.1f} s)"
    if record.target_reached is not None:
        line += f"  target {'at ' + str(record.target_step) if record.target_reached else 'missed'}"
    return f"{line}  warning: {record.warning}" if record.warning else line


class GridProgress:
    """Counts and display of a grid run; ``done_before`` runs were finished by earlier calls."""

    def __init__(self, total: int, done_before: int, console: Console | None = None) -> None:
        self.total, self.ok, self.failed = total, done_before, 0
        self.running: set[str] = set()
        self.console = console or Console()
        self.live = sys.stdout.isatty() and self.console.is_terminal
        self._progress: Progress | None = None

    def __enter__(self) -> "GridProgress":
        if self.live:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]grid"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                "grid", total=self.total, completed=self.ok, counts=self._counts()
            )
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()

    def _counts(self) -> str:
        return f"ok {self.ok}  running {len(self.running)}  failed {self.failed}"

    def _refresh(self) -> None:
        if self._progress is not None:
            done = self.ok + self.failed
            self._progress.update(self._task, completed=done, counts=self._counts())

    def start(self, run: Run, worker: str) -> None:
        self.running.add(run.run_id)
        self._refresh()

    def finish(self, record: RunRecord) -> None:
        self.running.discard(record.run_id)
        ok = record.ok
        self.ok += ok
        self.failed += not ok
        status = "[green]ok[/]    " if ok else "[red]FAILED[/]"
        width = len(str(self.total))
        line = (
            f"[{self.ok + self.failed:>{width}}/{self.total}] {status} {escape(describe(record))}"
        )
        self.console.print(line, highlight=False, markup=True, soft_wrap=True)
        self._refresh()
