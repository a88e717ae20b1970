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
