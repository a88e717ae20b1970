"""How often a 95% bootstrap interval of a mean over n seeds covers the true mean: a simulation.

    python -m lit_seq.results.coverage --simulations 4000   # the table in docs/grids.md

A stated 95% is a promise about repeated grids: over many draws of n seeds, 95% of the
intervals should hold the mean that infinitely many seeds would give. This module draws
``simulations`` samples of n scores from distributions like ours, whose means are known,
computes the percentile and the BCa interval of each (:func:`~lit_seq.results.stats.
bootstrap_ends`, the pages' own code, seeds and resamples), and counts how often each holds
the true mean. The distributions (:data:`DISTRIBUTIONS`):

- smooth ones: scores around chance (beta(5, 5)), scores piled below 1 (beta(12, 1.5)), and a
  loss, skewed right and unbounded (lognormal, sigma 0.75);
- bimodal ones, what a task some seeds solve gives: each seed solved (beta(60, 1), mean
  0.984) with probability 0.8 or 0.5, else at chance (beta(100, 100): 0.5 ± 0.035).

A bimodal cell cannot be covered at small n by any interval built from its seeds alone: with
p = 0.8, all 3 seeds solve 51% of the time (0.8^3) and every end then sits in the solved
cluster, above the true mean 0.887. That is why a difference is judged by its sign-flip p,
and an interval read with its n (``lit_seq.results.stats``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta, lognorm

from lit_seq.results.markdown import markdown_table
from lit_seq.results.stats import BCA, LEVEL, PERCENTILE, bootstrap_ends, pages_ends

SIZES = (3, 5, 10)  # seeds per cell, the range our grids run
SEED = 54  # the draws' generator (the bootstrap keeps the pages' own seed)


@dataclass(frozen=True)
class Mixture:
    """A seed solves the task (a ``solved`` score) with probability ``p_solved``, else
    scores at chance (``chance``)."""

    p_solved: float
    solved: object = beta(60, 1)
    chance: object = beta(100, 100)

    def rvs(self, size: tuple[int, int], random_state: np.random.Generator) -> np.ndarray:
        solved = random_state.random(size) < self.p_solved
        high = self.solved.rvs(size, random_state=random_state)
        low = self.chance.rvs(size, random_state=random_state)
        return np.where(solved, high, low)

    def mean(self) -> float:
        return self.p_solved * self.solved.mean() + (1 - self.p_solved) * self.chance.mean()


# name -> (distribution, smooth: whether the n = 10 coverage promise applies to it)
DISTRIBUTIONS = {
    "beta(5, 5): around chance": (beta(5, 5), True),
    "beta(12, 1.5): piled below 1": (beta(12, 1.5), True),
    "lognormal(0, 0.75): a loss": (lognorm(0.75), True),
    "80% solved, 20% at chance": (Mixture(0.8), False),
    "50% solved, 50% at chance": (Mixture(0.5), False),
}


def coverage(name: str, n: int, simulations: int, seed: int = SEED) -> dict[str, float]:
    """The share of ``simulations`` samples of ``n`` draws from ``DISTRIBUTIONS[name]`` whose
    interval holds the true mean, per method: ``PERCENTILE``, ``BCA`` and ``"pages"`` (BCa
    with its percentile fallback, what the tables print)."""
    dist, _ = DISTRIBUTIONS[name]
    index = list(DISTRIBUTIONS).index(name)
    rng = np.random.default_rng((seed, index, n))  # each cell its own draws, in any order
    samples = dist.rvs(size=(simulations, n), random_state=rng)
    truth = float(dist.mean())
    ends = bootstrap_ends(samples)
    ends["pages"] = pages_ends(ends)
    return {k: float(np.mean((low <= truth) & (truth <= high))) for k, (low, high) in ends.items()}


def coverage_table(simulations: int, sizes: tuple[int, ...] = SIZES) -> list[list[object]]:
    """Rows of distribution, n, percentile and BCa coverage (as 0.931), one per cell."""
    rows = []
    for name in DISTRIBUTIONS:
        for n in sizes:
            measured = coverage(name, n, simulations)
            rows.append([name, n, round(measured[PERCENTILE], 3), round(measured["pages"], 3)])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, default=4000, help="samples per cell")
    args = parser.parse_args(argv)
    header = ["distribution", "n", f"percentile covers ({LEVEL:.0%})", f"{BCA} covers"]
    print(f"{args.simulations} simulations per cell, draws seeded {SEED}")
    print(markdown_table(header, coverage_table(args.simulations)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
