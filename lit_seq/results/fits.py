"""Whether a cell fits N: how many of its seeds learnt the task at the training length.

A model that never learnt its training lengths says nothing about extrapolation: its low
score past N is a failure to learn, not to extrapolate, and a difference it is part of ranks
a cell that has not learnt the task. So every comparison row carries, for each side, its
seeds that fit N (``k/n``), and the claim checker (:mod:`lit_seq.results.claims`) refuses a
higher/lower sentence about a side that fits N in no seed unless the sentence says so.

What "fits" means is the page's rule, a :class:`FitRule`: by default the main metric on the
training-length test set (``test/<main>``) at least 0.99, the success threshold the matrix
and pe_extrapolation pages read in their N columns; a grid beside Delétang et al. 2023 uses
that page's rule, the best validation accuracy at N at least 0.9 (``lit_seq.results.paper``).
Worked example: a cell whose seeds score ``test/acc`` 0.999, 0.995, 0.97 fits N in ``2/3``.

Whether a seed fits N is also a metric a comparison can be made on, ``fits_n``
(:func:`metric_values`): 1 for a seed that fits N by the page's rule, 0 for one that does
not. A claim about solving a task ("attention solves it where an SSM does not") is a claim
about that success rate, which the mean of the score does not test when one side is bimodal:
a cell whose seeds score 1.0, 1.0, 0.27 and one whose seeds score 0.85, 0.9, 0.8 have about
the same mean, and fit N in 2/3 and 0/3. Paired by seed, b - a on ``fits_n`` is the
difference of the two success rates, and its sign-flip p counts the seeds where exactly one
side fits N (with 8 such seeds all one way, p = 2 / 2^8 = 0.0078).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from lit_seq.results.compare import seed_values
from lit_seq.results.tables import SUCCESS_THRESHOLD


@dataclass(frozen=True)
class FitRule:
    """A seed fits N when ``metric`` (``{main}``: the cell's main metric) >= ``threshold``."""

    metric: str = "test/{main}"
    threshold: float = SUCCESS_THRESHOLD

    def column(self, main: str) -> str:
        return self.metric.format(main=main)

    def text(self) -> str:
        """``test/<main> >= 0.99``: the rule as a table title states it."""
        return f"{self.column('<main>')} >= {self.threshold:g}"


FITS_N = "fits_n"  # the comparison metric: 1 where a seed fits N, else 0


def main_metrics(aggregate: pd.DataFrame) -> pd.Series:
    """Each cell's main metric (``acc`` where a record names none), indexed by cell: the
    ``{main}`` a :class:`FitRule` and :func:`metric_values` fill in for that cell."""
    return aggregate.set_index("cell")["main_metric"].fillna("acc")


def metric_values(
    runs: pd.DataFrame, cell: str, metric: str, main: str = "acc", rule: FitRule | None = None
) -> dict[int, float]:
    """seed -> ``metric`` of ``cell``'s ok runs, as :func:`seed_values` gives it; for
    ``fits_n``, 1.0 where the seed fits N by ``rule`` (default :class:`FitRule`) read at the
    cell's main metric ``main``, else 0.0."""
    if metric != FITS_N:
        return seed_values(runs, cell, metric)
    rule = rule or FitRule()
    values = seed_values(runs, cell, rule.column(main))
    return {seed: float(value >= rule.threshold) for seed, value in values.items()}


def fits_n(runs: pd.DataFrame, cell: str, main: str, rule: FitRule) -> str:
    """``k/n``: of the ``n`` ok seeds standing for ``cell`` with the rule's metric, the ``k``
    that fit N; "" when none has the metric."""
    column = rule.column(main)
    if column not in runs:
        return ""
    values = seed_values(runs, cell, column)
    if not values:
        return ""
    return f"{sum(v >= rule.threshold for v in values.values())}/{len(values)}"


def fits_nowhere(fits: object) -> bool:
    """Whether a ``k/n`` says no seed fits N (``0/10``); "" or a blank cell: unknown, no."""
    return isinstance(fits, str) and fits.startswith("0/")


def fits_everywhere(fits: object) -> bool:
    """Whether a ``k/n`` says every seed fits N (``10/10``, n > 0)."""
    if not isinstance(fits, str) or "/" not in fits:
        return False
    k, n = fits.split("/")
    return int(n) > 0 and k == n
