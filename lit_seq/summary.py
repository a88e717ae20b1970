"""Console output of a finished fit: one short table of its test metrics."""

from rich.console import Console
from rich.table import Table


def print_metrics(record: dict, console: Console | None = None) -> None:
    """Print ``record`` (the content of ``metrics.json``) as a table with a header line."""
    console = console or Console()
    console.print(
        f"{record['task']} / {record['arch']}: {record['params']:,} params, "
        f"{record['steps']} steps in {record['train_seconds']:.1f} s "
        f"({record['samples_per_second']:.0f} samples/s)",
        highlight=False,
        soft_wrap=True,
    )
    table = Table("metric", "value")
    table.columns[1].justify = "right"
    for key, value in sorted(record["metrics"].items()):
        table.add_row(key, f"{value:.4g}")
    console.print(table)
    console.print(f"run folder: {record['run_dir']}", highlight=False, soft_wrap=True)
