"""One grid run in this process: train it through ``lit_seq.fit`` and turn it into a record.

:func:`execute_run` is what every executor runs for a run (a local worker, a Ray task): it
returns the run's :class:`~lit_seq.record.RunRecord` and never raises. A run that fails
(bad config, NaN loss) is a failed record with the error as one line; a W&B failure is
handled inside the fit (offline instead of online, or no W&B) and shows as the record's
warning.
:func:`run_and_record` adds the run's log file and writes the record, so a result is on
disk before anyone is told about it; :func:`run_pack_and_record` does the same for each
member of a pack of runs trained together as one population (``lit_seq.population``).
The Ray executor's tasks run :func:`logged_run` and :func:`logged_pack`, which return the
records for the driver to write.
"""

import contextlib
import dataclasses
import json
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from lit_seq import fit
from lit_seq.ablate.folder import run_dir
from lit_seq.ablate.jobs import GridJob
from lit_seq.ablate.spec import Run, config_file
from lit_seq.fit.wandb_modes import WANDB_TAG_LIMIT
from lit_seq.population.train import fit_population
from lit_seq.record import RunRecord, diverged_loss, format_value, write_record
from lit_seq.util.errors import error_line

LOGS = "logs"
# the driver owns the console; each run's own output goes to logs/<run_id>.log
GRID_FLAGS = ("--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false")


def wandb_config(run: Run, job: GridJob) -> dict:
    """The flat keys a grid run adds to its W&B config: where it sits in the grid and one key
    per axis, so that W&B groups seeds by ``cell`` and draws the axes as columns."""
    place = {"grid": job.grid_name, "block": run.block, "cell": run.cell}
    return {**run.axes, **place, "seed": run.seed, "run_id": run.run_id}


def axis_tags(key: str, value: object, arch: str) -> list[str]:
    """The W&B tags of one axis value: ``key=value``; a class given by import path (a plug-in
    backbone, its ``class_path`` and ``init_args``) as its name (a backbone: ``arch=`` its
    ``arch``, as a built-in's) and one tag per option it sets, since a tag holding the whole
    path would be cut inside it at W&B's limit (:data:`WANDB_TAG_LIMIT` characters)."""
    options = {}
    if isinstance(value, dict) and isinstance(value.get("class_path"), str):
        value, options = value["class_path"], value.get("init_args") or {}
    elif not (isinstance(value, str) and key.endswith("backbone")):
        return [f"{key}={format_value(value)}"]
    name = value.rpartition(".")[2]
    label = f"arch={arch or name}" if key.endswith("backbone") else f"{key}={name}"
    return [label, *(f"{k}={format_value(v)}" for k, v in options.items())]


def run_args(run: Run, job: GridJob) -> list[str]:
    """The ``lit_seq.fit`` arguments of ``run``: base config, run folder, W&B, overrides."""
    tags = [t for k, v in run.axes.items() for t in axis_tags(k, v, run.arch)]
    tags = [t[:WANDB_TAG_LIMIT] for t in [*tags, f"block={run.block}", f"seed={run.seed}"]]
    return [
        "--config",
        str(config_file(run.config)),
        f"--run_dir={run_dir(job.out_dir, run.run_id)}",
        f"--wandb.mode={job.wandb_mode}",
        f"--wandb.group={job.grid_name}",
        f"--wandb.tags={format_value(tags)}",
        f"--wandb.config={json.dumps(wandb_config(run, job), default=str)}",
        *GRID_FLAGS,
        *run.overrides,
        *([f"--scoring={run.scoring}"] if run.scoring != "full" else []),
    ]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def base_record(run: Run, job: GridJob, worker: str = "") -> RunRecord:
    """What a record knows before the run trains: where it sits in the grid (status failed)."""
    return RunRecord(
        run_id=run.run_id,
        grid=job.grid_name,
        block=run.block,
        cell=run.cell,
        axes=run.axes,
        axis_order=list(run.axes),
        seed=run.seed,
        index=run.index,
        config=run.config,
        overrides=list(run.overrides),
        task=run.task or None,
        arch=run.arch or None,
        select_axis=run.select_axis,
        select_metric=run.select_metric,
        select_group=run.select_group,
        select_seeds=list(run.select_seeds),
        select_from=list(run.select_from),
        select_reason=run.select_reason,
        select_extension=run.select_extension,
        worker=worker,
        run_dir=str(run_dir(job.out_dir, run.run_id)),
    )


def failed_record(run: Run, job: GridJob, error: str, worker: str = "") -> RunRecord:
    """The record of a run that failed outside :func:`execute_run` (e.g. its worker died)."""
    return dataclasses.replace(base_record(run, job, worker), error=error, finished_at=_now())


def _diverged(metrics: dict[str, float]) -> str:
    """The error of a run whose test loss is not finite, else ""."""
    bad = diverged_loss(metrics)
    return f"{bad} is {metrics[bad]}: diverged" if bad else ""


def execute_run(
    run: Run,
    job: GridJob,
    worker: str = "",
    train: Callable[[list[str]], fit.FitResult] | None = None,
) -> RunRecord:
    """Train and test ``run`` in this process and return its record; never raises.

    The run folder is wiped first: anything in it is the leftover of an interrupted attempt.
    An exception gives status ``failed`` with the error as one line (traceback on stderr).
    ``train``: what fits the run's arguments (default ``fit.cli_main``).
    """
    started = time.perf_counter()
    record = base_record(run, job, worker)
    shutil.rmtree(record.run_dir, ignore_errors=True)
    try:
        outcome = (train or fit.cli_main)(run_args(run, job))
    except (Exception, SystemExit) as err:
        traceback.print_exc()
        outcome = err
    return _finished(record, outcome, time.perf_counter() - started)


def _finished(
    record: RunRecord, outcome: fit.FitResult | BaseException, seconds: float
) -> RunRecord:
    """``record`` completed by what its fit gave: its result, or the error it failed with."""
    if isinstance(outcome, BaseException):
        record = dataclasses.replace(record, error=error_line(outcome))
    else:
        error = _diverged(outcome.metrics)
        warning = f"W&B: {outcome.wandb_error}"
        record = dataclasses.replace(
            record,
            **outcome.to_json(),
            status="failed" if error else "ok",
            error=error,
            warning=warning if outcome.wandb_error else "",
        )
    record.wall_seconds = round(seconds, 3)
    record.finished_at = _now()
    return record


@contextlib.contextmanager
def output_to(path: Path):
    """Send this process's stdout and stderr (file descriptors, so C code too) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "w") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, original in zip((1, 2), saved, strict=True):
                os.dup2(original, fd)
                os.close(original)


def logged_run(run: Run, job: GridJob, worker: str = "") -> RunRecord:
    """:func:`execute_run` with its output in ``logs/<run_id>.log`` (on this machine)."""
    log = Path(job.out_dir) / LOGS / f"{run.run_id}.log"
    with output_to(log):
        record = execute_run(run, job, worker)
    record.log = str(log)
    return record


def run_and_record(run: Run, job: GridJob, worker: str = "") -> RunRecord:
    """:func:`logged_run`, then the record written to the grid folder."""
    record = logged_run(run, job, worker)
    write_record(job.out_dir, record)
    return record


def logged_pack(runs: list[Run], job: GridJob, worker: str = "") -> list[RunRecord]:
    """Train ``runs`` as one population (``lit_seq.population``) in this process and return
    each member's record as the run it is, in the order of ``runs``; never raises. The
    pack's output goes to one log file (``logs/<first run_id>.pack.log``, on this machine),
    which every member's record names. A member that fails (diverged) is a failed record
    beside the others'; an error before training fails every member with it."""
    started = time.perf_counter()
    records = [base_record(run, job, worker) for run in runs]
    for record in records:  # leftovers of an interrupted attempt
        shutil.rmtree(record.run_dir, ignore_errors=True)
    log = Path(job.out_dir) / LOGS / f"{runs[0].run_id}.pack.log"
    with output_to(log):
        try:
            outcomes = fit_population([run_args(run, job) for run in runs])
        except (Exception, SystemExit) as err:  # nothing trained: every member fails with it
            traceback.print_exc()
            outcomes = [err] * len(runs)
    seconds = time.perf_counter() - started
    done = []
    for record, outcome in zip(records, outcomes, strict=True):
        member = _finished(record, outcome, seconds)
        member.log, member.pack_size = str(log), len(runs)
        done.append(member)
    return done


def run_pack_and_record(
    runs: list[Run], job: GridJob, worker: str, on_record: Callable[[RunRecord], None]
) -> None:
    """:func:`logged_pack`, then each member's record written to the grid folder and handed
    to ``on_record``."""
    for record in logged_pack(runs, job, worker):
        write_record(job.out_dir, record)
        on_record(record)
