"""Helpers every benchmark section shares: configs, fit arguments, child processes, run
folders, timing, quiet fits."""

import contextlib
import io
import logging
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from lit_seq.util.assets import CONFIG_DIR
from lit_seq.util.devices import accelerator_type

ARCHS = ("transformer", "rnn", "lstm")
# the tasks the speed sections time (those of the matrix grid), whatever else is registered
BENCH_TASKS = ("signal", "parity_sum", "echo", "seq2seq")

# every fit and grid of the benchmark runs without W&B (``lit_seq.fit`` and
# ``lit_seq.ablate`` both read it): no network, no account, nothing uploaded
NO_WANDB = "--wandb.mode=off"
# a smoke-sized fit: 20 steps, validation at 10 and 20 on 2 batches, a 2-batch test
TINY_FIT = (
    "--trainer.max_steps=20",
    "--trainer.val_check_interval=10",
    "--trainer.limit_val_batches=2",
    "--trainer.limit_test_batches=2",
)


def config_path(task: str, arch: str) -> Path:
    """The shipped default config of ``task`` / ``arch``."""
    return CONFIG_DIR / task / f"{arch}.yaml"


def fit_args(*extra: str, config: Path | None = None, run_dir: Path | None = None) -> list[str]:
    """``lit_seq.fit`` arguments as the benchmark runs it: ``config`` (else fit's default),
    W&B off, ``run_dir`` (where given), then ``extra``."""
    args = ["--config", str(config)] if config else []
    args.append(NO_WANDB)
    if run_dir is not None:
        args.append(f"--run_dir={run_dir}")
    return [*args, *extra]


def run_module(
    module: str, *args: str, timeout: float | None = None
) -> subprocess.CompletedProcess:
    """``python -m module args`` in a fresh child process, its output captured as text."""
    cmd = [sys.executable, "-m", module, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def output_tail(proc: subprocess.CompletedProcess, lines: int) -> list[str]:
    """The last ``lines`` lines a child printed, stdout then stderr."""
    return (proc.stdout + proc.stderr).strip().splitlines()[-lines:]


def device_name() -> str:
    """Where lit_seq's ``accelerator: auto`` trains: ``cuda`` when present, else ``cpu``."""
    return accelerator_type()


def sync(device: str | None = None) -> None:
    """Wait for the work queued on ``device`` (default: the benchmark's, :func:`device_name`),
    so a clock read after it measures the work itself; a CPU's work is done when its call
    returns."""
    if (device or device_name()) == "cuda":
        torch.cuda.synchronize()


def work_clock(device: str) -> Callable[[], float]:
    """The clock a step's work on ``device`` is timed by: this process's CPU time on a CPU
    (the load of other processes left out), wall time on a GPU (after a :func:`sync`: the
    device's work is not this process's CPU time)."""
    return time.process_time if device == "cpu" else time.perf_counter


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
