"""One grid run in the current process, and the loop of a local worker process.

:func:`execute_run` is what every executor runs for a run (a local worker here, a Ray task
elsewhere): it trains through ``lit_seq.fit`` and returns the run's record, never raising.
:func:`run_and_record` adds the run's log file and writes the record, so a result is on
disk before anyone is told about it.
"""

import contextlib
import ctypes
import json
import math
import os
import shutil
import signal
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

from lit_seq.ablate.common import format_value
from lit_seq.ablate.records import run_dir, write_record
from lit_seq.ablate.spec import Run, config_file
from lit_seq.io import read_json

LOGS = "logs"
# the driver owns the console; each run's own output goes to logs/<run_id>.log
GRID_FLAGS = ("--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false")


def run_args(run: Run, out_dir: Path, wandb_mode: str, grid_name: str) -> list[str]:
    """The ``lit_seq.fit`` arguments of ``run``: base config, run folder, W&B, overrides."""
    tags = [f"{k}={format_value(v)}"[:64] for k, v in run.axes.items()]  # W&B caps tags at 64
    tags += [f"block={run.block}"[:64], f"seed={run.seed}"]
    return [
        "--config",
        str(config_file(run.config)),
        f"--run_dir={run_dir(out_dir, run.run_id)}",
        f"--wandb={wandb_mode}",
        f"--wandb_group={grid_name}",
        f"--wandb_tags={json.dumps(tags)}",
        *GRID_FLAGS,
        *run.overrides,
    ]


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or repr(error)
    return f"{type(error).__name__}: {text}"[:1000]


def _failed_fields(run: Run) -> dict:
    """What fit would have reported, as far as the run itself tells (for failed records)."""
    parts = Path(run.config).parts
    guessed_task = parts[-2] if len(parts) >= 3 and parts[-3] == "configs" else None
    return {
        "task": run.axes.get("task", guessed_task),
        "arch": run.axes.get("arch", Path(run.config).stem if guessed_task else None),
        "system": None,
        "main_metric": None,
        "params": None,
        "steps": None,
        "train_seconds": None,
        "samples_per_second": None,
        "best_checkpoint": "",
        "last_checkpoint": "",
        "wandb_run": "",
        "metrics": {},
    }


def _close_wandb() -> None:
    """Finish a W&B run a crashed fit left open, so the next run never merges into it."""
    wandb = sys.modules.get("wandb")
    with contextlib.suppress(Exception):
        if wandb is not None and wandb.run is not None:
            wandb.finish(exit_code=1)


def _base_record(run: Run, out_dir: Path, grid_name: str, worker: str) -> dict:
    return {
        "run_id": run.run_id,
        "grid": grid_name,
        "block": run.block,
        "cell": run.cell,
        "axes": run.axes,
        "axis_order": list(run.axes),  # records are saved with sorted keys
        "seed": run.seed,
        "index": run.index,
        "config": run.config,
        "overrides": list(run.overrides),
        "worker": worker,
        "run_dir": str(run_dir(out_dir, run.run_id)),
    }


def failed_record(run: Run, out_dir: Path, grid_name: str, error: str, worker: str = "") -> dict:
    """The record of a run that failed outside :func:`execute_run` (e.g. its worker died)."""
    record = {**_failed_fields(run), **_base_record(run, Path(out_dir), grid_name, worker)}
    record.update(status="failed", error=error, wall_seconds=None, finished_at=_now())
    return record


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# a W&B failure is retried with less W&B: the run's result matters more than its dashboard
WANDB_FALLBACK = {"online": "offline", "offline": "off"}


def _from_wandb(error: BaseException) -> bool:
    """Whether ``error`` was raised inside the wandb package (network, service, disk)."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and f"{os.sep}wandb{os.sep}" in frames[-1].filename


def _fit(run: Run, out_dir: Path, wandb_mode: str, grid_name: str) -> tuple[dict, str]:
    """``lit_seq.fit`` on ``run``: its metrics record and a warning ("" if all went well)."""
    from lit_seq.fit import METRICS_FILE, cli_main

    folder = run_dir(out_dir, run.run_id)
    warning = ""
    while True:
        shutil.rmtree(folder, ignore_errors=True)  # a leftover of an interrupted attempt
        try:
            return cli_main(run_args(run, out_dir, wandb_mode, grid_name)), warning
        except Exception as err:
            if (folder / METRICS_FILE).exists():  # the results were saved; what failed came after
                return read_json(folder / METRICS_FILE), f"after saving: {_one_line(err)}"
            if wandb_mode not in WANDB_FALLBACK or not _from_wandb(err):
                raise
            _close_wandb()
            fallback = WANDB_FALLBACK[wandb_mode]
            warning = f"W&B {wandb_mode} failed, ran with W&B {fallback}: {_one_line(err)}"
            wandb_mode = fallback


def execute_run(run: Run, out_dir: Path, wandb_mode: str, grid_name: str, worker: str = "") -> dict:
    """Train and test ``run`` in this process and return its record; never raises.

    The run folder is wiped first: anything in it is the leftover of an interrupted attempt.
    An exception (bad config, NaN loss -> FloatingPointError, ...) gives status ``failed``
    with the error as one line; its traceback goes to stderr. W&B trouble only downgrades
    W&B (online -> offline -> off) and is noted under ``warning``.
    """
    out_dir = Path(out_dir)
    started = time.perf_counter()
    record = _base_record(run, out_dir, grid_name, worker)
    try:
        fit_record, warning = _fit(run, out_dir, wandb_mode, grid_name)
        record = {**fit_record, **record, "status": "ok", "error": "", "warning": warning}
        losses = {k: v for k, v in fit_record["metrics"].items() if k.endswith("/loss")}
        if bad := [k for k, v in losses.items() if not math.isfinite(v)]:
            record.update(status="failed", error=f"{bad[0]} is {losses[bad[0]]}: diverged")
    except (Exception, SystemExit) as err:
        traceback.print_exc()
        record = {**_failed_fields(run), **record, "status": "failed", "error": _one_line(err)}
    finally:
        _close_wandb()
    record["wall_seconds"] = round(time.perf_counter() - started, 3)
    record["finished_at"] = _now()
    return record


@contextlib.contextmanager
def _output_to(path: Path):
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


def run_and_record(
    run: Run, out_dir: Path, wandb_mode: str, grid_name: str, worker: str = ""
) -> dict:
    """:func:`execute_run` with its output in ``logs/<run_id>.log``; writes the record."""
    log = Path(out_dir) / LOGS / f"{run.run_id}.log"
    with _output_to(log):
        record = execute_run(run, out_dir, wandb_mode, grid_name, worker)
    record["log"] = str(log)
    write_record(out_dir, record)
    return record


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


def worker_main(
    index: int,
    conn,
    parent_pid: int,
    n_threads: int,
    cuda_device: str | None,
    out_dir: str,
    wandb_mode: str,
    grid_name: str,
) -> None:
    """A local worker process: take runs from ``conn`` until ``None``, send back records."""
    _die_with_parent(parent_pid)
    # Ctrl-C is the driver's to handle: it kills the workers, and their runs rerun next time
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if cuda_device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = cuda_device  # before CUDA is first touched
    os.environ["OMP_NUM_THREADS"] = str(n_threads)  # for whatever reads it from here on
    import torch

    # two 2-thread torch processes on 2 cores run far slower than two 1-thread ones
    torch.set_num_threads(n_threads)
    with contextlib.suppress(RuntimeError):  # only settable before inter-op work starts
        torch.set_num_interop_threads(1)
    import lit_seq.fit  # noqa: F401 - pay the Lightning import once, not once per run

    name = f"local-{index}:{os.getpid()}"
    while True:
        try:
            run = conn.recv()
        except (EOFError, OSError):
            return
        if run is None:
            return
        conn.send(run_and_record(run, Path(out_dir), wandb_mode, grid_name, worker=name))
