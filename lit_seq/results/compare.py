"""Two cells of a grid side by side: the paired difference of a metric over shared seeds.

A cell is named by its id or by words that each name one of the ``__``-separated parts of
its id (:func:`find_cell`: the block name, ``axis=value`` with a dotted key by its last part,
``start_marker=true`` for ``data.start_marker=true``, or a value alone), e.g. ``echo_pos
pos_mode=none`` or ``echo_pos none``;
a ``select:`` block's cell is its group, the runs at the selected value standing for it.

What ``lit_seq.compare`` prints below its per-seed table is :func:`difference_lines` (the
mean difference, its 95% bootstrap interval, the exact sign-flip p and the verdict, and
what too few seeds cannot show) and :func:`selection_notes` (how each cell's ``select:``
chose, flagged when the winner ends its sweep). Worked example: b - a = [0.20, 0.22, 0.19]
-> ``mean difference +0.2033 [+0.1900, +0.2200] (95% bootstrap, n=3); sign-flip p = 0.25
(exact: all 8 sign patterns): no difference detected``, then that 3 seeds can never give
p below 0.05 (their least p is 0.25).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from lit_seq.results.stats import (
    ALPHA,
    SIGN_PATTERNS,
    PairedDifference,
    paired_difference,
    smallest_sign_flip_p,
)


class CellNotFound(ValueError):
    """The words name no cell of the grid, or more than one."""


LISTED = 20  # cells listed when the words match none (all of them, when ambiguous)


def _matches(word: str, parts: list[str]) -> bool:
    """Whether ``word`` names one of a cell id's parts: the block name, ``axis=value`` (a
    dotted axis by its last part too: ``dropout=0.1`` for ``model.dropout=0.1``) or a value
    alone (``none`` for ``pos_mode=none``)."""
    for part in parts:
        key, _, value = part.partition("=")
        if word in (part, value):
            return True
        wanted, eq, wanted_value = word.partition("=")
        if eq and wanted_value == value and (key == wanted or key.endswith(f".{wanted}")):
            return True
    return False


def find_cell(cells: list[str], words: str) -> str:
    """The one cell of ``cells`` that ``words`` name (its id, or any subset of its block name
    and axis values); CellNotFound listing the candidates when none or several match."""
    if words in cells:
        return words
    matching = [c for c in cells if all(_matches(w, c.split("__")) for w in words.split())]
    if len(matching) == 1:
        return matching[0]
    if matching:
        listed = "".join(f"\n  {c}" for c in matching)
        raise CellNotFound(
            f"{words!r} matches {len(matching)} cells; add a value to pick one:{listed}"
        )
    more = f"\n  ... and {len(cells) - LISTED} more" if len(cells) > LISTED else ""
    listed = "".join(f"\n  {c}" for c in cells[:LISTED])
    raise CellNotFound(
        f"{words!r} matches no cell; give a cell id, or words that each are its block name, an "
        f"axis value or axis=value (a dotted axis by its last part). The cells:{listed}{more}"
    )


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
    runs: pd.DataFrame,
    aggregate: pd.DataFrame,
    a: str,
    b: str,
    metric: str,
    values: Callable[[pd.DataFrame, str, str], dict[int, float]] = seed_values,
) -> tuple[str, str, dict[int, float], dict[int, float], PairedDifference]:
    """(cell a, cell b, a's values, b's values, b - a over their shared seeds); ``values``
    reads a cell's seed -> value (``lit_seq.results.fits.metric_values`` also knows
    ``fits_n``)."""
    cells = list(aggregate["cell"])
    cell_a, cell_b = find_cell(cells, a), find_cell(cells, b)
    values_a, values_b = values(runs, cell_a, metric), values(runs, cell_b, metric)
    return cell_a, cell_b, values_a, values_b, paired_difference(values_a, values_b)


def difference_lines(diff: PairedDifference) -> list[str]:
    """The mean of ``diff`` with its interval, p and verdict; and, when its seeds are too
    few for any p below 0.05, how many it would take."""
    iv = diff.interval
    if iv.n < 2:
        return [f"mean difference {iv.mean:+.4f} over {iv.n} shared seed(s): {diff.verdict}"]
    patterns = 2**iv.n
    exact = patterns <= SIGN_PATTERNS
    how = f"exact: all {patterns} sign patterns" if exact else f"{SIGN_PATTERNS} sampled patterns"
    lines = [
        f"mean difference {iv.mean:+.4f} [{iv.low:+.4f}, {iv.high:+.4f}] (95% bootstrap, "
        f"n={iv.n}); sign-flip p = {diff.p:.4g} ({how}): {diff.verdict}"
    ]
    least = smallest_sign_flip_p(iv.n)
    if least >= ALPHA:
        need = next(n for n in range(iv.n, 64) if smallest_sign_flip_p(n) < ALPHA)
        lines.append(
            f"{iv.n} seeds can never give p below {ALPHA} (their least p is {least:.4g}): "
            f"a difference needs at least {need} shared seeds to be detected"
        )
    return lines


def selection_notes(aggregate: pd.DataFrame, cells: dict[str, str]) -> list[str]:
    """``a: lr=0.003 by mean val/acc on seeds 100 101 102 ...`` for each of ``cells``
    (label -> cell id) that a ``select:`` block chose a value for."""
    rows = aggregate.set_index("cell")
    notes = []
    for label, cell in cells.items():
        chosen = rows.loc[cell].get("selected") if cell in rows.index else None
        if isinstance(chosen, str) and chosen:
            notes.append(f"{label}: {chosen}")
    return notes
