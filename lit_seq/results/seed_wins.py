"""Seed luck: does one seed win its cells more often than chance?

Seeds are exchangeable draws when nothing chose them: then, in every cell whose best score
is held by one seed, each of the cell's n seeds is that winner with chance 1/n. A seed that
chose the cell's learning rate breaks this (an audit of an older protocol found seed 0, the
selection seed then, best in 36 of 47 cells). So, per cell of reported runs (``selected``
not False, ``ok``), on the page's score: the winner (the one seed with the highest score;
cells whose best is tied are left out: they cannot tell), then, for the seed that won most
often, the exact binomial p of winning at least that many of the m untied cells by chance
(``scipy.stats.binomtest``, one-sided), times the number of seeds (Bonferroni: it is the
largest of n counts). Worked example: 12 untied cells of 10 seeds, seed 0 wins 5: binomial
P(X >= 5 | 12, 0.1) = 0.0043, times 10 = 0.043: more often than chance.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd
from scipy.stats import binomtest

from lit_seq.results.stats import ALPHA


@dataclass(frozen=True)
class SeedWins:
    """Wins per seed over the untied cells, and the test of the most frequent winner."""

    wins: dict[int, int]
    cells: int  # untied cells
    tied: int  # cells left out: their best score is shared
    seeds: int  # seeds per cell (the most any cell has)
    top_seed: int | None
    p: float  # Bonferroni-adjusted binomial p of the top seed's wins (1.0: nothing to test)

    @property
    def verdict(self) -> str:
        if self.top_seed is None:
            return "no untied cell: nothing to test"
        if self.p < ALPHA:
            return f"seed {self.top_seed} wins more often than chance"
        return "no seed wins more often than chance"


def seed_wins(runs: pd.DataFrame, cells: dict[str, str]) -> SeedWins:
    """The test above over ``cells`` (cell or select group -> the score column it is read on)."""
    reported = runs[runs["selected"].ne(False) & (runs["status"] == "ok")]
    wins: Counter = Counter()
    tied = seeds = 0
    for cell, score in cells.items():
        rows = reported[(reported["cell"] == cell) | (reported["select_group"] == cell)]
        if score not in rows:
            continue
        values = pd.to_numeric(rows[score], errors="coerce")
        values.index = rows["seed"].astype(int)
        values = values.dropna()
        if len(values) < 2:
            continue
        seeds = max(seeds, len(values))
        best = values[values == values.max()]
        if len(best) > 1:
            tied += 1
            continue
        wins[int(best.index[0])] += 1
    untied = sum(wins.values())
    if not untied:
        return SeedWins({}, 0, tied, seeds, None, 1.0)
    top_seed, top = max(sorted(wins.items()), key=lambda item: item[1])
    p = binomtest(top, untied, 1 / seeds, alternative="greater").pvalue
    return SeedWins(dict(sorted(wins.items())), untied, tied, seeds, top_seed, min(1.0, p * seeds))


def seed_wins_markdown(result: SeedWins) -> str:
    """A short section: the counts, the test and its verdict."""
    if result.top_seed is None:
        return (
            "### Seed luck: the best seed of each cell\n\nNothing to test: no cell's best score "
            f"is held by one seed ({result.tied} tied cells).\n"
        )
    counts = ", ".join(f"seed {s}: {k}" for s, k in result.wins.items())
    return (
        "### Seed luck: the best seed of each cell\n\n"
        f"Untied cells: {result.cells} ({result.tied} tied at the best score left out), "
        f"{result.seeds} seeds each. Wins: {counts}. Most frequent winner: "
        f"seed {result.top_seed}, exact binomial "
        f"p x {result.seeds} seeds (Bonferroni) = {result.p:.3g}: {result.verdict}.\n"
    )
