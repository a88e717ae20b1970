"""Executors: who runs a grid's pending runs. ``local`` (default) is a pool of processes.

Every executor has the signature of :data:`Executor`: it gets the runs still to do and a
:class:`GridJob`, and must, for each run, call ``on_start`` when the run starts and
``on_record`` with its record once that record is on disk (``worker.run_and_record`` does
run + write; ``worker.failed_record`` + ``records.write_record`` for a run that was lost).
It returns when every run has a record. ``ray`` (``ray_executor``) plugs in the same way.
"""

import contextlib
import multiprocessing as mp
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path

from lit_seq.ablate.ray_executor import RayOptions, run_ray
from lit_seq.ablate.records import record_path, write_record
from lit_seq.ablate.spec import Run
from lit_seq.ablate.worker import failed_record, worker_main
from lit_seq.io import read_json


@dataclass(frozen=True)
class GridJob:
    """What every run of a grid shares, whichever executor runs it."""

    out_dir: Path
    grid_name: str
    wandb_mode: str  # online | offline | off (already resolved)
    workers: int = 1
    ray: RayOptions | None = None  # --executor ray: address and resources per run


OnStart = Callable[[Run, str], None]  # (run, worker name)
OnRecord = Callable[[dict], None]  # the record, already written
Executor = Callable[[list[Run], GridJob, OnStart, OnRecord], None]


def cpu_count() -> int:
    """CPUs this process may use (the affinity mask, which containers narrow)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def gpu_devices() -> list[str]:
    """The ids to put in a worker's ``CUDA_VISIBLE_DEVICES``, one per visible GPU."""
    import torch

    if not torch.cuda.is_available():
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        return [d.strip() for d in visible.split(",") if d.strip()]
    return [str(i) for i in range(torch.cuda.device_count())]


@dataclass
class _Slot:
    process: mp.process.BaseProcess
    conn: object  # the driver's end of the worker's pipe
    run: Run | None = None


def _lost_run(job: GridJob, run: Run, exitcode: int | None) -> dict:
    """The record of a run whose worker died: the one it wrote, if it got that far."""
    try:  # only runs without an ok record are ever started, so an ok one here is fresh
        written = read_json(record_path(job.out_dir, run.run_id))
    except (OSError, ValueError):
        written = {}
    if written.get("status") == "ok":
        return written
    record = failed_record(
        run,
        job.out_dir,
        job.grid_name,
        f"worker died (exit code {exitcode}) before finishing the run",
    )
    write_record(job.out_dir, record)
    return record


def run_local(runs: list[Run], job: GridJob, on_start: OnStart, on_record: OnRecord) -> None:
    """Run ``runs`` on ``job.workers`` long-lived worker processes (spawned, not forked).

    CPU threads are split between the workers; with GPUs, worker i gets GPU i % n_gpus.
    A worker that dies (kill -9, OOM) fails its run and is replaced; the grid goes on.
    """
    if not runs:
        return
    ctx = mp.get_context("spawn")  # fork + CUDA or fork + threads is unsafe
    n = max(1, min(job.workers, len(runs)))
    threads = max(1, cpu_count() // n)
    devices = gpu_devices()
    pending = deque(runs)
    slots: list[_Slot | None] = [None] * n
    # OpenMP threads that spin while waiting make a busy machine crawl (measured 20x on 2
    # shared cores); the workers inherit this before their torch loads OpenMP
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

    def start(i: int) -> None:
        ours, theirs = ctx.Pipe()
        device = devices[i % len(devices)] if devices else None
        args = (i, theirs, os.getpid(), threads, device, str(job.out_dir))
        process = ctx.Process(
            target=worker_main,
            args=(*args, job.wandb_mode, job.grid_name),
            name=f"lit_seq-worker-{i}",
            daemon=True,
        )
        process.start()
        theirs.close()  # so a dead worker reads as EOF on our end
        slots[i] = _Slot(process, ours)

    finished = False
    idle_deaths = 0
    try:
        for i in range(n):
            start(i)
        while pending or any(s and s.run for s in slots):
            for s in slots:
                if s and s.run is None and pending and s.process.is_alive():
                    run = pending.popleft()
                    try:
                        s.conn.send(run)
                    except OSError:  # died just now; the check below replaces it
                        pending.appendleft(run)
                        continue
                    s.run = run
                    on_start(run, s.process.name)
            busy = [s.conn for s in slots if s and s.run]
            wait(busy + [s.process.sentinel for s in slots if s], timeout=1.0)
            for i, s in enumerate(slots):
                if s is None:
                    continue
                if s.run is not None and s.conn.poll():
                    try:
                        record = s.conn.recv()
                    except Exception:  # EOF or a torn message: it died, handled below
                        record = None
                    if record is not None:
                        s.run = None
                        on_record(record)
                        continue
                if not s.process.is_alive():
                    if s.run is not None:
                        on_record(_lost_run(job, s.run, s.process.exitcode))
                    else:
                        idle_deaths += 1
                    s.conn.close()
                    slots[i] = None
                    if idle_deaths > 2 * n:  # workers that die before taking a run
                        while pending:  # would be restarted forever: fail what is left
                            on_record(_lost_run(job, pending.popleft(), s.process.exitcode))
                    if pending:
                        start(i)
        finished = True
    finally:
        _stop(slots, graceful=finished)


def _stop(slots: list[_Slot | None], graceful: bool) -> None:
    """Ask idle workers to exit; kill any that will not (or all, when interrupted)."""
    live = [s for s in slots if s is not None and s.process.is_alive()]
    for s in live:
        if graceful:
            with contextlib.suppress(OSError):  # already gone: join() below sees that
                s.conn.send(None)
        else:
            s.process.kill()
    for s in live:
        s.process.join(timeout=10 if graceful else 2)
        if s.process.is_alive():
            s.process.kill()
            s.process.join(timeout=2)
        s.conn.close()


EXECUTORS: dict[str, Executor] = {"local": run_local, "ray": run_ray}
