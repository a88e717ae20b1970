"""Rebuild a grid's tables and plots from its records alone.

    python -m lit_seq.report results/smoke

Reads ``DIR/records/*.json`` and (re)writes ``runs.{csv,parquet,md}``,
``aggregate.{csv,parquet,md}``, ``summary.md``, ``best.{csv,md}``, ``phases.{csv,md}``,
``comparisons.{csv,md}`` and ``plots/*.png`` in ``DIR``, then prints the summary (the main metric per task and cell).
``--pairs FILE`` adds a results page's own comparisons (a YAML list of ``{a, b, metric}``,
cells named as ``lit_seq.compare`` names them) to the grid's, under one BH adjustment; the
page cites their rows (``python -m lit_seq.results.claims PAGE`` checks it does).
``--tables FILE`` writes ``tables.md``: a page's own tables of cells side by side (a YAML
list of ``{title, columns, rows}``, ``lit_seq.results.page_tables``).
``--anchors FILE`` writes ``anchors.{csv,md}``: each published claim of a page (a YAML list of
``{anchor, setting, claim, a, b, metric, expect}``) beside the comparison row that tests it,
agrees / disagrees / inconclusive (``lit_seq.results.anchors``).
Then it prints where the grid's hours went (``phases.{csv,md}``: wall and CPU seconds by
phase, in total and by cell, from each record's ``phase_seconds``; records made before
runs kept them are counted apart, ``lit_seq.results.hours``).
``--paper deletang2023`` adds ``paper.{csv,md}``: the grid beside Delétang et al. 2023's
Table 2 rows (``lit_seq.results.paper``); a grid whose file names ``paper:`` gets them
when it ends.
The grid driver calls the same code when a grid ends, so both give identical tables.
"""

import argparse
import sys
from pathlib import Path

import pandas as pd

from lit_seq.results.hours import phase_markdown
from lit_seq.results.paper import PAPERS
from lit_seq.results.report import NoRecords, build_report

SHOWN_CELLS = 20  # cells printed below the total; phases.md holds them all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lit_seq.report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dir", type=Path, help="output folder of a grid (holds records/)")
    parser.add_argument(
        "--pairs",
        type=Path,
        default=None,
        help="YAML list of {a, b, metric}: a page's own comparisons, added to comparisons.*",
    )
    parser.add_argument(
        "--tables",
        type=Path,
        default=None,
        help="YAML list of {title, columns, rows}: a page's own tables of cells side by side, "
        "written to tables.md",
    )
    parser.add_argument(
        "--anchors",
        type=Path,
        default=None,
        help="YAML list of {anchor, setting, claim, a, b, metric, expect}: published claims, "
        "each tested as one more comparison and written beside it to anchors.{csv,md}",
    )
    parser.add_argument(
        "--paper",
        choices=sorted(PAPERS),
        default=None,
        help="also write paper.{csv,md}: the grid beside this paper's published rows",
    )
    args = parser.parse_args(argv)
    try:
        build_report(
            args.dir, pairs=args.pairs, paper=args.paper, tables=args.tables, anchors=args.anchors
        )
    except (NoRecords, ValueError) as err:
        print(f"lit_seq.report: error: {err}", file=sys.stderr)
        return 2
    print_phases(args.dir)
    return 0


def print_phases(out_dir: Path, most: int = SHOWN_CELLS) -> None:
    """The grid's seconds by phase (``phases.md``, just written): the total and the first
    ``most`` cells, the rest in the file."""
    table = pd.read_csv(out_dir / "phases.csv", keep_default_na=False)
    print(phase_markdown(table.head(most + 1)), end="")
    if len(table) > most + 1:
        print(f"... {len(table) - most - 1} more cells in {out_dir / 'phases.md'}")


if __name__ == "__main__":
    sys.exit(main())
