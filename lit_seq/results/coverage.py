"""How often a 95% bootstrap interval of a mean over n seeds covers the true mean: a simulation.

    python -m lit_seq.results.coverage --simulations 4000   # the table in docs/grids.md

A stated 95% is a promise about repeated grids: over many draws of n seeds, 95% of the
intervals should hold the mean that infinitely many seeds would give. This module draws
``simulations`` samples of n scores from distributions like ours, whose means are known,
computes five intervals of each (:data:`METHODS`: the percentile and the BCa, each also
expanded, and the bootstrap-t; :mod:`lit_seq.results.stats`, the pages' own code, seeds and
resamples), and counts how often each holds the true mean, and how wide it is (the median
width, clipped to the distribution's support: a bootstrap-t end can leave it). The
distributions (:data:`DISTRIBUTIONS`):

- smooth ones: scores around chance (beta(5, 5)), scores piled below 1 (beta(12, 1.5)), and a
  loss, skewed right and unbounded (lognormal, sigma 0.75);
- bimodal ones, what a task some seeds solve gives: each seed solved (beta(60, 1), mean
  0.984) with probability 0.8 or 0.5, else at chance (beta(100, 100): 0.5 ± 0.035).

A bimodal cell cannot be covered at small n by any interval built from its seeds alone: with
p = 0.8, all 3 seeds solve 51% of the time (0.8^3) and every end then sits in the solved
cluster, above the true mean 0.887. That is why a difference is judged by its sign-flip p,
and an interval read with its n (``lit_seq.results.stats``).

What it chose: the pages print the expanded BCa (4000 simulations, docs/grids.md): at 10
seeds it covers 0.946 and 0.942 of the bounded smooth draws, where the BCa covers 0.90. The
bootstrap-t covers as often there and more at 3 and 5 seeds, but on a cell some of whose
seeds sit at chance its resamples of solved seeds alone have a tiny se*, and its interval
is then most of [0, 1] (median width 0.98 at 10 seeds, 80% solved): true, and useless.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta, lognorm

from lit_seq.results.markdown import markdown_table
from lit_seq.results.stats import (
    BCA,
    BOOTSTRAP_T,
    EXPANDED_BCA,
    EXPANDED_PERCENTILE,
    LEVEL,
    PERCENTILE,
    bootstrap_ends,
    clip_ends,
    pages_ends,
    studentized_ends,
)

SIZES = (3, 5, 10)  # seeds per cell, the range our grids run
SEED = 54  # the draws' generator (the bootstrap keeps the pages' own seed)
METHODS = (PERCENTILE, BCA, EXPANDED_PERCENTILE, EXPANDED_BCA, BOOTSTRAP_T)
PAGES = "pages"  # the pages' interval: expanded BCa, its expanded percentile where undefined


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

    def support(self) -> tuple[float, float]:
        return 0.0, 1.0


# name -> (distribution, smooth: whether the n = 10 coverage promise applies to it)
DISTRIBUTIONS = {
    "beta(5, 5): around chance": (beta(5, 5), True),
    "beta(12, 1.5): piled below 1": (beta(12, 1.5), True),
    "lognormal(0, 0.75): a loss": (lognorm(0.75), True),
    "80% solved, 20% at chance": (Mixture(0.8), False),
    "50% solved, 50% at chance": (Mixture(0.5), False),
}


@dataclass(frozen=True)
class Measured:
    """How often one method's interval held the true mean, and its median width."""

    covers: float
    width: float

    def __str__(self) -> str:
        return f"{self.covers:.3f} ({self.width:.2f})"


def coverage(
    name: str, n: int, simulations: int, seed: int = SEED, studentized: bool = True
) -> dict[str, Measured]:
    """Per method of :data:`METHODS`, and ``PAGES`` (what the tables print): the share of
    ``simulations`` samples of ``n`` draws from ``DISTRIBUTIONS[name]`` whose interval holds
    the true mean, and the intervals' median width within the distribution's support.
    ``studentized`` False leaves out the bootstrap-t, the slowest by far."""
    dist, _ = DISTRIBUTIONS[name]
    index = list(DISTRIBUTIONS).index(name)
    rng = np.random.default_rng((seed, index, n))  # each cell its own draws, in any order
    samples = dist.rvs(size=(simulations, n), random_state=rng)
    truth = float(dist.mean())
    ends = bootstrap_ends(samples)
    if studentized:
        ends[BOOTSTRAP_T] = studentized_ends(samples)
    ends[PAGES] = pages_ends(ends)
    measured = {}
    for method, (low, high) in ends.items():
        clipped = clip_ends((low, high), dist.support())
        width = float(np.median(clipped[1] - clipped[0]))
        measured[method] = Measured(float(np.mean((low <= truth) & (truth <= high))), width)
    return measured


def coverage_table(simulations: int, sizes: tuple[int, ...] = SIZES) -> list[list[object]]:
    """Rows of distribution, n and each of :data:`METHODS`' coverage (median width), as
    ``0.931 (0.21)``, one per cell."""
    rows = []
    for name in DISTRIBUTIONS:
        for n in sizes:
            measured = coverage(name, n, simulations)
            rows.append([name, n, *(str(measured[m]) for m in METHODS)])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, default=4000, help="samples per cell")
    args = parser.parse_args(argv)
    header = ["distribution", "n", *METHODS]
    print(f"{args.simulations} simulations per cell, draws seeded {SEED}; share of {LEVEL:.0%}")
    print(f"intervals holding the true mean (median width); the pages use {EXPANDED_BCA}")
    print(markdown_table(header, coverage_table(args.simulations)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
