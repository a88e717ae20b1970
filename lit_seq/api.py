"""lit_seq from Python (a notebook, a script): train one configuration, or run a grid.

    import lit_seq

    fit = lit_seq.fit_one("configs/echo/rnn.yaml", {"steps": 50, "wandb.mode": "off"})
    fit.metrics["test/acc"], fit.run_dir, fit.best_checkpoint

    grid = lit_seq.run_grid("ablations/smoke.yaml", out="results/smoke", wandb="off")
    grid.runs  # the runs table (pandas), one row per run

Each is its command called in-process (``python -m lit_seq.fit``, ``python -m
lit_seq.ablate``), with the same checks, run folders and records, from an argument list
built from the call: ``sys.argv`` is never read (a notebook's holds the kernel's arguments;
pass ``sys.argv[1:]`` as ``overrides`` to take a script's). As quiet as the commands
(Lightning's info lines and warnings off for the call, as they were after it). Calling again
is a new fit in a new run folder, unless ``run_dir`` and ``resume=True`` continue one; a grid
called again with the same ``out`` resumes there, as its command does.

Importing this module (and ``lit_seq``) loads neither torch nor Lightning: the calls do.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from lit_seq.record import FitResult


@dataclass(frozen=True)
class FitRun:
    """One finished fit: its scores and where its files are.

    Paths are absolute. ``metrics``: every test set's (``test/acc``, ``test_len40/acc``, ...); ``val_metrics``:
    the scored weights' on the validation set (what a grid selects on); ``best_checkpoint``:
    None with ``score_weights: last``; ``record``: the whole ``metrics.json``."""

    metrics: dict[str, float]
    val_metrics: dict[str, float]
    run_dir: Path
    best_checkpoint: Path | None
    last_checkpoint: Path
    record: FitResult


@dataclass(frozen=True)
class GridRun:
    """A grid after a call: its folder, its tables and how the call ended.

    ``runs``: one row per run with a record (``runs.csv``'s columns); ``aggregate``: one
    row per cell (empty until the report ran); ``status``: the command's exit code (0 every
    run ok, 1 some failed, 124 / 130 / 143 stopped: call again to resume); ``failed``: the
    ids of the runs whose record is not ok."""

    out_dir: Path
    runs: pd.DataFrame
    aggregate: pd.DataFrame
    status: int
    failed: list[str]


def fit_args(overrides: dict | list[str] | None) -> list[str]:
    """Fit arguments from ``overrides``: a list of command-line arguments as it is, or a
    mapping of grid keys (``steps``, ``lr``: ``lit_seq.ablate.axes.AXES``) or dotted config
    paths (``model.dropout``, ``wandb.mode``) to values."""
    if overrides is None:
        return []
    if isinstance(overrides, list | tuple):
        return [str(a) for a in overrides]
    from lit_seq.ablate.axes import AXES
    from lit_seq.record import format_value

    return [f"--{AXES.get(k) or k}={format_value(v)}" for k, v in overrides.items()]


def fit_one(
    config: str | Path | dict,
    overrides: dict | list[str] | None = None,
    *,
    run_dir: str | Path | None = None,
    resume: bool = False,
) -> FitRun:
    """Train, test and score one configuration, as ``python -m lit_seq.fit`` does.

    Args:
        config: a YAML file (a path, or a shipped config's such as ``configs/echo/rnn.yaml``)
            or the same content as a dict.
        overrides: what ``--KEY VALUE`` would set (see :func:`fit_args`), after ``config``.
        run_dir: the run folder (default: a new ``runs/<task>-<arch>-<time>`` each call).
        resume: continue the interrupted fit of ``run_dir`` from its last checkpoint.

    Raises ``lit_seq.fit.BadInput`` (one line) for a configuration a fit refuses, before
    anything is written; FloatingPointError for a fit that diverged.
    """
    from lit_seq.fit import cli_main
    from lit_seq.util.runtime import quieted

    if resume and run_dir is None:
        raise ValueError("resume=True continues the fit of run_dir; give its run folder")
    args = fit_args(overrides)
    args += [f"--run_dir={run_dir}"] if run_dir is not None else []
    args += ["--ckpt_path=last"] if resume else []
    with tempfile.TemporaryDirectory(prefix="lit_seq-") as scratch, quieted():
        result = cli_main(["--config", _config_file(config, Path(scratch)), *args])
    best = result.best_checkpoint
    # absolute: a notebook that changes its directory later still finds them
    return FitRun(
        metrics=dict(result.metrics),
        val_metrics=dict(result.val_metrics),
        run_dir=Path(result.run_dir).absolute(),
        best_checkpoint=Path(best).absolute() if best else None,
        last_checkpoint=Path(result.last_checkpoint).absolute(),
        record=result,
    )


def _config_file(config: str | Path | dict, scratch: Path) -> str:
    """``config`` as a file the fit's ``--config`` reads: a dict written as YAML into
    ``scratch`` (the run folder keeps its own ``config.yaml``, what a resume reads)."""
    if not isinstance(config, dict):
        return str(config)
    import yaml

    path = scratch / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return str(path)


def run_grid(
    grid: str | Path | dict,
    *,
    out: str | Path | None = None,
    workers: int = 1,
    threads: int = 1,
    wandb: str = "auto",
    flags: list[str] | None = None,
) -> GridRun:
    """Run what is left of a grid, then its report, as ``python -m lit_seq.ablate`` does.

    Args:
        grid: a grid file (``ablations/smoke.yaml``, or a shipped grid's name) or a grid as
            a dict (the same keys: ``name``, ``seeds``, ``overrides``, ``blocks``, ...).
        out: the grid's folder (default ``results/<grid name>``); the same ``out`` again
            resumes it, and a different grid there is refused.
        workers: parallel runs, each a worker process of its own.
        threads: torch threads of every run.
        wandb: ``auto``, ``online``, ``offline`` or ``off``.
        flags: more of the command's options, e.g. ``["--pack", "off"]``.

    Raises ``lit_seq.ablate.common.BadGrid`` (one line) for a grid the command refuses,
    before anything is written or trained.
    """

    from lit_seq.ablate.__main__ import build_parser, drive
    from lit_seq.util.console import output_console
    from lit_seq.util.runtime import quieted

    argv = [] if isinstance(grid, dict) else [str(grid)]
    argv += ["--out", str(out)] if out is not None else []
    argv += ["--workers", str(workers), "--threads", str(threads), "--wandb", wandb]
    args = build_parser().parse_args([*argv, *(flags or [])])
    with quieted():
        status, out_dir = drive(
            args, output_console(), raw=grid if isinstance(grid, dict) else None
        )
    return _grid_run(out_dir, status)


def _grid_run(out_dir: Path, status: int) -> GridRun:
    """The tables of the grid folder ``out_dir`` as its records have them now."""
    import pandas as pd

    from lit_seq.record import read_records
    from lit_seq.results.tables import runs_table

    records = read_records(out_dir) if out_dir.is_dir() else {}
    aggregate = out_dir / "aggregate.csv"
    return GridRun(
        out_dir=out_dir,
        runs=runs_table(list(records.values())) if records else pd.DataFrame(),
        aggregate=pd.read_csv(aggregate) if aggregate.is_file() else pd.DataFrame(),
        status=status,
        failed=[run_id for run_id, record in records.items() if not record.ok],
    )
