"""Console output of a finished fit: one short table of its test metrics."""

from rich.console import Console
from rich.table import Table


def print_metrics(record: dict, console: Console | None = None) -> None:
    """Print ``record`` (the content of ``metrics.json``) as a table."""
    console = console or Console()
    table = Table(title=f"{record['task']} / {record['arch']}  ({record['params']:,} params)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in sorted(record["metrics"].items()):
        table.add_row(key, f"{value:.4f}")
    table.caption = (
        f"{record['steps']} steps in {record['train_seconds']:.1f} s "
        f"({record['samples_per_second']:.0f} samples/s) -> {record['run_dir']}"
    )
    console.print(table)
