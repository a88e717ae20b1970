"""Uncertainty over seeds that respects a metric's bounds: bootstrap, Wilson, sign-flip, BH.

A cell has a few seeds (3-10), and its accuracies sit in [0, 1], often piled at one end or
split between solved and not. A Student-t interval, mean ± t·s/sqrt(n), ignores both: over
[0.018, 0.6, 0.55] it reaches below 0. So, with ``scipy.stats`` doing the work:

- mean over seeds: a seeded, expanded BCa bootstrap (:func:`bootstrap_interval`). The BCa
  moves the percentile bootstrap's ends for the resampled means' bias and skew (Efron and
  Tibshirani 1993, ch. 14); "expanded" (Hesterberg 2015) asks it for a wider level,
  :func:`expanded_level`, whose normal quantile is sqrt(n/(n-1)) t_{n-1}'s (0.983 at 10
  seeds), undoing the bootstrap's plug-in spread, too narrow by sqrt((n-1)/n), and its normal
  tails. Plain BCa covers 87-90% of a stated 95% at 10 seeds, the expanded one 94-95% on
  bounded scores (:mod:`lit_seq.results.coverage` measures both, and the bootstrap-t). Each
  end is a quantile of resampled means, so it stays inside the seeds' own range, hence
  inside any bound the metric has (an accuracy's [0, 1]): no clipping is needed. Where BCa
  is undefined (all values equal: no spread to correct) the interval is the expanded
  percentile one and says why (``Interval.reason``). Worked example: one seed at chance
  among four solved, [0.5, 0.98, 0.99, 1.0, 1.0] -> 0.894 [0.500, 0.998], where the
  percentile interval, [0.696, 0.998], underweights the seed at chance. At 3 seeds the
  expanded level is 1 - 1.4e-7 and the interval is the seeds' range, which no bootstrap
  fills to 95%: read an interval with its n (``UNDER_COVERS_NOTE``), and a difference with
  its sign-flip p.
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
    norm,
    permutation_test,
)
from scipy.stats import t as t_dist

LEVEL = 0.95  # every interval's confidence level
ALPHA = 0.05  # a p (or q) below this is a difference detected
SEED = 0  # the bootstrap's generator: the same values give the same interval, every time
RESAMPLES = 10_000  # bootstrap resamples (the 2.5% and 97.5% ends settle to ~0.002)
SIGN_PATTERNS = 1 << 16  # exact sign-flip test up to 16 seeds, sampled patterns past it


BCA, PERCENTILE = "BCa", "percentile"
EXPANDED_BCA, EXPANDED_PERCENTILE = "expanded BCa", "expanded percentile"  # the pages' pair
BOOTSTRAP_T = "bootstrap-t"  # measured beside them (coverage.py), not used by the pages
# values resampled at once (samples x resamples x n): ~160 MB of float64 at most
BATCH_VALUES = 20_000_000
# the expanded level is capped here: at 3 seeds it is 1 - 1.4e-7 (both ends already the
# extreme resampled means), at 2 it rounds to 1, where BCa's normal quantile is infinite
MAX_LEVEL = 1 - 1e-9

Bounds = tuple[float, float]  # (lowest, highest) a value can take; math.inf where unbounded


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values with its 95% interval (NaN bounds when n < 2): ``method`` is
    ``EXPANDED_BCA``, or ``EXPANDED_PERCENTILE`` with the ``reason`` BCa was undefined ("" when
    n < 2)."""

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


def expanded_level(n: int, level: float = LEVEL) -> float:
    """Hesterberg's (2015) expanded level for ``n`` values: the level whose normal quantile is
    sqrt(n / (n - 1)) t_{(1 - level)/2, n - 1}. A bootstrap's spread is the plug-in one,
    sqrt((n - 1) / n) of the sample's, and it knows nothing of t's heavier tails at small n;
    asking it for this wider level undoes both. n = 10: sqrt(10/9) x 2.262 = 2.384 -> tails
    of 0.86%, level 0.983; n = 5: 0.998; capped at ``MAX_LEVEL`` (n <= 3)."""
    tail = norm.cdf(math.sqrt(n / (n - 1)) * t_dist.ppf((1 - level) / 2, n - 1))
    return min(1 - 2 * float(tail), MAX_LEVEL)


def _scipy_ends(samples, rng, level, method, batch, reuse=None):
    with warnings.catch_warnings():  # equal values: BCa divides 0 by 0; NaN says so below
        warnings.simplefilter("ignore", category=RuntimeWarning)
        warnings.simplefilter("ignore", category=DegenerateDataWarning)
        return bootstrap(
            (samples,),
            np.mean,
            axis=-1,
            confidence_level=level,
            n_resamples=0 if reuse else RESAMPLES,  # reused: only which quantiles moves
            bootstrap_result=reuse,
            batch=batch,
            method=method,
            rng=rng,
        )


def bootstrap_ends(samples: np.ndarray, seed: int = SEED) -> dict[str, Ends]:
    """The 95% ``PERCENTILE``, ``BCA``, ``EXPANDED_PERCENTILE`` and ``EXPANDED_BCA`` intervals
    of the mean of each row of ``samples`` (shape (m, n), n >= 2), all from one seeded
    bootstrap distribution of ``RESAMPLES`` resampled means per row (the expanded ones at
    :func:`expanded_level`). A BCa end is NaN where BCa is undefined (a row of equal values).
    """
    m, n = samples.shape
    rng = np.random.default_rng(seed)
    batch = max(1, min(RESAMPLES, BATCH_VALUES // (m * n)))
    first = _scipy_ends(samples, rng, LEVEL, "percentile", batch)
    wide = expanded_level(n)
    results = {
        PERCENTILE: first,
        BCA: _scipy_ends(samples, rng, LEVEL, "BCa", batch, first),
        EXPANDED_PERCENTILE: _scipy_ends(samples, rng, wide, "percentile", batch, first),
        EXPANDED_BCA: _scipy_ends(samples, rng, wide, "BCa", batch, first),
    }
    return {
        k: (
            np.asarray(r.confidence_interval.low, float),
            np.asarray(r.confidence_interval.high, float),
        )
        for k, r in results.items()
    }


def studentized_ends(samples: np.ndarray, seed: int = SEED) -> Ends:
    """The 95% bootstrap-t interval of the mean of each row of ``samples`` (shape (m, n)):
    mean - q_{0.975} se, mean - q_{0.025} se, with q the quantiles over ``RESAMPLES``
    resamples of t* = (mean* - mean) / se* (Efron and Tibshirani 1993, ch. 12). scipy's
    ``bootstrap`` has no studentized method, hence numpy here. A resample whose values are
    all equal has no se* and is left out; at n = 2 every other resample has t* = 0, so the
    interval is the point (the coverage simulation measures it only from n = 3)."""
    m, n = samples.shape
    rng = np.random.default_rng(seed)
    mean = samples.mean(axis=1)
    se = samples.std(axis=1, ddof=1) / math.sqrt(n)
    quantiles = np.empty((m, 2))
    rows = max(1, BATCH_VALUES // (2 * RESAMPLES * n))  # index and value arrays alike
    for start in range(0, m, rows):
        x = samples[start : start + rows]  # (b, n)
        picks = rng.integers(0, n, size=(len(x), RESAMPLES, n))
        drawn = np.take_along_axis(x[:, None, :], picks, axis=2)  # (b, R, n)
        spread = drawn.std(axis=2, ddof=1) / math.sqrt(n)  # (b, R)
        # a resample of equal values can keep a rounding-error spread: count it as none
        none = spread <= 1e-12 * np.abs(x).max(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            t_star = np.where(
                none, np.nan, (drawn.mean(axis=2) - mean[start : start + rows, None]) / spread
            )
        low_q, high_q = np.nanquantile(t_star, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=1)
        quantiles[start : start + rows] = np.stack([low_q, high_q], axis=1)
    return mean - quantiles[:, 1] * se, mean - quantiles[:, 0] * se


def clip_ends(ends: Ends, bounds: Bounds) -> Ends:
    """``ends`` kept within ``bounds``. A bootstrap-t end can leave the seeds' range, and so
    the metric's: over [0.5, 0.98, 0.99, 1.0, 1.0] it reaches -3.96. The percentile and BCa
    ends, quantiles of resampled means, never leave the seeds' range, expanded or not."""
    return np.clip(ends[0], *bounds), np.clip(ends[1], *bounds)


def pages_ends(ends: dict[str, Ends]) -> Ends:
    """The pages' interval from :func:`bootstrap_ends`: the expanded BCa where it is defined,
    else the expanded percentile."""
    low, high = ends[EXPANDED_BCA]
    undefined = ~(np.isfinite(low) & np.isfinite(high))
    fallback = ends[EXPANDED_PERCENTILE]
    return np.where(undefined, fallback[0], low), np.where(undefined, fallback[1], high)


def bootstrap_interval(values: list[float]) -> Interval:
    """The mean of ``values`` and its 95% expanded BCa bootstrap interval (seeded, 10,000
    resamples of the seeds; see the module docstring); the expanded percentile, with its
    reason, where BCa is undefined (equal values: a point); fewer than 2 values: NaN bounds.
    Either is a pair of quantiles of resampled means, so it stays inside the seeds' range."""
    n = len(values)
    if n == 0:
        return Interval(0, math.nan, math.nan, math.nan)
    data = np.asarray(values, dtype=float)
    mean = float(data.mean())
    if n < 2:
        return Interval(n, mean, math.nan, math.nan)
    if np.all(data == data[0]):  # BCa divides 0 by 0; the percentile ends are this point
        return Interval(n, mean, mean, mean, EXPANDED_PERCENTILE, "all values equal: a point")
    ends = bootstrap_ends(data[None, :])
    low, high = (float(e[0]) for e in ends[EXPANDED_BCA])
    if math.isfinite(low) and math.isfinite(high):
        return Interval(n, mean, low, high, EXPANDED_BCA)
    # unequal values whose spread underflows (its cube over its square is 0/0)
    low, high = (float(e[0]) for e in ends[EXPANDED_PERCENTILE])
    reason = "BCa undefined: its acceleration is NaN"
    return Interval(n, mean, low, high, EXPANDED_PERCENTILE, reason)


COVERS_FROM = 10  # seeds from which the interval nears its 95% (measured: coverage.py)
UNDER_COVERS_NOTE = (
    f"Intervals over fewer than {COVERS_FROM} seeds under-cover: in simulated grids "
    '(docs/grids.md, "How often the intervals cover") a 95% expanded BCa interval of a mean '
    "holds the true mean in 68-76% of draws at 3 seeds and 86-92% at 5 (94-95% at 10 on "
    "bounded scores), in 48% at 3 seeds of a cell 80% of whose seeds solve (88% at 10); a "
    "difference is judged by its exact sign-flip p."
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
