"""The grid's summary run in Weights & Biases: the aggregate table and the plots.

One run named ``<grid>-summary`` in the grid's group (``job_type="summary"``), next to the
per-run runs that the workers logged (``job_type="train"``): one per grid folder. Its id is
kept in the folder (``wandb_summary.json``), so a re-run of the grid that trained something
updates that run (W&B resumes it; offline, ``wandb sync`` uploads every part into it)
instead of adding another; a re-run that trained nothing logs nothing, and says so in one
line. After it, the one command that uploads every offline run of the grid is printed. W&B is a view: any failure
here is a warning, since the records and tables on disk are the results.
"""

import glob
import hashlib
import json
import secrets
from pathlib import Path

import pandas as pd
from rich.console import Console

from lit_seq.record import read_records
from lit_seq.util.console import output_console
from lit_seq.util.io import atomic_write_json, read_json

SUMMARY_MARKER = "wandb_summary.json"  # in the grid folder: what the last summary run showed


def records_digest(out_dir: Path) -> str:
    """A hash of the grid's records (ids, statuses, finish times): what a summary shows."""
    state = sorted(
        (run_id, record.status, record.finished_at)
        for run_id, record in read_records(out_dir).items()
    )
    return hashlib.sha256(json.dumps(state).encode()).hexdigest()[:16]


def sync_command(out_dir: Path) -> str:
    """The command that uploads every offline W&B run of the grid (runs, resumes and the
    summary), or "" when there is none."""
    out = Path(out_dir)
    patterns = [f"{out}/runs/*/wandb/offline-run-*", f"{out}/wandb/offline-run-*"]
    found = [p for p in patterns if glob.glob(p)]
    return f"wandb sync {' '.join(found)}" if found else ""


def _marker(out_dir: Path) -> dict:
    """What the last summary run of the folder left: its id, path and the records it showed."""
    try:
        marker = read_json(Path(out_dir) / SUMMARY_MARKER)
    except (OSError, ValueError):
        return {}
    return marker if isinstance(marker, dict) else {}


def summary_run_id(out_dir: Path) -> str:
    """The W&B id of the grid folder's summary run: the one logged before, else a new one."""
    return str(_marker(out_dir).get("id") or secrets.token_hex(4))


def log_summary(
    out_dir: Path,
    grid_name: str,
    mode: str,
    aggregate: pd.DataFrame,
    plots: list[Path],
    config: dict,
    project: str = "lit_seq",
    entity: str | None = None,
    console: Console | None = None,
) -> str:
    """Log the summary run (``mode`` online/offline; ``off`` does nothing); its path or "".

    Nothing new is logged when the records are those of the last summary run (its path is
    returned); else the folder's summary run is updated (created the first time). Prints the
    command that uploads every offline run of the grid.
    """
    if mode == "off":
        return ""
    console = console or output_console()
    digest, marker = records_digest(out_dir), _marker(out_dir)
    path = marker.get("run", "") if marker.get("records") == digest else ""
    if path:
        console.print(
            f"W&B summary run unchanged (nothing new trained): {path}",
            highlight=False,
            soft_wrap=True,
        )
    else:
        run_id = summary_run_id(out_dir)
        where = {"project": project, "entity": entity, "id": run_id}
        path = _log_run(out_dir, grid_name, mode, aggregate, plots, config, where, console)
        if path:
            marker = {"records": digest, "run": path, "id": run_id}
            atomic_write_json(Path(out_dir) / SUMMARY_MARKER, marker)
    if command := sync_command(out_dir):
        console.print(
            f"upload every W&B run of this grid: {command}", highlight=False, soft_wrap=True
        )
    return path


def _log_run(
    out_dir: Path,
    grid_name: str,
    mode: str,
    aggregate: pd.DataFrame,
    plots: list[Path],
    config: dict,
    where: dict,
    console: Console,
) -> str:
    """Log (or update: ``where["id"]`` is the folder's summary run) the summary run."""
    try:
        import wandb

        from lit_seq.fit.wandb_modes import WANDB_INIT_TIMEOUT_S, wandb_run_path

        run = wandb.init(
            **where,  # project, entity and the folder's own run id
            resume="allow",  # the folder's summary run continues, or starts the first time
            name=f"{grid_name}-summary",
            group=grid_name,
            job_type="summary",
            mode=mode,
            dir=str(out_dir),
            config=config,
            # without a reachable server wandb.init would wait its default 90 s
            settings=wandb.Settings(init_timeout=WANDB_INIT_TIMEOUT_S, silent=True),
        )
        try:
            # W&B tables want plain values: NaN -> None, everything else as is
            table = aggregate.astype(object).where(aggregate.notna(), None)
            run.log({"aggregate": wandb.Table(dataframe=table)})
            for path in plots:
                run.log({f"plots/{path.stem}": wandb.Image(str(path))})
            return wandb_run_path(run)
        finally:
            run.finish()
    except Exception as err:  # noqa: BLE001 - the results are safe on disk whatever W&B does
        console.print(f"[yellow]warning:[/] W&B summary run not logged: {err}", highlight=False)
        return ""
