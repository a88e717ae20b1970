"""Helpers every benchmark section shares: configs, run folders, timing, quiet fits."""

import contextlib
import io
import logging
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from lit_seq.fit import CONFIG_DIR

REPO = CONFIG_DIR.parent
ARCHS = ("transformer", "rnn", "lstm")


def config_path(task: str, arch: str) -> Path:
    """The shipped default config of ``task`` / ``arch``."""
    return CONFIG_DIR / task / f"{arch}.yaml"


def device_name() -> str:
    """Where lit_seq's ``accelerator: auto`` trains: ``cuda`` when present, else ``cpu``."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def sync() -> None:
    """Wait for queued GPU work, so a clock read after it measures the work itself."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def alternating(names: list[str], repeats: int) -> Iterator[tuple[int, str]]:
    """(round, name) for ``repeats`` rounds, the order reversed every other round (AB BA AB).

    Reversing cancels a steady drift (machine warming up, other jobs starting) that a
    fixed order would charge to whichever side always runs second.
    """
    for r in range(repeats):
        for name in names if r % 2 == 0 else reversed(names):
            yield r, name


class _TerminalSink(io.TextIOBase):
    """A stdout that says it is a terminal and throws the text away.

    Rich only draws live progress on a terminal; writing the frames here keeps their
    cost in the measurement (what a user at a terminal pays) without printing them.
    """

    def isatty(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)


@contextlib.contextmanager
def quiet_fit() -> Iterator[None]:
    """Run a fit as a terminal user would, minus its console text in the benchmark's output.

    Progress bars still render (to a terminal-like sink); Lightning's info lines ("GPU
    available", model summary) and warnings about tiny epochs are silenced.
    """
    loggers = [logging.getLogger(name) for name in ("lightning.pytorch", "lightning.fabric")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(_TerminalSink()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.seconds`` (GPU work included)."""

    def __enter__(self) -> "Stopwatch":
        sync()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        sync()
        self.seconds = time.perf_counter() - self._start


def log(message: str) -> None:
    """Progress of the benchmark itself, on stderr so that stdout keeps only the tables."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def run_dir_factory(root: Path) -> Callable[[str], Path]:
    """Fresh, numbered run folders under ``root``: ``next_dir('signal-rnn')``."""
    counter = iter(range(1_000_000))

    def next_dir(label: str) -> Path:
        return root / f"{label}-{next(counter):03d}"

    return next_dir
