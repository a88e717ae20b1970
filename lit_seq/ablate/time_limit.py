"""A grid stopped before its end, resumably: by ``--time-limit SECONDS`` or by SIGTERM.

A cluster job ends at its time limit (SLURM sends SIGTERM, then SIGKILL), a preemptible
machine gets SIGTERM before it goes; either way the grid must stop with every finished run
recorded, so that the same command, in the next job or on the next machine, trains only
what is left. While the grid trains (:func:`stopping`), SIGTERM and the end of the time
limit (SIGALRM) raise :class:`GridStopped` in the driver's main thread; the executors treat
it as they treat Ctrl-C (the local workers are killed, queued Ray tasks cancelled), and
the records already written stay, since each is written whole or not at all. A run still
training at that moment has no record: it starts over on the next call, so a limit shorter
than one run (or one population) never finishes the grid.
"""

import contextlib
import math
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from lit_seq.ablate.common import BadGrid

TIME_LIMIT_EXIT = 124  # as coreutils' ``timeout``: the budget ran out, no run failed for it
SIGTERM_EXIT = 128 + signal.SIGTERM  # 143, as a fit stopped by SIGTERM (lit_seq.fit.signals)


class GridStopped(BaseException):
    """The grid stopped at its time limit or by SIGTERM. A BaseException, as KeyboardInterrupt
    is: no ``except Exception`` on its way out takes it for one run's failure."""

    def __init__(self, why: str, code: int) -> None:
        super().__init__(why)
        self.why, self.code = why, code

    def line(self, done: int, runs: int, out_dir: Path) -> str:
        """What the command says as it stops: why, how many runs are done, how to go on."""
        return (
            f"{self.why}: {done} of {runs} runs done, their records in {out_dir}; run the same "
            "command to resume"
        )


def parse_time_limit(text: str) -> float:
    """``--time-limit``'s value: seconds of wall clock, a finite number > 0; else BadGrid
    whose message names the flag, the value and what is allowed."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise BadGrid(
            f"--time-limit={text}: must be a number of seconds > 0 (e.g. 3300 for a job of one "
            "hour: a bit less than the job's limit)"
        )
    return seconds


@contextlib.contextmanager
def stopping(limit: float | None, started: float) -> Iterator[None]:
    """While the block runs, SIGTERM and, when a ``limit`` is given, the end of ``limit``
    seconds counted from ``started`` (a ``time.monotonic()``: the command's start) raise
    :class:`GridStopped`, at once if they are already spent. Main thread only, as every
    signal handler (elsewhere SIGTERM keeps its own handler); the previous handlers come back
    when the block ends."""

    def on_term(signum, frame) -> None:
        raise GridStopped("stopped by SIGTERM", SIGTERM_EXIT)

    def on_alarm(signum, frame) -> None:
        raise GridStopped(f"time limit of {limit:g} s reached", TIME_LIMIT_EXIT)

    if threading.current_thread() is not threading.main_thread():  # a driver called in-process
        if limit is not None:
            raise BadGrid("--time-limit needs the driver in the main thread (signals)")
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGALRM)}
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGALRM, on_alarm)
    try:
        if limit is not None:
            left = limit - (time.monotonic() - started)
            if left <= 0:  # the grid's checks took the whole budget
                on_alarm(signal.SIGALRM, None)
            signal.setitimer(signal.ITIMER_REAL, left)
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
