"""The ``ray`` executor: one Ray task per run; Ray schedules, lit_seq submits and collects.

    python -m lit_seq.ablate ablations/arch.yaml --executor ray [--ray-address auto|HOST:PORT]
                             [--ray-num-cpus 1] [--ray-num-gpus 0.25]

Without an address (and no ``RAY_ADDRESS``) a local Ray instance is started for the grid and
stopped after it; ``auto`` or ``host:port`` joins a running cluster (``ray start --head``).
A task trains one run with ``run_one.logged_run`` and *returns* its record; the driver writes
it (``lit_seq.record.write_record``), so the records, and with them the tables and resume, live in the
driver's ``--out`` even when the nodes share no filesystem. Run folders (checkpoints, W&B files)
and logs are written on the node that ran the task, under the same ``--out`` path.
Per-run resources: ``--ray-num-cpus/--ray-num-gpus``, else the grid's ``ray:`` section, else
1 CPU and, if the cluster has GPUs, 1 GPU; a fraction of a GPU packs several runs onto one.
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

from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.jobs import GridJob, OnRecord, OnStart, RayOptions
from lit_seq.ablate.spec import Run
from lit_seq.record import RunRecord, write_record
from lit_seq.util.errors import error_line
from lit_seq.util.runtime import QUIET_OPENMP, cpu_count, use_threads

INSTALL_HINT = "executor 'ray' needs the ray extra: pip install -e '.[ray]'"
MAX_RETRIES = 2  # reruns of a task whose worker process or node died (a failed run is a result)
RESOURCE_KEYS = ("num_cpus", "num_gpus")  # the keys of a grid's ray: section
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
    return float(value)


def ray_options(
    section: object,
    address: str | None = None,
    num_cpus: float | None = None,
    num_gpus: float | None = None,
    where: str = "grid",
) -> RayOptions:
    """Validate a grid's ``ray:`` section (``{num_cpus: 1, num_gpus: 0.25}``); flags win."""
    section = {} if section is None else section
    if not isinstance(section, dict):
        raise BadGrid(f"{where}: ray must be a mapping with keys {list(RESOURCE_KEYS)}")
    if unknown := [k for k in section if k not in RESOURCE_KEYS]:
        raise BadGrid(f"{where}: ray: unknown key {unknown[0]!r}; allowed: {list(RESOURCE_KEYS)}")
    settings = {k: _resource(v, k, f"{where}: ray") for k, v in section.items()}
    for key, flag in (("num_cpus", num_cpus), ("num_gpus", num_gpus)):
        if flag is not None:
            settings[key] = _resource(flag, key, f"--ray-{key.replace('_', '-')}")
    return RayOptions(address=address or None, **settings)


class _Mailbox:
    """A Ray actor the tasks tell when they start, so the progress shows what really runs."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def post(self, run_id: str, worker: str) -> None:
        self.items.append((run_id, worker))

    def take(self) -> list[tuple[str, str]]:
        items, self.items = self.items, []
        return items


def _train(run: Run, job: GridJob, threads: int, mailbox) -> RunRecord:
    """One run inside a Ray worker: its record (log path included), for the driver to write."""
    import ray

    # imported here, in the task: the mailbox actor's process never pays for torch
    from lit_seq.ablate.run_one import logged_run

    use_threads(threads)
    worker = f"ray-{ray.util.get_node_ip_address()}:{os.getpid()}"
    mailbox.post.remote(run.run_id, worker)
    return logged_run(run, job, worker=worker)  # its log is on this node, like its run folder


def _connect(ray, address: str | None) -> bool:
    """Join ``address`` (or RAY_ADDRESS), else start a local instance; True if started here."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    # the runs write their own logs; the driver's console is for the progress lines
    common = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if address:
        ray.init(address=address, **common)
        return False
    ray.init(address="local", num_cpus=cpu_count(), **common)  # not a cluster found lying around
    return True


def _check_fits(ray, num_cpus: float, num_gpus: float, local: bool) -> None:
    """Fail (on a local instance) or warn (a cluster may grow) if no node can take a task."""
    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    if any(r.get("CPU", 0) >= num_cpus and r.get("GPU", 0) >= num_gpus for r in nodes):
        return
    have = ", ".join(f"{r.get('CPU', 0):g} CPU {r.get('GPU', 0):g} GPU" for r in nodes)
    problem = f"no Ray node has {num_cpus:g} CPU and {num_gpus:g} GPU for a run (nodes: {have})"
    if local:
        raise BadGrid(f"{problem}; lower --ray-num-cpus / --ray-num-gpus")
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


def _collect(ray, pending: dict, job: GridJob, on_start: OnStart, on_record: OnRecord, mailbox):
    """Write and report each task's record as it finishes (a lost task: a failed record)."""
    # run_one imports torch: kept out of this module, which the mailbox actor's process loads
    from lit_seq.ablate.run_one import failed_record

    by_id = {run.run_id: run for run in pending.values()}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            for run_id, worker in _take(ray, mailbox):
                if run_id in by_id:  # not a late message about a finished run
                    on_start(by_id[run_id], worker)
            for ref in ready:
                run = pending.pop(ref)
                del by_id[run.run_id]
                try:
                    record = ray.get(ref)
                except ray.exceptions.RayError as err:
                    record = failed_record(run, job, _lost(err, ray))
                write_record(job.out_dir, record)  # the only write: on disk, then reported
                on_record(record)
    except BaseException:  # Ctrl-C above all
        for ref in pending:  # queued or running: their runs rerun on the next call
            ray.cancel(ref, force=True)
        raise


def run_ray(
    runs: list[Run], job: GridJob, on_start: OnStart, on_record: OnRecord, task=_train
) -> None:
    """Run ``runs`` as Ray tasks; write each record here, then call ``on_record`` with it.

    Uses the Ray connection of this process if there is one (tests), else makes its own and
    closes it at the end. Any exception in the driver, Ctrl-C above all, cancels the queued
    and running tasks and propagates; the records already written stay. ``task`` replaces
    :func:`_train` in tests (a worker that dies, a run that hangs).
    """
    if not runs:
        return
    ray = require_ray()
    options = job.ray or RayOptions()
    owned = not ray.is_initialized()
    local = _connect(ray, options.address) if owned else False
    mailbox = None
    try:
        total = ray.cluster_resources()
        num_gpus = options.num_gpus
        if num_gpus is None:  # one run per GPU where there are GPUs; pack with a fraction
            num_gpus = 1.0 if total.get("GPU", 0) > 0 else 0.0
        _check_fits(ray, options.num_cpus, num_gpus, local=local)
        print(
            f"ray: {len(runs)} tasks of {options.num_cpus:g} CPU, {num_gpus:g} GPU each; cluster "
            f"{total.get('CPU', 0):g} CPU, {total.get('GPU', 0):g} GPU",
            flush=True,
        )
        # options of ray.remote, not .options(): only then does a GPU task get a fresh worker
        # (max_calls=1), so CUDA never keeps the device of the worker's previous task
        remote = ray.remote(
            num_cpus=options.num_cpus,
            num_gpus=num_gpus,
            max_retries=MAX_RETRIES,  # worker or node died; exceptions are never retried
            retry_exceptions=False,
            runtime_env={"env_vars": _task_env()},
        )(task)
        mailbox = ray.remote(num_cpus=0)(_Mailbox).remote()
        pending = {remote.remote(run, job, job.threads, mailbox): run for run in runs}
        _collect(ray, pending, job, on_start, on_record, mailbox)
    finally:
        if mailbox is not None:
            with contextlib.suppress(Exception):  # never hide why we are leaving
                ray.kill(mailbox)
        if owned:
            ray.shutdown()
