"""The local pool keeps its workers across a grid's phases: a worker that dies while it waits
between two phases (killed, out of memory) is replaced when the next phase has runs for it,
and no run is lost or recorded failed for it."""

import contextlib
import multiprocessing as mp
import os
import signal

import pytest

from lit_seq.ablate.jobs import GridJob
from lit_seq.ablate.local_pool import local_executor
from lit_seq.record import read_records
from tests.helpers import echo_rnn_runs


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail instead of hanging: a pool that never replaced its worker would wait forever."""

    def expire(signum, frame):
        pytest.fail(f"no record after {seconds} s: the dead worker was not replaced")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_worker_killed_while_idle_between_phases_is_replaced(tmp_path):
    first, second = echo_rnn_runs([0, 1], tiny=True)
    job = GridJob(tmp_path / "out", "g", "off", workers=1)
    started, records = [], []

    def on_start(run, worker):
        started.append((run.seed, worker))

    with deadline(300), local_executor(job) as execute:
        execute([first], job, on_start, records.append)  # phase 1: the worker stays up
        [worker] = mp.active_children()
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(timeout=10)
        assert worker.exitcode == -signal.SIGKILL
        execute([second], job, on_start, records.append)  # phase 2: a new worker takes it
        [replacement] = mp.active_children()
        assert replacement.pid != worker.pid
    assert [(r.run_id, r.status) for r in records] == [(first.run_id, "ok"), (second.run_id, "ok")]
    assert [seed for seed, _ in started] == [0, 1]  # each run started once
    assert {r.status for r in read_records(tmp_path / "out").values()} == {"ok"}
    assert mp.active_children() == []  # the block's end stopped the pool
