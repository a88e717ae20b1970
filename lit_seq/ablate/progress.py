"""The driver's view of a grid while it runs: a rich progress bar, or plain lines.

On a terminal: a bar over the whole grid (ok / running / failed, elapsed, ETA) with one line
printed above it per finished run. The bar also counts the steps of the runs still running,
as each one's ``metrics.csv`` says (:func:`run_progress`), so its ETA moves within a run.
Elsewhere (CI logs, pipes): just those lines. Every line fits in :data:`WIDTH` columns.
"""

import re
import sys
import threading
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from lit_seq.ablate.folder import run_dir
from lit_seq.ablate.spec import Run
from lit_seq.record import RunRecord
from lit_seq.util.console import output_console
from lit_seq.util.safe_yaml import YamlError, load_yaml

WIDTH = 100  # columns of a line the driver prints: a run's line wraps to stay within them
POLL_S = 2.0  # how often the bar reads the step of each running run (a file tail each)
TAIL_BYTES = 4096  # the end of a metrics.csv holds its last row


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


def wrap(text: str, width: int = WIDTH, indent: int = 4) -> list[str]:
    """``text`` as lines of at most ``width`` columns, the later ones indented by ``indent``:
    broken at spaces, and inside a run id after a ``__`` (``block__lr=0.1__seed=0``)."""
    pieces = []  # (separator before it, piece)
    for sep, word in re.findall(r"(\s*)(\S+)", text):
        parts = re.findall(r".+?__|.+$", word)  # a run id's parts, each with its "__"
        pieces += [(sep, parts[0]), *(("", p) for p in parts[1:])]
    lines, line = [], ""
    for sep, piece in pieces:
        if line and len(line) + len(sep) + len(piece) > width:
            lines.append(line)
            line = " " * indent
            sep = ""
        line += sep + piece
        while len(line) > width:  # one piece longer than a line: cut it
            lines.append(line[:width])
            line = " " * indent + line[width:]
    return [*lines, line] if line.strip() else lines


def run_progress(folder: Path) -> tuple[int, int] | None:
    """(last step written, max_steps) of the fit in run folder ``folder``, None until known.

    The step is the last row of its ``metrics.csv`` (written every ``log_every_n_steps``,
    on disk at each checkpoint at the latest); ``max_steps`` is in its ``config.yaml``.
    """
    try:
        config = load_yaml((folder / "config.yaml").read_text(), "config.yaml")
        max_steps = int(config["trainer"]["max_steps"])
        with open(folder / "metrics.csv", "rb") as log:
            header = log.readline().decode().strip().split(",")
            size = log.seek(0, 2)
            log.seek(max(size - TAIL_BYTES, 0))
            rows = log.read().decode(errors="replace").strip().splitlines()
    except (OSError, YamlError, KeyError, TypeError, ValueError):
        return None
    for row in reversed(rows):
        values = row.split(",")
        if "step" in header and len(values) == len(header) and values[header.index("step")]:
            try:
                return int(float(values[header.index("step")])), max_steps
            except ValueError:
                continue
    return None


class GridProgress:
    """Counts and display of a grid run; ``done_before`` runs were finished by earlier calls.

    ``out_dir``: the grid folder, where the bar reads the steps of the running runs.
    """

    def __init__(
        self,
        total: int,
        done_before: int,
        console: Console | None = None,
        out_dir: Path | None = None,
    ) -> None:
        self.total, self.ok, self.failed = total, done_before, 0
        self.running: set[str] = set()
        self.steps: dict[str, tuple[int, int]] = {}  # run id -> (step, max_steps)
        self.console = console or output_console()
        self.live = sys.stdout.isatty() and self.console.is_terminal
        self.out_dir = out_dir
        self._progress: Progress | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()

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
            if self.out_dir is not None:
                threading.Thread(target=self._poll, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._progress is not None:
            self._progress.stop()

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            self.read_steps()

    def read_steps(self) -> None:
        """Read the step of each running run from its folder (see :func:`run_progress`)."""
        for run_id in list(self.running):
            found = run_progress(run_dir(self.out_dir, run_id))
            with self._lock:
                if found is not None and run_id in self.running:
                    self.steps[run_id] = found
        self._refresh()

    def _counts(self) -> str:
        with self._lock:
            steps = [f"{s}/{m}" for s, m in self.steps.values()]
        at = f" (steps {', '.join(steps[:3])}{', ...' if len(steps) > 3 else ''})" if steps else ""
        return f"ok {self.ok}  running {len(self.running)}{at}  failed {self.failed}"

    def completed(self) -> float:
        """Finished runs, plus the share of its steps each running run has taken."""
        with self._lock:
            share = sum(min(s / m, 1.0) for s, m in self.steps.values() if m > 0)
            return self.ok + self.failed + share

    def _refresh(self) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=self.completed(), counts=self._counts())

    def add(self, n: int) -> None:
        """``n`` runs more than counted at the start: values a ``select:`` adds past its sweep."""
        self.total += n
        if self._progress is not None:
            self._progress.update(self._task, total=self.total)

    def start(self, run: Run, worker: str) -> None:
        self.running.add(run.run_id)
        self._refresh()

    def finish(self, record: RunRecord) -> None:
        with self._lock:
            self.running.discard(record.run_id)
            self.steps.pop(record.run_id, None)
        ok = record.ok
        self.ok += ok
        self.failed += not ok
        status = "ok    " if ok else "FAILED"
        head = f"[{self.ok + self.failed:>{len(str(self.total))}}/{self.total}] "
        lines = wrap(f"{head}{status} {describe(record)}", indent=len(head) + 2)
        first = Text(lines[0])
        first.stylize("green" if ok else "red", len(head), len(head) + len(status.strip()))
        for line in [first, *lines[1:]]:
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)
        self._refresh()
