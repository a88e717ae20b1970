"""The ``ray`` executor: one Ray task per run or population; Ray schedules, lit_seq submits
and collects.

    python -m lit_seq.ablate ablations/arch.yaml --executor ray [--ray-address auto|HOST:PORT]
                             [--ray-num-cpus 1] [--ray-num-gpus 0.25] [--pack auto|on|off]
                             [--ray-pack-num-gpus 1]

Without an address (and no ``RAY_ADDRESS``) a local Ray instance is started for the grid and
stopped after it; ``auto`` or ``host:port`` joins a running cluster (``ray start --head``).
One connection serves every phase of a grid (its selection runs, each extension step, the
runs at the chosen values): made when the first phase has runs, closed when the grid ends.
A task trains one run with ``run_one.logged_run`` and *returns* its record; the driver writes
it (``lit_seq.record.write_record``), so the records, and with them the tables and resume, live in the
driver's ``--out`` even when the nodes share no filesystem. Run folders (checkpoints, W&B files)
and logs are written on the node that ran the task, under the same ``--out`` path.
Per-run resources: ``--ray-num-cpus/--ray-num-gpus``, else the grid's ``ray:`` section, else
1 CPU and, if the cluster has GPUs, 1 GPU; a fraction of a GPU packs several runs onto one.
Populations: ``--pack`` cuts the runs into packs with the local executor's own rule
(``lit_seq.ablate.packing.packs``); each pack of several runs is one task that trains them as
one population (``run_one.logged_pack``) and returns every member's record, the driver
writing each as the run it is. Such a task asks for the CPUs of a run (it uses ``--threads``
threads, as a local worker does) and :func:`pack_gpus` GPUs: ``--ray-pack-num-gpus``, else the
grid's ``ray: {pack_num_gpus: G}``, else what its members would ask for alone, at most one.
Each task's torch uses ``--threads`` threads (``GridJob.threads``, default 1, at most its CPUs),
as the local executor's workers do: a thread count is a choice, since it moves a run's digits.
A task whose worker or node dies is retried by Ray (``MAX_RETRIES``), then recorded as failed.
Ray is an optional extra: it is imported only when this executor runs.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Iterator

from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.jobs import Executor, GridJob, OnRecord, OnStart, RayOptions
from lit_seq.ablate.spec import Run
from lit_seq.record import RunRecord, write_record
from lit_seq.util.errors import error_line
from lit_seq.util.runtime import QUIET_OPENMP, cpu_count, use_threads

INSTALL_HINT = "executor 'ray' needs the ray extra: pip install -e '.[ray]'"
MAX_RETRIES = 2  # reruns of a task whose worker process or node died (a failed run is a result)
RESOURCE_KEYS = ("num_cpus", "num_gpus", "pack_num_gpus")  # the keys of a grid's ray: section
SECRET_ENV = ("WANDB_API_KEY",)  # never shipped through Ray: `wandb login` on each node instead


def require_ray():
    """The ``ray`` module, or BadGrid with the command that installs it."""
    try:
        import ray
    except ImportError as err:
        broken = "" if err.name == "ray" else f" (importing it failed: {err})"
        raise BadGrid(INSTALL_HINT + broken) from None
    return ray


def _resource(value: object, key: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadGrid(f"{where}: {key}={value!r} must be a number")
    if value < 0 or (key == "num_cpus" and value == 0):
        raise BadGrid(f"{where}: {key}={value!r} must be {'> 0' if key == 'num_cpus' else '>= 0'}")
    if key == "num_gpus" and value > 1 and value != int(value):
        raise BadGrid(f"{where}: num_gpus={value!r}: above 1 Ray only hands out whole GPUs")
    if key == "pack_num_gpus" and value > 1:
        raise BadGrid(f"{where}: pack_num_gpus={value!r} must be <= 1: a population is one device")
    return float(value)


def ray_options(
    section: object,
    address: str | None = None,
    num_cpus: float | None = None,
    num_gpus: float | None = None,
    where: str = "grid",
    pack_num_gpus: float | None = None,
) -> RayOptions:
    """Validate a grid's ``ray:`` section (``{num_cpus: 1, num_gpus: 0.25, pack_num_gpus: 1}``);
    flags win."""
    section = {} if section is None else section
    if not isinstance(section, dict):
        raise BadGrid(f"{where}: ray must be a mapping with keys {list(RESOURCE_KEYS)}")
    if unknown := [k for k in section if k not in RESOURCE_KEYS]:
        raise BadGrid(f"{where}: ray: unknown key {unknown[0]!r}; allowed: {list(RESOURCE_KEYS)}")
    settings = {k: _resource(v, k, f"{where}: ray") for k, v in section.items()}
    flags = (("num_cpus", num_cpus), ("num_gpus", num_gpus), ("pack_num_gpus", pack_num_gpus))
    for key, flag in flags:
        if flag is not None:
            settings[key] = _resource(flag, key, f"--ray-{key.replace('_', '-')}")
    return RayOptions(address=address or None, **settings)


def pack_gpus(options: RayOptions, run_gpus: float, size: int) -> float:
    """The GPUs a population of ``size`` runs asks Ray for: ``options.pack_num_gpus`` when
    set, else what its members would ask for alone (``size`` x ``run_gpus``, a run's), at most
    one GPU, since a population trains on one device. E.g. runs of 0.25 GPU: a population of
    3 asks for 0.75, one of 27 for 1; the default 1 GPU a run: one population per GPU."""
    if options.pack_num_gpus is not None:
        return options.pack_num_gpus
    return round(min(1.0, size * run_gpus), 4)  # Ray counts resources in units of 1e-4


class _Mailbox:
    """A Ray actor the tasks tell when they start, so the progress shows what really runs."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def post(self, run_id: str, worker: str) -> None:
        self.items.append((run_id, worker))

    def take(self) -> list[tuple[str, str]]:
        items, self.items = self.items, []
        return items


def _worker() -> str:
    """This Ray worker's name in records: ``ray-<node ip>:<pid>``."""
    import ray

    return f"ray-{ray.util.get_node_ip_address()}:{os.getpid()}"


def _train(run: Run, job: GridJob, threads: int, mailbox) -> RunRecord:
    """One run inside a Ray worker: its record (log path included), for the driver to write."""
    # imported here, in the task: the mailbox actor's process never pays for torch
    from lit_seq.ablate.run_one import logged_run

    use_threads(threads)
    worker = _worker()
    mailbox.post.remote(run.run_id, worker)
    return logged_run(run, job, worker=worker)  # its log is on this node, like its run folder


def _train_pack(runs: list[Run], job: GridJob, threads: int, mailbox) -> list[RunRecord]:
    """A pack inside a Ray worker, trained as one population: every member's record."""
    from lit_seq.ablate.run_one import logged_pack

    use_threads(threads)
    worker = _worker()
    for run in runs:
        mailbox.post.remote(run.run_id, worker)
    return logged_pack(runs, job, worker=worker)


def _connect(ray, address: str | None) -> bool:
    """Join ``address`` (or RAY_ADDRESS), else start a local instance; True if started here.
    Says which on the driver's console, once a grid."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    # the runs write their own logs; the driver's console is for the progress lines
    common = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if address:
        ray.init(address=address, **common)
        print(f"ray: joined the cluster at {address}", flush=True)
        return False
    cpus = cpu_count()
    ray.init(address="local", num_cpus=cpus, **common)  # not a cluster found lying around
    print(f"ray: started a local instance with {_count(cpus, 'CPU')}", flush=True)
    return True


def _options(job: GridJob) -> RayOptions:
    """What each task asks for: the grid's flags and ``ray:`` section, else the defaults."""
    return job.ray or RayOptions()


@contextlib.contextmanager
def _connection(options: RayOptions) -> Iterator[tuple[object, bool]]:
    """Ray, connected for the block, and whether its instance was started here (a local one,
    where a task no node can take fails at once). Uses this process's connection if it has
    one (tests), else makes one (:func:`_connect`) and closes it when the block ends."""
    ray = require_ray()
    if ray.is_initialized():
        yield ray, False
        return
    local = _connect(ray, options.address)
    try:
        yield ray, local
    finally:
        ray.shutdown()


def _check_fits(ray, num_cpus: float, num_gpus: float, local: bool, what: str = "a run") -> None:
    """Fail (on a local instance) or warn (a cluster may grow) if no node can take a task."""
    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    if any(r.get("CPU", 0) >= num_cpus and r.get("GPU", 0) >= num_gpus for r in nodes):
        return
    have = ", ".join(f"{r.get('CPU', 0):g} CPU {r.get('GPU', 0):g} GPU" for r in nodes)
    problem = f"no Ray node has {num_cpus:g} CPU and {num_gpus:g} GPU for {what} (nodes: {have})"
    if local:
        flag = "--ray-pack-num-gpus" if what != "a run" else "--ray-num-gpus"
        raise BadGrid(f"{problem}; lower --ray-num-cpus / {flag}")
    print(f"ray: warning: {problem}; the runs wait until such a node joins", flush=True)


def _task_env() -> dict[str, str]:
    """What a run needs from the driver's environment on any node: quiet OpenMP, W&B settings."""
    env = {k: v for k, v in os.environ.items() if k.startswith("WANDB_") and k not in SECRET_ENV}
    # spinning OpenMP threads make a busy machine crawl (see lit_seq.util.runtime)
    env.update({k: os.environ.get(k, v) for k, v in QUIET_OPENMP.items()})
    return env


def _take(ray, mailbox) -> list[tuple[str, str]]:
    """The starts posted since the last call; none if the mailbox is gone (only display)."""
    try:
        return ray.get(mailbox.take.remote(), timeout=30)
    except ray.exceptions.RayError:  # GetTimeoutError included
        return []


def _lost(err: Exception, ray) -> str:
    """One line for a task that returned no record."""
    if isinstance(err, ray.exceptions.RayTaskError):  # raised outside execute_run: not retried
        return f"ray task failed: {error_line(err.cause or err)}"
    return f"ray task lost, retried {MAX_RETRIES}x: {error_line(err)}"


def _records(ray, ref, unit: list[Run], job: GridJob) -> list[RunRecord]:
    """The records a finished task returned (one run's, or a population's members'); each
    of ``unit`` failed if the task returned none."""
    # run_one imports torch: kept out of this module, which the mailbox actor's process loads
    from lit_seq.ablate.run_one import failed_record

    try:
        returned = ray.get(ref)
    except ray.exceptions.RayError as err:
        return [failed_record(run, job, _lost(err, ray)) for run in unit]
    return returned if isinstance(returned, list) else [returned]


def _collect(ray, pending: dict, job: GridJob, on_start: OnStart, on_record: OnRecord, mailbox):
    """Write and report each task's records as it finishes (a lost task: failed records).

    ``pending``: each task's reference -> the runs it trains (one, or a population's). A run
    whose start the mailbox has not told by the time its task ends (a busy machine: the
    mailbox is read with a timeout) is reported started just before its record, with the
    worker its record names, so every run is started before it is finished."""
    by_id = {run.run_id: run for unit in pending.values() for run in unit}
    started: set[str] = set()
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            for run_id, worker in _take(ray, mailbox):
                if run_id in by_id and run_id not in started:  # not late, not twice
                    started.add(run_id)
                    on_start(by_id[run_id], worker)
            for ref in ready:
                unit = pending.pop(ref)
                for record in _records(ray, ref, unit, job):
                    if record.run_id in by_id and record.run_id not in started:
                        on_start(by_id[record.run_id], record.worker)
                    write_record(job.out_dir, record)  # the only write: on disk, then reported
                    on_record(record)
                for run in unit:
                    del by_id[run.run_id]
                    started.discard(run.run_id)
    except BaseException:  # Ctrl-C above all
        for ref in pending:  # queued or running: their runs rerun on the next call
            ray.cancel(ref, force=True)
        raise


def _span(values: list[float]) -> str:
    """``3`` or ``2-27``: the range of ``values``."""
    low, high = min(values), max(values)
    return f"{low:g}" if low == high else f"{low:g}-{high:g}"


def _gpus(unit: list[Run], options: RayOptions, run_gpus: float) -> float:
    """The GPUs the task of ``unit`` asks for: a run's, or its population's (:func:`pack_gpus`)."""
    return pack_gpus(options, run_gpus, len(unit)) if len(unit) > 1 else run_gpus


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _header(units: list[list[Run]], options: RayOptions, run_gpus: float, total: dict) -> str:
    """The driver's line about the tasks: how many, what each asks for, the cluster found."""
    tasks = f"ray: {_count(len(units), 'task')} of {options.num_cpus:g} CPU"
    cluster = f"cluster {total.get('CPU', 0):g} CPU, {total.get('GPU', 0):g} GPU"
    pops = [unit for unit in units if len(unit) > 1]
    if not pops:
        return f"{tasks}, {run_gpus:g} GPU each; {cluster}"
    rule = "--ray-pack-num-gpus" if options.pack_num_gpus is not None else "K x a run's, at most 1"
    sizes, gpus = _span([len(u) for u in pops]), _span([_gpus(u, options, run_gpus) for u in pops])
    parts = [f"{_count(len(pops), 'population')} of {sizes} runs, {gpus} GPU each ({rule})"]
    if alone := len(units) - len(pops):
        parts.append(f"{_count(alone, 'run')} alone, {run_gpus:g} GPU each")
    return f"{tasks}: {'; '.join(parts)}; {cluster}"


def _submit(ray, units: list[list[Run]], job: GridJob, run_gpus: float, mailbox, task, pack_task):
    """Submit one task per unit (a run, or a pack as one population); their references ->
    their runs."""
    options = _options(job)
    remotes: dict = {}
    pending = {}
    for unit in units:
        fn, gpus = (task if len(unit) == 1 else pack_task), _gpus(unit, options, run_gpus)
        if (fn, gpus) not in remotes:
            # options of ray.remote, not .options(): only then does a GPU task get a fresh
            # worker (max_calls=1), so CUDA never keeps the device of the worker's previous task
            remotes[fn, gpus] = ray.remote(
                num_cpus=options.num_cpus,
                num_gpus=gpus,
                max_retries=MAX_RETRIES,  # worker or node died; exceptions are never retried
                retry_exceptions=False,
                runtime_env={"env_vars": _task_env()},
            )(fn)
        what = unit[0] if len(unit) == 1 else unit
        pending[remotes[fn, gpus].remote(what, job, job.threads, mailbox)] = unit
    return pending


def run_ray(
    runs: list[Run],
    job: GridJob,
    on_start: OnStart,
    on_record: OnRecord,
    task=_train,
    pack_task=_train_pack,
) -> None:
    """Run ``runs`` as Ray tasks; write each record here, then call ``on_record`` with it.

    ``job.pack`` cuts them into packs as the local executor does
    (``lit_seq.ablate.packing.packs``): a run alone is one task, a pack of several is one
    task that trains them as one population. Uses the Ray connection of this process if
    there is one (tests), else makes its own for this call (a grid's phases share one:
    :func:`ray_executor`). Any exception in the driver, Ctrl-C above all, cancels the queued
    and running tasks and propagates; the records already written stay. ``task`` and
    ``pack_task`` replace :func:`_train` and :func:`_train_pack` in tests (a worker that
    dies, a run that hangs).
    """
    if not runs:
        return
    with _connection(_options(job)) as (ray, local):
        _run(ray, local, runs, job, on_start, on_record, task, pack_task)


def _run(ray, local: bool, runs, job: GridJob, on_start, on_record, task, pack_task) -> None:
    """:func:`run_ray` on a connection already made (``local``: its instance started here)."""
    from lit_seq.ablate.packing import packs  # population imports torch: see _records

    options = _options(job)
    mailbox = None
    try:
        total = ray.cluster_resources()
        run_gpus = options.num_gpus
        if run_gpus is None:  # one run per GPU where there are GPUs; pack with a fraction
            run_gpus = 1.0 if total.get("GPU", 0) > 0 else 0.0
        # populations train on the device they ask for (a GPU for every size, or for none):
        # --pack auto packs that device's measured families, as the local executor does
        units = packs(runs, job.pack, "cuda" if pack_gpus(options, run_gpus, 1) > 0 else "cpu")
        for is_pack, gpus in sorted({(len(u) > 1, _gpus(u, options, run_gpus)) for u in units}):
            what = "a population" if is_pack else "a run"
            _check_fits(ray, options.num_cpus, gpus, local=local, what=what)
        print(_header(units, options, run_gpus, total), flush=True)
        mailbox = ray.remote(num_cpus=0)(_Mailbox).remote()
        pending = _submit(ray, units, job, run_gpus, mailbox, task, pack_task)
        _collect(ray, pending, job, on_start, on_record, mailbox)
    finally:
        if mailbox is not None:
            with contextlib.suppress(Exception):  # never hide why we are leaving
                ray.kill(mailbox)


@contextlib.contextmanager
def ray_executor(job: GridJob) -> Iterator[Executor]:
    """The ``ray`` executor of one grid: each call (a phase of the grid) runs its runs as
    :func:`run_ray` does, on one Ray connection for the whole grid, made by the first call
    that has runs (a grid with nothing left to run never starts Ray) and closed when the
    block ends. A local instance takes seconds to start (minutes on a loaded 2-core
    machine): a select grid used to pay that once a phase."""
    with contextlib.ExitStack() as stack:
        connection: tuple[object, bool] | None = None

        def execute(runs: list[Run], job: GridJob, on_start: OnStart, on_record: OnRecord):
            nonlocal connection
            if not runs:
                return
            if connection is None:
                connection = stack.enter_context(_connection(_options(job)))
            ray, local = connection
            _run(ray, local, runs, job, on_start, on_record, _train, _train_pack)

        yield execute
