"""The grid's summary run in Weights & Biases: the aggregate table and the plots.

One run named ``<grid>-summary`` in the grid's group (``job_type="summary"``), next to the
per-run runs that the workers logged. W&B is a view: any failure here is a warning, since
the records and tables on disk are the results.
"""

from pathlib import Path

import pandas as pd
from rich.console import Console


def log_summary(
    out_dir: Path,
    grid_name: str,
    mode: str,
    aggregate: pd.DataFrame,
    plots: list[Path],
    config: dict,
    project: str = "lit_seq",
    console: Console | None = None,
) -> str:
    """Log the summary run (``mode`` online/offline; ``off`` does nothing); its path or ""."""
    if mode == "off":
        return ""
    console = console or Console()
    try:
        import wandb

        from lit_seq.tracking import WANDB_INIT_TIMEOUT_S, wandb_run_path

        run = wandb.init(
            project=project,
            name=f"{grid_name}-summary",
            group=grid_name,
            job_type="summary",
            mode=mode,
            dir=str(out_dir),
            config=config,
            # without a reachable server wandb.init would wait its default 90 s
            settings=wandb.Settings(init_timeout=WANDB_INIT_TIMEOUT_S),
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
