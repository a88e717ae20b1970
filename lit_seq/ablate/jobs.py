"""What every executor shares: the grid job, the per-run Ray options, the callback types.

An executor (what ``local_pool.local_executor`` and ``ray_executor.ray_executor`` yield;
``ray_executor.run_ray``) has the
signature of :data:`Executor`: it gets the runs still to do and a :class:`GridJob`, and
must, for each run, call ``on_start`` when the run starts and ``on_record`` with its record
once that record is on disk. It returns when every run has a record. A grid calls it once a
phase (its selection runs, each step of a sweep's extension, the runs at the chosen values)
inside the context its executor opens for the whole grid (``local_pool.local_executor``,
whose workers serve every phase; ``ray_executor.ray_executor``, whose one Ray connection
does).
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lit_seq.ablate.spec import Run
from lit_seq.record import RunRecord


@dataclass(frozen=True)
class RayOptions:
    """Where Ray tasks run and what each asks for (flags over the grid's ``ray:`` section)."""

    address: str | None = None  # None: RAY_ADDRESS if set, else a local instance
    num_cpus: float = 1.0  # per run: what Ray reserves for it (its threads: GridJob.threads)
    num_gpus: float | None = None  # per run; None: 1 if the cluster has GPUs, else 0
    # per population (a pack, trained as one task on one device); None: what its members
    # would ask for alone, at most 1 (ray_executor.pack_gpus)
    pack_num_gpus: float | None = None


@dataclass(frozen=True)
class GridJob:
    """What every run of a grid shares, whichever executor runs it."""

    out_dir: Path
    grid_name: str
    wandb_mode: str  # online | offline | off (already resolved)
    workers: int = 1
    ray: RayOptions | None = None  # --executor ray: address, resources per run and population
    pack: str = "off"  # --pack: auto | on | off (lit_seq.ablate.packing; either executor)
    # torch threads per run, whatever the workers: the thread count moves a run's digits
    # (docs/grids.md, "What moves a run's digits"), so it is a choice, never a side effect
    threads: int = 1


OnStart = Callable[[Run, str], None]  # (run, worker name)
OnRecord = Callable[[RunRecord], None]  # the record, already written
Executor = Callable[[list[Run], GridJob, OnStart, OnRecord], None]
