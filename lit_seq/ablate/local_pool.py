"""The ``local`` executor: a pool of long-lived worker processes on this machine.

Each worker is spawned (not forked: fork + CUDA or fork + threads is unsafe), pays the
Lightning import once, then trains what the driver sends it one at a time, a run or a pack
of runs trained together (``lit_seq.ablate.packing``), and sends back each record after
writing it (``run_one.run_and_record``, ``run_one.run_pack_and_record``), a pack's as each
member finishes. Each worker's torch uses ``job.threads`` threads (``--threads``, never
derived from the worker count); with GPUs, worker i gets GPU i % n_gpus. A worker that dies
(kill -9, out of memory) fails the runs it held that have no record yet and is replaced;
the grid goes on.

One grid keeps its workers across its phases (:func:`local_executor`: the selection runs,
each step of a sweep's extension, then the runs at the chosen values), so a worker's
start-up (the Lightning import, ~3.5 s here) is paid once a grid, not once a phase.
"""

import contextlib
import ctypes
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait

from lit_seq.ablate.jobs import Executor, GridJob, OnRecord, OnStart
from lit_seq.ablate.packing import packs
from lit_seq.ablate.run_one import failed_record, run_and_record, run_pack_and_record
from lit_seq.ablate.spec import Run
from lit_seq.record import RunRecord, read_record, record_path, write_record
from lit_seq.util.devices import accelerator_type, worker_gpu
from lit_seq.util.runtime import (
    QUIET_OPENMP,
    disk_full,
    exit_now,
    gpu_devices,
    quiet_libraries,
    use_threads,
)

# Workers that die before taking any run consume nothing, so a machine where workers cannot
# start at all (a broken install, no memory) would restart them forever. After this many
# such deaths per worker slot in a row, the runs still waiting are recorded failed instead.
MAX_IDLE_DEATHS_PER_SLOT = 2


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker process needs to know, handed over when it is spawned."""

    index: int
    conn: Connection  # the worker's end of its pipe to the driver
    parent_pid: int
    threads: int
    cuda_device: str | None
    job: GridJob


def _die_with_parent(parent_pid: int) -> None:
    """Make sure this worker never outlives a killed driver (kill -9 included)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(1)  # the driver died before the line above took effect

    def watch() -> None:  # fallback where prctl does not exist
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def worker_main(spec: WorkerSpec) -> None:
    """A worker process: take runs (a list: one run, or a pack) from the pipe until ``None``,
    send back their records."""
    quiet_libraries()
    _die_with_parent(spec.parent_pid)
    # Ctrl-C is the driver's to handle: it kills the workers, and their runs rerun next time
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if spec.cuda_device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = spec.cuda_device  # before CUDA is first touched
    use_threads(spec.threads)
    import lit_seq.fit  # noqa: F401 - pay the Lightning import once, not once per run

    name = f"local-{spec.index}:{os.getpid()}"
    while True:
        try:
            runs = spec.conn.recv()
        except (EOFError, OSError):  # the driver is gone
            exit_now(0)
        if runs is None:  # the driver's "stop": every record sent is on disk
            exit_now(0)
        try:
            if len(runs) == 1:
                spec.conn.send(run_and_record(runs[0], spec.job, worker=name))
            else:
                run_pack_and_record(runs, spec.job, name, spec.conn.send)
        except Exception:  # a record could not be written: the driver records the run lost
            if not disk_full(spec.job.out_dir):  # a full disk is the driver's one line to say
                traceback.print_exc()
            os._exit(1)


@dataclass
class _Slot:
    """One worker of the pool and the runs it holds that have no record yet (none: idle)."""

    process: mp.process.BaseProcess
    conn: Connection  # the driver's end of the worker's pipe
    runs: list[Run] = field(default_factory=list)


class LocalPool:
    """``job.workers`` worker processes that run what :meth:`run` is given, call after call,
    until :meth:`close`; see :func:`local_executor`."""

    def __init__(self, job: GridJob):
        self.job = job
        self.ctx = mp.get_context("spawn")
        self.devices = gpu_devices()
        self.slots: list[_Slot | None] = []
        self.pending: deque[list[Run]] = deque()  # what a worker takes at a time: a run or a pack
        self.on_start: OnStart  # the current call's callbacks: set by run()
        self.on_record: OnRecord
        self.idle_deaths = 0  # in a row: reset by every record that comes back

    # -- the loop ---------------------------------------------------------------------------

    def run(self, runs: list[list[Run]], on_start: OnStart, on_record: OnRecord) -> None:
        """Feed ``runs`` to the workers (started as needed: at most ``job.workers``, at most
        one a run) until every run has a record. Any exception (Ctrl-C) kills the workers."""
        self.pending, self.on_start, self.on_record = deque(runs), on_start, on_record
        finished = False
        try:
            wanted = max(1, min(self.job.workers, len(runs)))
            self.slots += [None] * (wanted - len(self.slots))
            for i in range(wanted):
                if self.slots[i] is None:
                    self._start(i)
            while self.pending or any(s and s.runs for s in self.slots):
                self._hand_out()
                self._wait()
                for i, slot in enumerate(self.slots):
                    if slot is not None:
                        self._collect(i, slot)
            finished = True
        finally:
            if not finished:
                self.close(graceful=False)

    def close(self, graceful: bool = True) -> None:
        """Stop every worker: ask idle ones to exit, kill the rest (all, if not graceful)."""
        self._stop(graceful)
        self.slots = []

    def _start(self, i: int) -> None:
        ours, theirs = self.ctx.Pipe()
        gpu = worker_gpu(i, self.devices)
        spec = WorkerSpec(i, theirs, os.getpid(), self.job.threads, gpu, self.job)
        process = self.ctx.Process(
            target=worker_main, args=(spec,), name=f"lit_seq-worker-{i}", daemon=True
        )
        process.start()
        theirs.close()  # so a dead worker reads as EOF on our end
        self.slots[i] = _Slot(process, ours)

    def _hand_out(self) -> None:
        """Give a waiting run (or pack) to every idle, live worker."""
        for slot in self.slots:
            if slot is None or slot.runs or not self.pending:
                continue
            if not slot.process.is_alive():
                continue  # _collect replaces it
            runs = self.pending.popleft()
            try:
                slot.conn.send(runs)
            except OSError:  # died just now: the runs wait for the replacement
                self.pending.appendleft(runs)
                continue
            slot.runs = list(runs)
            for run in runs:
                self.on_start(run, slot.process.name)

    def _wait(self) -> None:
        """Sleep until a busy worker sends something or any worker ends (at most 1 s)."""
        busy = [s.conn for s in self.slots if s and s.runs]
        wait(busy + [s.process.sentinel for s in self.slots if s], timeout=1.0)

    def _collect(self, i: int, slot: _Slot) -> None:
        """Take the records ``slot`` sent, or deal with its worker's death."""
        while slot.runs and slot.conn.poll():
            try:
                record = slot.conn.recv()
            except Exception:  # EOF or a torn message: it died, handled below
                break
            slot.runs = [r for r in slot.runs if r.run_id != record.run_id]
            self.idle_deaths = 0
            self.on_record(record)
        if not slot.process.is_alive():
            self._replace(i, slot)

    def _replace(self, i: int, slot: _Slot) -> None:
        """A worker died: fail its runs (or count an idle death), start another if needed."""
        exitcode = slot.process.exitcode
        for run in slot.runs:
            self.on_record(self._lost_run(run, exitcode))
        if not slot.runs:
            self.idle_deaths += 1
        slot.runs = []
        slot.conn.close()
        self.slots[i] = None
        if self.idle_deaths > MAX_IDLE_DEATHS_PER_SLOT * len(self.slots):
            while self.pending:  # workers cannot start here: fail what is left, once
                for run in self.pending.popleft():
                    self.on_record(self._lost_run(run, exitcode))
        if self.pending:
            self._start(i)

    def _lost_run(self, run: Run, exitcode: int | None) -> RunRecord:
        """The record of a run whose worker died: the one it wrote, if it got that far."""
        try:  # only runs without an ok record are ever started, so an ok one here is fresh
            written = read_record(record_path(self.job.out_dir, run.run_id))
            if written.ok:
                return written
        except (OSError, ValueError, TypeError):
            pass
        error = f"worker died (exit code {exitcode}) before finishing the run"
        record = failed_record(run, self.job, error)
        write_record(self.job.out_dir, record)
        return record

    def _stop(self, graceful: bool) -> None:
        """Ask idle workers to exit; kill any that will not (or all, when interrupted)."""
        live = [s for s in self.slots if s is not None and s.process.is_alive()]
        for slot in live:
            if graceful:
                with contextlib.suppress(OSError):  # already gone: join() below sees that
                    slot.conn.send(None)
            else:
                slot.process.kill()
        for slot in live:
            slot.process.join(timeout=10 if graceful else 2)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join(timeout=2)
            slot.conn.close()


def _units(runs: list[Run], job: GridJob) -> list[list[Run]]:
    """What a worker takes at a time: the packs of ``job.pack`` (``lit_seq.ablate.packing``),
    a run alone where it packs with no other."""
    return packs(runs, job.pack, accelerator_type(bool(gpu_devices())))


@contextlib.contextmanager
def local_executor(job: GridJob) -> Iterator[Executor]:
    """The ``local`` executor of one grid: an :data:`~lit_seq.ablate.jobs.Executor` whose
    calls (one a phase) share one :class:`LocalPool`, stopped when the block ends (killed,
    if it ends by an exception)."""
    # the workers inherit this before their torch loads OpenMP (see lit_seq.util.runtime)
    for key, value in QUIET_OPENMP.items():
        os.environ.setdefault(key, value)
    pool = LocalPool(job)

    def execute(runs: list[Run], job: GridJob, on_start: OnStart, on_record: OnRecord) -> None:
        if runs:
            pool.run(_units(runs, job), on_start, on_record)

    try:
        yield execute
    except BaseException:
        pool.close(graceful=False)
        raise
    pool.close()
