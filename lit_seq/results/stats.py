"""Uncertainty over seeds that respects a metric's bounds: bootstrap, Wilson, sign-flip, BH.

A cell has a few seeds (3-10), and its accuracies sit in [0, 1], often piled at one end or
split between solved and not. A Student-t interval, mean ± t·s/sqrt(n), ignores both: over
[0.018, 0.6, 0.55] it reaches below 0. So, with ``scipy.stats`` doing the work:

- mean over seeds: a seeded percentile bootstrap (:func:`bootstrap_interval`). Each end is a
  mean of resampled seeds, so it stays inside the seeds' own range, hence inside any bound
  the metric has. Worked example: [0.9, 1.0, 0.8, 0.7, 0.95] -> 0.87 [0.77, 0.96]. It is
  narrow for few seeds (it cannot reach past the values seen): read it with n.
- success rate (seeds that solve a test set): the Wilson interval (:func:`wilson_interval`),
  4 of 5 -> [0.376, 0.964], which stays in [0, 1] and is not empty at 0/n or n/n.
- a paired difference (two cells on the same seeds): the bootstrap interval of the mean
  difference and the exact sign-flip permutation test (:func:`sign_flip_p`): under "no
  difference" each seed's difference is as likely + as -, so p is the share of the 2^n sign
  patterns whose mean is at least as far from 0. Differences [0.20, 0.22, 0.19] -> p = 2/8
  = 0.25: three seeds can never show a difference at 0.05 (five cannot either: 2/32).
- many comparisons on one page: Benjamini-Hochberg q values (:func:`bh_q_values`),
  p [0.01, 0.04, 0.03, 0.005] -> q [0.02, 0.04, 0.04, 0.02].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest, bootstrap, false_discovery_control, permutation_test

LEVEL = 0.95  # every interval's confidence level
ALPHA = 0.05  # a p (or q) below this is a difference detected
SEED = 0  # the bootstrap's generator: the same values give the same interval, every time
RESAMPLES = 10_000  # bootstrap resamples (the 2.5% and 97.5% ends settle to ~0.002)
SIGN_PATTERNS = 1 << 16  # exact sign-flip test up to 16 seeds, sampled patterns past it


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values with its 95% interval (NaN bounds when n < 2)."""

    n: int
    mean: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies wholly above or below 0."""
        return not math.isnan(self.low) and (self.low > 0 or self.high < 0)


def bootstrap_interval(values: list[float]) -> Interval:
    """The mean of ``values`` and its 95% percentile-bootstrap interval (seeded, 10,000
    resamples of the seeds); equal values give a point, fewer than 2 NaN bounds."""
    n = len(values)
    if n == 0:
        return Interval(0, math.nan, math.nan, math.nan)
    data = np.asarray(values, dtype=float)
    mean = float(data.mean())
    if n < 2:
        return Interval(n, mean, math.nan, math.nan)
    if np.all(data == data[0]):  # nothing to resample (scipy would warn and answer NaN)
        return Interval(n, mean, mean, mean)
    result = bootstrap(
        (data,),
        np.mean,
        confidence_level=LEVEL,
        n_resamples=RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(SEED),
    )
    ci = result.confidence_interval
    return Interval(n, mean, float(ci.low), float(ci.high))


def wilson_interval(hits: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of a success rate ``hits``/``n`` (NaN, NaN when n = 0)."""
    if n == 0:
        return math.nan, math.nan
    ci = binomtest(hits, n).proportion_ci(confidence_level=LEVEL, method="wilson")
    return float(ci.low), float(ci.high)


def sign_flip_p(differences: list[float]) -> float:
    """Two-sided p of the mean of paired ``differences`` under random signs (exact: all 2^n
    patterns, up to 16 values); NaN for fewer than 2 values, 1 when all are 0."""
    data = np.asarray(differences, dtype=float)
    if len(data) < 2:
        return math.nan
    if not np.any(data):
        return 1.0
    result = permutation_test(
        (data,),
        np.mean,
        permutation_type="samples",  # one sample: the null flips each value's sign
        n_resamples=SIGN_PATTERNS,
        rng=np.random.default_rng(SEED),
    )
    return float(result.pvalue)


def smallest_sign_flip_p(n: int) -> float:
    """The least two-sided p that ``n`` paired seeds can give (all differences of one sign):
    2 of the 2^n patterns, 2 / 2^n. Below 6 seeds it is above 0.05 (5 seeds: 0.0625)."""
    return min(1.0, 2.0 / 2**n) if n >= 1 else math.nan


def bh_q_values(p_values: list[float]) -> list[float]:
    """Benjamini-Hochberg q of each p among ``p_values`` (one page's comparisons; a NaN p,
    a comparison with too few seeds, stays NaN and does not count among them)."""
    known = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    q = [math.nan] * len(p_values)
    if known:
        adjusted = false_discovery_control([p_values[i] for i in known], method="bh")
        for i, value in zip(known, adjusted, strict=True):
            q[i] = float(value)
    return q


def verdict(n: int, mean: float, p: float) -> str:
    """How a write-up must word a difference of mean ``mean`` over ``n`` seeds: a direction
    only when ``p`` (a page's BH q) is below 0.05, else "no difference detected"."""
    if n < 2:
        return "too few shared seeds for a test"
    if not p < ALPHA:
        return "no difference detected"
    return "b is higher" if mean > 0 else "b is lower"


@dataclass(frozen=True)
class PairedDifference:
    """``b - a`` over the seeds both have: per-seed differences, the bootstrap interval of
    their mean and the sign-flip p."""

    seeds: list[int]
    differences: list[float]
    interval: Interval
    p: float

    @property
    def verdict(self) -> str:
        """:func:`verdict` on this comparison's own p (alone, not among a page's)."""
        return verdict(self.interval.n, self.interval.mean, self.p)


def paired_difference(a: dict[int, float], b: dict[int, float]) -> PairedDifference:
    """``b[s] - a[s]`` for every seed s in both, with their interval and sign-flip p."""
    seeds = sorted(set(a) & set(b))
    diffs = [b[s] - a[s] for s in seeds]
    return PairedDifference(seeds, diffs, bootstrap_interval(diffs), sign_flip_p(diffs))


def success_rate(values: list[float], threshold: float) -> tuple[int, int]:
    """(how many of ``values`` are >= ``threshold``, how many there are)."""
    return sum(v >= threshold for v in values), len(values)
