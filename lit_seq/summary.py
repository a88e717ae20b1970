"""Console output of a finished fit: one short table of its test metrics."""

from rich.console import Console
from rich.table import Table

from lit_seq.record import FitResult


def print_metrics(result: FitResult, console: Console | None = None) -> None:
    """Print ``result`` (what ``metrics.json`` holds) as a table with a header line."""
    console = console or Console()
    console.print(
        f"{result.task} / {result.arch}: {result.params:,} params, "
        f"{result.steps} steps in {result.train_seconds:.1f} s "
        f"({result.samples_per_second:.0f} samples/s)",
        highlight=False,
        soft_wrap=True,
    )
    table = Table("metric", "value")
    table.columns[1].justify = "right"
    for key, value in sorted(result.metrics.items()):
        table.add_row(key, f"{value:.4g}")
    console.print(table)
    console.print(f"run folder: {result.run_dir}", highlight=False, soft_wrap=True)
