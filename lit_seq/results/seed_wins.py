"""Seed luck: does one seed win its cells more often than chance, block by block?

Per cell of reported runs (``selected`` not False, ``ok``), on the page's score, the winner
is the one seed with the highest score (cells whose best is tied are left out: they cannot
tell). The statistic is the most wins any one seed has.

The cells of a grid are not independent trials. At one seed, every cell of a task trains
on the same data in the same batch order (the data seed is the run seed), and cells of
equal shapes start from the same weights (docs/grids.md, "The seed design"): a seed that
drew an easy training set lifts every cell of its task. So the null hypothesis is that seeds
are exchangeable *within each block* (the cells that share data at one seed: one task, and
one data seed where a grid sets it), and the test permutes the seed labels once per block,
the same permutation for all of the block's cells, then counts the wins per seed again:
p = P(under the permutations, some seed wins >= the observed most). Exact (every
combination of permutations) when there are at most ``EXACT_LIMIT`` of them, else
``DRAWS`` Monte Carlo draws from ``numpy.random.default_rng(RNG_SEED)`` (standard error of
p at most 0.0012). A seed that chose a cell's learning rate is the case this catches (an
audit of an older protocol found seed 0, the selection seed then, best in 36 of 47 cells).

Worked example (``tests/test_results_seed_wins.py``): seeds 0 and 1; task A has two cells,
task B one; seed 0 wins all three. Permuting within tasks, A's two wins go to one seed
together: the totals are (3, 0), (2, 1), (1, 2) or (0, 3), each with chance 1/4, so
P(some seed wins >= 3) = 1/2. Treating the three cells as independent would give
2 x (1/2)^3 = 1/4.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lit_seq.results.stats import ALPHA

EXACT_LIMIT = 100_000  # permutation combinations enumerated exactly, at most
DRAWS = 200_000  # Monte Carlo draws past that: standard error <= sqrt(0.25 / DRAWS)
RNG_SEED = 0  # the Monte Carlo generator's seed: a page's p is the same every time


@dataclass(frozen=True)
class SeedWins:
    """Wins per seed over the untied cells, and the block-permutation test of the top seed."""

    wins: dict[int, int]
    cells: int  # untied cells
    tied: int  # cells left out: their best score is shared
    seeds: int  # seeds per cell (the most any cell has)
    top_seed: int | None
    p: float  # P(some seed wins >= the top seed's wins | seeds permuted per block); 1.0: none
    blocks: dict[str, int] = None  # block -> its untied cells
    method: str = ""  # "exact" or "Monte Carlo, N draws"

    @property
    def verdict(self) -> str:
        if self.top_seed is None:
            return "no untied cell: nothing to test"
        if self.p < ALPHA:
            return f"seed {self.top_seed} wins more often than chance"
        return "no seed wins more often than chance"


def _block(rows: pd.DataFrame) -> str:
    """The cells that share data at one seed: the task, and the data seed where the grid sets
    one apart from the run seed (a run whose data seed is its seed shares its task's block)."""
    task = str(rows["task"].iloc[0]) if "task" in rows else ""
    if "data_seed" in rows:
        own = pd.to_numeric(rows["data_seed"], errors="coerce")
        apart = own.notna() & own.ne(rows["seed"].astype(int))
        if apart.any():
            return f"{task} data_seed={int(own[apart].iloc[0])}"
    return task


def _winners(runs: pd.DataFrame, cells: dict[str, str]) -> tuple[dict, int, int, list[int]]:
    """block -> the winning seed of each of its untied cells; tied cells; seeds per cell;
    every seed that some cell has (the labels the permutations shuffle)."""
    reported = runs[runs["selected"].ne(False) & (runs["status"] == "ok")]
    by_block: dict[str, list[int]] = {}
    tied = seeds = 0
    labels: set[int] = set()
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
        labels.update(int(s) for s in values.index)
        best = values[values == values.max()]
        if len(best) > 1:
            tied += 1
            continue
        by_block.setdefault(_block(rows), []).append(int(best.index[0]))
    return by_block, tied, seeds, sorted(labels)


def block_permutation_p(counts: list[np.ndarray], observed: int) -> tuple[float, str]:
    """P(max over seeds of the summed win counts >= ``observed``) when each block's count
    vector (wins per seed, one entry per seed label) is permuted independently of the others.
    Exact when the combinations number at most EXACT_LIMIT, else Monte Carlo."""
    n = len(counts[0])
    combinations = math.factorial(n) ** len(counts)
    if combinations <= EXACT_LIMIT:
        orders = list(itertools.permutations(range(n)))
        hits = sum(
            int(sum(c[list(o)] for c, o in zip(counts, chosen, strict=True)).max() >= observed)
            for chosen in itertools.product(orders, repeat=len(counts))
        )
        return hits / combinations, "exact"
    rng = np.random.default_rng(RNG_SEED)
    total = np.zeros((DRAWS, n), dtype=np.int64)
    for c in counts:  # each block's wins land on a random relabelling of the seeds
        total += c[rng.random((DRAWS, n)).argsort(axis=1)]
    return float((total.max(axis=1) >= observed).mean()), f"Monte Carlo, {DRAWS:,} draws"


def seed_wins(runs: pd.DataFrame, cells: dict[str, str]) -> SeedWins:
    """The test above over ``cells`` (cell or select group -> the score column it is read on).
    ``runs`` carries each run's ``task`` (and ``data_seed`` where recorded): the blocks."""
    by_block, tied, seeds, labels = _winners(runs, cells)
    wins = Counter(w for winners in by_block.values() for w in winners)
    untied = sum(wins.values())
    if not untied:
        return SeedWins({}, 0, tied, seeds, None, 1.0, {}, "")
    top_seed, top = max(sorted(wins.items()), key=lambda item: item[1])
    index = {s: i for i, s in enumerate(labels)}
    counts = []
    for winners in by_block.values():
        vector = np.zeros(len(labels), dtype=np.int64)
        for w in winners:
            vector[index[w]] += 1
        counts.append(vector)
    p, method = block_permutation_p(counts, top)
    blocks = {b: len(w) for b, w in by_block.items()}
    return SeedWins(dict(sorted(wins.items())), untied, tied, seeds, top_seed, p, blocks, method)


def seed_wins_markdown(result: SeedWins) -> str:
    """A short section: the counts, the test and its verdict."""
    if result.top_seed is None:
        return (
            "### Seed luck: the best seed of each cell\n\nNothing to test: no cell's best score "
            f"is held by one seed ({result.tied} tied cells).\n"
        )
    counts = ", ".join(f"seed {s}: {k}" for s, k in result.wins.items())
    blocks = ", ".join(f"{b} {k}" for b, k in result.blocks.items())
    return (
        "### Seed luck: the best seed of each cell\n\n"
        f"Untied cells: {result.cells} ({result.tied} tied at the best score left out), "
        f"{result.seeds} seeds each. Wins: {counts}. Most frequent winner: "
        f"seed {result.top_seed}, {result.wins[result.top_seed]} wins. Blocks (cells that "
        f"share data at one seed; untied cells): {blocks}. With the seeds permuted within "
        f"each block, P(some seed wins >= {result.wins[result.top_seed]}) = {result.p:.3g} "
        f"({result.method}): {result.verdict}.\n"
    )
