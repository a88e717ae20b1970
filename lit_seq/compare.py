"""Compare two cells of a finished grid: the paired difference of a metric with its interval.

    python -m lit_seq.compare results/matrix "echo_pos pos_mode=sinusoidal residual=true" \
        "echo_pos pos_mode=none residual=true" --metric test_len40/acc_ood

A cell is its id or any words that name only it: its block name, axis values (``none``) or
``axis=value`` (a dotted axis by its last part): ``sinusoidal`` and ``none`` above, if no
other cell has them. Words that name several cells are refused with the list of them.

Prints each shared seed's value in both cells and their difference (b - a), then the mean
difference with its 95% bootstrap interval, the exact sign-flip p-value and the verdict: a
direction only when p < 0.05, else "no difference detected" (with too few shared seeds for
any p below 0.05 it says how many it would take), and which value a ``select:`` block chose
for each cell. ``--metric fits_n`` compares the cells' success rates, seed by seed: 1 where
a seed fits N (``test/<main>`` >= 0.99), else 0. Reads the records alone, as the report
does; a ``select:`` block's cell stands for its selected runs.
"""

import argparse
import sys
from pathlib import Path

from rich.table import Table

from lit_seq.record import read_records
from lit_seq.results.compare import (
    CellNotFound,
    compare_cells,
    difference_lines,
    find_cell,
    selection_notes,
)
from lit_seq.results.fits import main_metrics, metric_values
from lit_seq.results.tables import aggregate_table, runs_table
from lit_seq.util.console import output_console


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lit_seq.compare",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dir", type=Path, help="output folder of a grid (holds records/)")
    parser.add_argument(
        "a",
        help="cell a: its id, or any words that name only it: its block name, axis values "
        "(none) or axis=value (pos_mode=none)",
    )
    parser.add_argument("b", help="cell b, likewise; the difference is b - a")
    parser.add_argument(
        "--metric",
        default=None,
        help="metric to compare (default: test/<main metric>); fits_n: 1 for a seed that fits "
        "N (test/<main> >= 0.99), else 0, so b - a is the difference of the success rates",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    records = list(read_records(args.dir).values())
    if not records:
        print(f"lit_seq.compare: error: {str(args.dir)!r} holds no run records", file=sys.stderr)
        return 2
    runs = runs_table(records)
    aggregate = aggregate_table(runs)
    metric = args.metric or f"test/{records[0].main_metric or 'acc'}"
    try:
        cells = list(aggregate["cell"])
        a, b = find_cell(cells, args.a), find_cell(cells, args.b)
        mains = main_metrics(aggregate)
        cell_a, cell_b, values_a, values_b, diff = compare_cells(
            runs, aggregate, a, b, metric, values=lambda r, c, m: metric_values(r, c, m, mains[c])
        )
    except CellNotFound as err:
        print(f"lit_seq.compare: error: {err}", file=sys.stderr)
        return 2
    console = output_console()
    table = Table(title=f"{metric}: b - a over {len(diff.seeds)} shared seeds")
    for column in ("seed", "a", "b", "b - a"):
        table.add_column(column, justify="right")
    for seed, d in zip(diff.seeds, diff.differences, strict=True):
        table.add_row(str(seed), f"{values_a[seed]:.4f}", f"{values_b[seed]:.4f}", f"{d:+.4f}")
    console.print(f"a = {cell_a}\nb = {cell_b}", highlight=False)
    console.print(table)
    for line in difference_lines(diff) + selection_notes(aggregate, {"a": cell_a, "b": cell_b}):
        console.print(line, highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
