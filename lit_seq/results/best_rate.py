"""Zoology's aggregate recomputed from our runs: the best learning rate's score, seed by seed.

Zoology (Arora et al. 2024; its README) trains each model at 4 learning rates on 1 seed and
reports the best rate's accuracy: the maximum over rates of one seed's score, the rate
chosen on the score it reports. Our pages report something else, the mean over fresh seeds
at the rate chosen on validation by other seeds. To put their protocol beside ours, a page
table (``lit_seq.results.page_tables``, key ``best_rate``) adds a column with their number
recomputed from our runs.

The closest like-for-like is their statistic replicated, not a new one: for each seed that
ran at every rate of a cell's sweep (the selection seeds, 100-102 on the mixers grids; the
reported seeds ran at the winner only), the maximum over rates of that seed's score is one
draw of Zoology's number; the column gives the mean of those draws and their range. The
maximum of the per-rate means would be a different, lower quantity (the best rate on
average, not the best rate of each seed), and mixing in the reported seeds would weight
the winning rate by 13 seeds and the others by 3. A cell that sets its rate (no sweep) has
one rate: each of its seeds is its own draw.

Worked example: rates 0.001 and 0.01 on selection seeds 100 and 101, test/acc 0.30 / 0.90
(seed 100) and 0.95 / 0.50 (seed 101): the draws are 0.90 and 0.95, the column
``0.925 (2 seeds, 0.900-0.950; best of 2 rates)``; the per-rate means (0.625, 0.700) would
give 0.700.
"""

from __future__ import annotations

import pandas as pd


def best_rate_values(runs: pd.DataFrame, cell: str, metric: str) -> tuple[dict[int, float], int]:
    """(seed -> the maximum of ``metric`` over ``cell``'s rates at that seed, the number of
    rates), over the seeds whose ok runs cover every rate of the cell's sweep.

    ``cell``: an aggregate cell, a ``select:`` block's ``select_group`` (its competing runs
    and the reported runs at the winner) or a cell without a sweep (each ok run one draw).
    """
    ok = runs[(runs["status"] == "ok") & runs[metric].notna()] if metric in runs else runs[:0]
    contest = ok[ok["select_group"] == cell] if "select_group" in ok else ok[:0]
    if contest.empty:  # a rate the grid sets: one rate, each seed's score its own draw
        rows = ok[ok["cell"] == cell]
        return {int(s): float(v) for s, v in zip(rows["seed"], rows[metric], strict=True)}, 1
    axis = contest["select_axis"].iloc[0]  # the swept axis, its value on every run
    n_rates = contest[axis].nunique()
    draws = {}
    for seed, runs_of_seed in contest.groupby("seed"):
        if runs_of_seed[axis].nunique() == n_rates:  # a seed that ran at every rate
            draws[int(seed)] = float(runs_of_seed[metric].max())
    return draws, n_rates


def best_rate_text(runs: pd.DataFrame, cell: str, metric: str) -> str:
    """``0.925 (2 seeds, 0.900-0.950; best of 2 rates)``: the mean of the draws of
    :func:`best_rate_values`, how many and their range; "-" where there is none."""
    draws, n_rates = best_rate_values(runs, cell, metric)
    if not draws:
        return "-"
    values = list(draws.values())
    mean = sum(values) / len(values)
    rates = "best of 1 rate" if n_rates == 1 else f"best of {n_rates} rates"
    seeds = "1 seed" if len(values) == 1 else f"{len(values)} seeds"
    return f"{mean:.3f} ({seeds}, {min(values):.3f}-{max(values):.3f}; {rates})"
