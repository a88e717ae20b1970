"""Uncertainty over seeds that respects a metric's bounds: bootstrap, Wilson, sign-flip, BH.

A cell has a few seeds (3-10), and its accuracies sit in [0, 1], often piled at one end or
split between solved and not. A Student-t interval, mean ± t·s/sqrt(n), ignores both: over
[0.018, 0.6, 0.55] it reaches below 0. So, with ``scipy.stats`` doing the work:

- mean over seeds: a seeded BCa bootstrap (:func:`bootstrap_interval`), the percentile
  bootstrap's ends moved for the resampled means' bias and skew (Efron and Tibshirani 1993,
  ch. 14; its coverage error falls as 1/n, the percentile's as 1/sqrt(n)). Either way each
  end is a quantile of resampled means, so it stays inside the seeds' own range, hence inside
  any bound the metric has (an accuracy's [0, 1]): no clipping is needed. Where BCa is
  undefined (all values equal: no spread to correct) the interval is the percentile one and
  says why (``Interval.reason``). Worked example: one seed at chance among four solved,
  [0.5, 0.98, 0.99, 1.0, 1.0] -> 0.894 [0.596, 0.996], where the percentile interval,
  [0.696, 0.998], underweights the seed at chance. No bootstrap covers at 3 seeds, nor
  quite at 10 (87-90% of 95%: :mod:`lit_seq.results.coverage` measures it): read an
  interval with its n (``UNDER_COVERS_NOTE``), and a difference with its sign-flip p.
- success rate (seeds that solve a test set): the Wilson interval (:func:`wilson_interval`),
  4 of 5 -> [0.376, 0.964], which stays in [0, 1] and is not empty at 0/n or n/n.
- a paired difference (two cells on the same seeds): the bootstrap interval of the mean
  difference, the share of seeds where b beats a (:func:`share_above`), and the exact
  sign-flip permutation test (:func:`sign_flip_p`): under "no difference" each seed's
  difference is as likely + as -, so p is the share of the 2^n sign patterns whose mean is
  at least as far from 0. Differences [0.20, 0.22, 0.19] -> p = 2/8 = 0.25: three seeds can
  never show a difference at 0.05 (five cannot either: 2/32).
- many comparisons on one page: Benjamini-Hochberg q values (:func:`bh_q_values`),
  p [0.01, 0.04, 0.03, 0.005] -> q [0.02, 0.04, 0.04, 0.02].
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.stats import (
    DegenerateDataWarning,
    binomtest,
    bootstrap,
    false_discovery_control,
    permutation_test,
)

LEVEL = 0.95  # every interval's confidence level
ALPHA = 0.05  # a p (or q) below this is a difference detected
SEED = 0  # the bootstrap's generator: the same values give the same interval, every time
RESAMPLES = 10_000  # bootstrap resamples (the 2.5% and 97.5% ends settle to ~0.002)
SIGN_PATTERNS = 1 << 16  # exact sign-flip test up to 16 seeds, sampled patterns past it


BCA, PERCENTILE = "BCa", "percentile"  # the pages' interval, and its stated fallback
# values resampled at once (samples x resamples x n): ~160 MB of float64 at most
BATCH_VALUES = 20_000_000


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values with its 95% interval (NaN bounds when n < 2): ``method`` is
    ``BCA``, or ``PERCENTILE`` with the ``reason`` BCa was undefined ("" when n < 2)."""

    n: int
    mean: float
    low: float
    high: float
    method: str = ""
    reason: str = ""

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies wholly above or below 0."""
        return not math.isnan(self.low) and (self.low > 0 or self.high < 0)


Ends = tuple[np.ndarray, np.ndarray]  # (low, high), one of each per sample


def bootstrap_ends(samples: np.ndarray, seed: int = SEED) -> dict[str, Ends]:
    """The 95% percentile and BCa intervals of the mean of each row of ``samples`` (shape
    (m, n), n >= 2), both from one seeded bootstrap distribution of ``RESAMPLES`` resampled
    means per row. A BCa end is NaN where BCa is undefined (a row of equal values)."""
    m, n = samples.shape
    rng = np.random.default_rng(seed)
    batch = max(1, min(RESAMPLES, BATCH_VALUES // (m * n)))
    percentile = bootstrap(
        (samples,),
        np.mean,
        axis=-1,
        confidence_level=LEVEL,
        n_resamples=RESAMPLES,
        batch=batch,
        method="percentile",
        rng=rng,
    )
    with warnings.catch_warnings():  # equal values: BCa divides 0 by 0; NaN says so below
        warnings.simplefilter("ignore", category=RuntimeWarning)
        warnings.simplefilter("ignore", category=DegenerateDataWarning)
        bca = bootstrap(
            (samples,),
            np.mean,
            axis=-1,
            confidence_level=LEVEL,
            n_resamples=0,  # the same resampled means: BCa only moves which quantiles
            bootstrap_result=percentile,
            batch=batch,
            method="BCa",
            rng=rng,
        )
    ends = {PERCENTILE: percentile.confidence_interval, BCA: bca.confidence_interval}
    return {k: (np.asarray(ci.low, float), np.asarray(ci.high, float)) for k, ci in ends.items()}


def pages_ends(ends: dict[str, Ends]) -> Ends:
    """The pages' interval from :func:`bootstrap_ends`: BCa where it is defined, else the
    percentile interval."""
    low, high = ends[BCA]
    undefined = ~(np.isfinite(low) & np.isfinite(high))
    return np.where(undefined, ends[PERCENTILE][0], low), np.where(
        undefined, ends[PERCENTILE][1], high
    )


def bootstrap_interval(values: list[float]) -> Interval:
    """The mean of ``values`` and its 95% BCa bootstrap interval (seeded, 10,000 resamples
    of the seeds; see the module docstring); the percentile interval, with its reason, where
    BCa is undefined (equal values: a point); fewer than 2 values: NaN bounds."""
    n = len(values)
    if n == 0:
        return Interval(0, math.nan, math.nan, math.nan)
    data = np.asarray(values, dtype=float)
    mean = float(data.mean())
    if n < 2:
        return Interval(n, mean, math.nan, math.nan)
    if np.all(data == data[0]):  # BCa divides 0 by 0; the percentile ends are this point
        return Interval(n, mean, mean, mean, PERCENTILE, "all values equal: a point")
    ends = bootstrap_ends(data[None, :])
    low, high = (float(e[0]) for e in ends[BCA])
    if math.isfinite(low) and math.isfinite(high):
        return Interval(n, mean, low, high, BCA)
    # unequal values whose spread underflows (its cube over its square is 0/0)
    low, high = (float(e[0]) for e in ends[PERCENTILE])
    return Interval(n, mean, low, high, PERCENTILE, "BCa undefined: its acceleration is NaN")


COVERS_FROM = 10  # seeds from which the interval nears its 95% (measured: coverage.py)
UNDER_COVERS_NOTE = (
    f"Intervals over fewer than {COVERS_FROM} seeds under-cover: in simulated grids "
    '(docs/grids.md, "How often the intervals cover") a 95% BCa interval of a mean holds the '
    "true mean in 66-84% of draws at 3 to 5 seeds (87-90% at 10), in 48% at 3 seeds of a cell "
    "80% of whose seeds solve; a difference is judged by its exact sign-flip p."
)


def under_covers_note(ns) -> str:
    """``UNDER_COVERS_NOTE`` as a paragraph to print under a table whose cells have the seed
    counts ``ns``, when one of them has an interval (n >= 2) over fewer than
    ``COVERS_FROM`` seeds; "" otherwise."""
    small = [n for n in ns if n is not None and 2 <= float(n) < COVERS_FROM]  # NaN: none
    return f"\n{UNDER_COVERS_NOTE}\n" if small else ""


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


def share_above(differences: list[float]) -> float:
    """P(b > a) over paired seeds: the share of ``differences`` (b - a, one per seed) above
    0, a tie counting 1/2; NaN when there are none. [0.2, 0.0, -0.1, 0.3] -> (1 + 0.5 + 0
    + 1) / 4 = 0.625. rliable's probability of improvement (Agarwal et al. 2021) is this
    over all m x n pairs of runs; over paired seeds it asks how often b beats a on the
    same seed, and it shows a split the mean hides: b +0.5 on 2 seeds (solves where a is at
    chance) and -0.1 on 8 averages +0.02, and P(b > a) = 0.2."""
    if not differences:
        return math.nan
    data = np.asarray(differences, dtype=float)
    return float(np.mean((data > 0) + 0.5 * (data == 0)))


@dataclass(frozen=True)
class PairedDifference:
    """``b - a`` over the seeds both have: per-seed differences, the bootstrap interval of
    their mean, the sign-flip p and P(b > a) (:func:`share_above`)."""

    seeds: list[int]
    differences: list[float]
    interval: Interval
    p: float

    @property
    def p_above(self) -> float:
        """P(b > a) over the shared seeds: :func:`share_above` of the differences."""
        return share_above(self.differences)

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
