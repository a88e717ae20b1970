"""Two cells of a grid side by side: the paired difference of a metric over shared seeds.

A cell is named by words that must all appear among the ``__``-separated parts of its id
(the block name and ``axis=value`` pairs; a dotted key may be given by its last part,
``start_marker=true`` for ``data.start_marker=true``), e.g. ``echo_pos pos_mode=none``;
a ``select:`` block's cell is its group, the selected runs per seed standing for it.
"""

from __future__ import annotations

import pandas as pd

from lit_seq.results.stats import PairedDifference, paired_difference


class CellNotFound(ValueError):
    """The words name no cell of the grid, or more than one."""


def find_cell(aggregate: pd.DataFrame, words: str) -> str:
    """The one cell id whose parts include every word of ``words``; CellNotFound else."""
    wanted = words.split()
    cells = list(aggregate["cell"])
    if words in cells:
        return words

    def has(cell: str, word: str) -> bool:
        return any(part == word or part.endswith(f".{word}") for part in cell.split("__"))

    matches = [c for c in cells if all(has(c, w) for w in wanted)]
    if len(matches) != 1:
        some = matches[:5] if matches else cells[:5]
        what = f"{len(matches)} cells match" if matches else "no cell matches"
        raise CellNotFound(f"{words!r}: {what}; for example {some}")
    return matches[0]


def seed_values(runs: pd.DataFrame, cell: str, metric: str) -> dict[int, float]:
    """seed -> ``metric`` of the ok runs standing for ``cell`` (after ``select:``)."""
    kept = runs[runs["selected"].ne(False) & (runs["status"] == "ok")]
    rows = kept[(kept["cell"] == cell) | (kept["select_group"] == cell)]
    if metric not in rows:
        known = sorted(c for c in runs.columns if c.startswith(("test", "val/")))
        raise CellNotFound(f"metric {metric!r} is not one of {known}")
    rows = rows.dropna(subset=[metric])
    return {int(s): float(v) for s, v in zip(rows["seed"], rows[metric], strict=True)}


def compare_cells(
    runs: pd.DataFrame, aggregate: pd.DataFrame, a: str, b: str, metric: str
) -> tuple[str, str, dict[int, float], dict[int, float], PairedDifference]:
    """(cell a, cell b, a's values, b's values, b - a over their shared seeds)."""
    cell_a, cell_b = find_cell(aggregate, a), find_cell(aggregate, b)
    values_a, values_b = seed_values(runs, cell_a, metric), seed_values(runs, cell_b, metric)
    return cell_a, cell_b, values_a, values_b, paired_difference(values_a, values_b)
