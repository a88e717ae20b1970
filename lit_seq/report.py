"""Rebuild a grid's tables and plots from its records alone.

    python -m lit_seq.report results/smoke

Reads ``DIR/records/*.json`` and (re)writes ``runs.{csv,parquet,md}``,
``aggregate.{csv,parquet,md}``, ``summary.md`` and ``plots/*.png`` in ``DIR``, then prints
the summary (the main metric per task and cell).
The grid driver calls the same code when a grid ends, so both give identical tables.
"""

import argparse
import sys
from pathlib import Path

import pandas as pd
from rich.console import Console

from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.plots import write_plots
from lit_seq.ablate.records import read_records
from lit_seq.ablate.tables import aggregate_table, print_aggregate, runs_table, write_tables


def build_report(
    out_dir: Path, console: Console | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, list[Path]]:
    """Write the tables and plots of ``out_dir``; return (runs, aggregate, plot paths)."""
    records = list(read_records(out_dir).values())
    if not records:
        raise BadGrid(f"{str(out_dir)!r} holds no run records (records/*.json)")
    runs = runs_table(records)
    aggregate = aggregate_table(runs)
    write_tables(out_dir, runs, aggregate)
    plots = write_plots(out_dir, runs)
    print_aggregate(aggregate, console)
    return runs, aggregate, plots


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lit_seq.report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dir", type=Path, help="output folder of a grid (holds records/)")
    args = parser.parse_args(argv)
    try:
        build_report(args.dir)
    except BadGrid as err:
        print(f"lit_seq.report: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
