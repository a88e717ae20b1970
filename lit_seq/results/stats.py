"""Uncertainty over seeds: Student-t intervals of a mean and of a paired difference.

With 3-5 seeds a mean alone says little: the tables give every cell its 95% t interval,
mean ± t(0.975, n-1) · s / sqrt(n), and a comparison of two cells that share seeds gives
the interval of their per-seed differences (paired: the seed's data and initialisation
are the same on both sides, so the seed-to-seed spread cancels). Worked example: values
[0.9, 1.0, 0.8] have mean 0.9, s = 0.1 and t(0.975, 2) = 4.303, so the interval is
0.9 ± 4.303 · 0.1 / sqrt(3) = [0.652, 1.148]. The t interval assumes roughly normal
per-seed values; for bimodal cells (some seeds solve the task, some do not) the tables
also give the success rate and every per-seed value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import t as student_t


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError(f"df={df} must be >= 1")  # scipy would answer NaN
    return float(student_t.ppf(0.975, df))


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` values with its 95% t interval (NaN bounds when n < 2)."""

    n: int
    mean: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies wholly above or below 0 (a difference detected)."""
        return not math.isnan(self.low) and (self.low > 0 or self.high < 0)


def t_interval(values: list[float]) -> Interval:
    """The mean of ``values`` and its 95% Student-t interval."""
    n = len(values)
    if n == 0:
        return Interval(0, math.nan, math.nan, math.nan)
    mean = sum(values) / n
    if n < 2:
        return Interval(n, mean, math.nan, math.nan)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return Interval(n, mean, mean - half, mean + half)


@dataclass(frozen=True)
class PairedDifference:
    """``b - a`` over the seeds both have: per-seed differences and their interval."""

    seeds: list[int]
    differences: list[float]
    interval: Interval

    @property
    def verdict(self) -> str:
        """How the write-up must word it: a direction only when the interval excludes 0."""
        if self.interval.n < 2:
            return "too few shared seeds for an interval"
        if not self.interval.excludes_zero:
            return "no difference detected"
        return "b is higher" if self.interval.mean > 0 else "b is lower"


def paired_difference(a: dict[int, float], b: dict[int, float]) -> PairedDifference:
    """``b[s] - a[s]`` for every seed s in both, with the 95% t interval of their mean."""
    seeds = sorted(set(a) & set(b))
    diffs = [b[s] - a[s] for s in seeds]
    return PairedDifference(seeds, diffs, t_interval(diffs))


def success_rate(values: list[float], threshold: float) -> tuple[int, int]:
    """(how many of ``values`` are >= ``threshold``, how many there are)."""
    return sum(v >= threshold for v in values), len(values)
