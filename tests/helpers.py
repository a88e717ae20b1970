"""Small helpers shared by the tests: tiny fits, tiny grids, the grid command line."""

import dataclasses
import inspect
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from lit_seq.ablate.grid import check_cells
from lit_seq.ablate.spec import Run, expand, load_spec, parse_spec
from lit_seq.fit import cli_main
from lit_seq.models import BackboneOptions
from lit_seq.record import FitResult, RunRecord
from lit_seq.systems import SequenceSystem
from lit_seq.util.assets import CONFIG_DIR, GRID_DIR

REPO = Path(__file__).resolve().parent.parent
CONFIGS = sorted(CONFIG_DIR.glob("*/*.yaml"))
GRIDS = sorted(GRID_DIR.glob("*.yaml"))
SMOKE = GRID_DIR / "smoke.yaml"

# fast settings for any config: a few steps, no progress bar, no model summary
TINY = [
    "--trainer.max_steps=6",
    "--trainer.val_check_interval=3",
    "--trainer.limit_val_batches=2",
    "--trainer.limit_test_batches=2",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--wandb=off",
]

# the same for a grid: a few steps on a few examples, each run takes about a second
TINY_GRID = """
overrides:
  steps: 6
  val_every: 3
  warmup_steps: 2
  batch_size: 32
  data.init_args.n_train: 64
  data.init_args.n_val: 32
  data.init_args.n_test: 32
  data.init_args.gen_factors: [2]
"""


def backbone_options(**chosen) -> BackboneOptions:
    """``BackboneOptions`` with the system's defaults (``SequenceSystem.__init__``'s) but for
    the ``chosen`` ones: what a test builds a network from by hand."""
    defaults = inspect.signature(SequenceSystem.__init__).parameters
    fields = {f.name: defaults[f.name].default for f in dataclasses.fields(BackboneOptions)}
    return BackboneOptions(**{**fields, **chosen})


def tiny_fit(config: Path, run_dir: Path, *overrides: str) -> FitResult:
    """Run ``lit_seq.fit`` in-process on ``config`` with tiny settings; return its result."""
    return cli_main(["--config", str(config), f"--run_dir={run_dir}", *TINY, *overrides])


def driver(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """``python -m lit_seq.ablate ARGS`` in a subprocess, from the repository."""
    command = [sys.executable, "-m", "lit_seq.ablate", *map(str, args)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def write_grid(folder: Path, name: str, body: str) -> Path:
    """A grid file ``name`` with :data:`TINY_GRID` settings and ``body`` (seeds, blocks)."""
    path = folder / f"{name}.yaml"
    path.write_text(f"name: {name}\n{TINY_GRID}{body}")
    return path


def echo_rnn_runs(seeds: list[int] | None = None, tiny: bool = False) -> list[Run]:
    """The checked runs of a one-cell grid ``g`` (echo / rnn) over ``seeds``.

    ``tiny``: with the :data:`TINY_GRID` settings (else the shipped config as it is).
    """
    spec = {
        "name": "g",
        "seeds": seeds or [0],
        "blocks": [{"axes": {"task": ["echo"], "arch": ["rnn"]}}],
    }
    if tiny:
        spec.update(yaml.safe_load(TINY_GRID))
    return check_cells(expand(parse_spec(spec)), "g")


def arch_record(block: str, task: str, arch: str, seed: int, metrics: dict, index: int):
    """The ok record of one seed of cell ``<block>__arch=<arch>`` (a one-axis cell, main
    metric acc), as a grid writes it: for report and comparison tests without training."""
    cell = f"{block}__arch={arch}"
    return RunRecord(
        run_id=f"{cell}__seed={seed}",
        block=block,
        cell=cell,
        task=task,
        arch=arch,
        axes={"arch": arch},
        axis_order=["arch"],
        seed=seed,
        main_metric="acc",
        status="ok",
        metrics=metrics,
        index=index,
    )


def report_cells(grid: str) -> list[str]:
    """The cells of shipped grid ``grid`` as its report names them: a ``select:`` block's
    runs under their ``select_group`` (the cell without the selected axis)."""
    return sorted({run.select_group or run.cell for run in expand(load_spec(GRID_DIR / grid))})


def sigterm_once_file_exists(path: Path, timeout: float = 120) -> threading.Thread:
    """A started thread that sends this process SIGTERM once ``path`` exists (a fit that is
    training has written it); it gives up after ``timeout`` seconds."""

    def kill() -> None:
        deadline = time.time() + timeout
        while not path.exists():
            if time.time() > deadline:
                return
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is no zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def driver_workers(driver_pid: int) -> list[int]:
    """The driver's worker processes (not multiprocessing's resource tracker)."""
    found = []
    for pid in children(driver_pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline:
            found.append(pid)
    return found
