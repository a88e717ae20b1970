"""A child process under a time limit, its output streamed into a log as it runs.

A device call returns only what is on disk under ``$OUT`` when it ends, and a call cut at
its limit returns nothing a pipeline held back; so every stage of the campaign is a child
whose stdout and stderr go straight into its log file (unbuffered), and whose time limit
is the campaign's own, well inside the call's. At the limit the child gets SIGTERM (a grid
driver dies on it, its workers with it, and every run that finished has its record: the
grid resumes from there), then SIGKILL after :data:`GRACE_S` if it lingers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

GRACE_S = 15.0  # after SIGTERM, before SIGKILL: a pytest or a bench child ends at once
TICK_S = 1.0  # how often the parent checks the clock and calls ``on_tick``


@dataclass
class Outcome:
    """How a limited child ended: its exit code (``None``: killed), its seconds, and why."""

    code: int | None
    seconds: float
    stopped: str = ""  # "" ended by itself; "limit" or "condition": the parent stopped it


def python_command(module: str, *args: str) -> list[str]:
    """``python -m module args`` with this interpreter (the device's, with its torch)."""
    return [sys.executable, "-m", module, *args]


def run_limited(
    command: list[str],
    log: Path,
    limit_s: float,
    on_tick: Callable[[], None] | None = None,
    stop_when: Callable[[], bool] | None = None,
    group: bool = True,
    tick_s: float = TICK_S,
) -> Outcome:
    """Run ``command`` with its output appended to ``log``, stopped after ``limit_s`` seconds
    or as soon as ``stop_when()`` is true (checked every ``tick_s``, default
    :data:`TICK_S`); ``on_tick()`` runs as often and once
    more after the child ends (a grid's records mirrored as they arrive).

    ``group``: the stop signal goes to the child's whole process group (pytest and its
    subprocesses); else to the child alone (a grid driver, whose workers die with it).
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log, "a", buffering=1) as sink:
        sink.write(f"$ {' '.join(command)}\n")
        child = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        stopped = ""
        while child.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=tick_s)
            if on_tick is not None:
                on_tick()
            if child.poll() is not None:
                break
            if time.monotonic() - start >= limit_s:
                stopped = "limit"
            elif stop_when is not None and stop_when():
                stopped = "condition"
            if stopped:
                _stop(child, group)
                break
        code = child.wait()
        seconds = time.monotonic() - start
        sink.write(
            f"[campaign] exit {code} after {seconds:.0f} s{f' ({stopped})' if stopped else ''}\n"
        )
    if on_tick is not None:
        on_tick()
    return Outcome(None if code < 0 else code, round(seconds, 1), stopped)


def _stop(child: subprocess.Popen, group: bool) -> None:
    """SIGTERM, then SIGKILL after :data:`GRACE_S` (to the group when ``group``)."""

    def send(signum: int) -> None:
        try:
            if group:
                os.killpg(child.pid, signum)  # start_new_session: its group id is its pid
            else:
                child.send_signal(signum)
        except ProcessLookupError:
            pass

    send(signal.SIGTERM)
    try:
        child.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        child.wait()
    if not group:
        # a driver's workers follow it (PR_SET_PDEATHSIG); whatever is left of its group too
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
