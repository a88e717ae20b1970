"""Delétang et al.'s Table 2 laid out from several grids' ``paper.csv``, for chomsky.md.

    python scripts/table2_page.py docs/results/chomsky_faithful \\
        docs/results/chomsky_memory_cpu docs/results/chomsky_memory_budget

Each folder is a grid's output (``python -m lit_seq.report DIR --paper deletang2023``
wrote its ``paper.csv``); a row is taken from the first folder that ran it, so list the
grid whose row the page reports first. Prints the 15 x 6 table (``lit_seq.results.table2``),
the folder each row came from, and the thesis row; nothing is trained or rescored.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from lit_seq.results import table2


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="grid output folders, first wins")
    args = parser.parse_args(argv)
    tables = []
    for folder in args.dirs:
        path = folder / "paper.csv"
        if not path.exists():
            parser.error(
                f"{path}: no paper.csv (run python -m lit_seq.report {folder} --paper deletang2023)"
            )
        tables.append((folder.name, pd.read_csv(path)))
    rows = table2.combine(tables)
    print(table2.layout_markdown(rows))
    counts = rows["grid"].value_counts()
    print("Rows from: " + ", ".join(f"{name} {int(counts.get(name, 0))}" for name, _ in tables))
    print()
    print(table2.thesis_markdown(rows))


if __name__ == "__main__":
    main()
