"""A grid folder's report: its tables and plots, written from its records alone."""

from pathlib import Path

import pandas as pd
from rich.console import Console

from lit_seq.record import RECORDS, read_records
from lit_seq.results.plots import write_plots
from lit_seq.results.tables import aggregate_table, print_aggregate, runs_table, write_tables


class NoRecords(ValueError):
    """The folder holds no run records: there is nothing to report."""


def build_report(
    out_dir: Path, console: Console | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, list[Path]]:
    """Write the tables and plots of ``out_dir``, print the summary; (runs, aggregate, plots)."""
    records = list(read_records(out_dir).values())
    if not records:
        raise NoRecords(f"{str(out_dir)!r} holds no run records ({RECORDS}/*.json)")
    runs = runs_table(records)
    aggregate = aggregate_table(runs)
    write_tables(out_dir, runs, aggregate)
    plots = write_plots(out_dir, runs)
    print_aggregate(aggregate, console)
    return runs, aggregate, plots
