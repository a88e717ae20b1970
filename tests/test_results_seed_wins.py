"""Seed luck: the most frequent best seed of a page's cells, tested against chance."""

import pandas as pd
import pytest
from scipy.stats import binom

from lit_seq.results.seed_wins import seed_wins, seed_wins_markdown


def _runs(winners: list[int | None], seeds: int = 10) -> pd.DataFrame:
    """One cell per entry: its winner scores 0.9, the others 0.5 (None: all tie at 1.0)."""
    rows = []
    for c, winner in enumerate(winners):
        for s in range(seeds):
            score = 1.0 if winner is None else (0.9 if s == winner else 0.5)
            rows.append(
                {"cell": f"c{c}", "select_group": "", "seed": s, "selected": True,
                 "status": "ok", "score": score}
            )  # fmt: skip
    # a selection seed's run at another rate: never counted
    rows.append({"cell": "c0", "select_group": "", "seed": 100, "selected": False,
                 "status": "ok", "score": 5.0})  # fmt: skip
    return pd.DataFrame(rows)


def test_a_seed_that_wins_5_of_12_cells_of_10_seeds_is_more_often_than_chance():
    winners = [0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, None]
    runs = _runs(winners)
    result = seed_wins(runs, {f"c{c}": "score" for c in range(len(winners))})
    assert (result.cells, result.tied, result.seeds, result.top_seed) == (12, 1, 10, 0)
    assert result.wins[0] == 5
    assert result.p == pytest.approx(10 * binom.sf(4, 12, 0.1))  # P(X >= 5) = 0.0043
    assert result.p == pytest.approx(0.0430, abs=5e-4)
    assert result.verdict == "seed 0 wins more often than chance"
    assert "seed 0: 5" in seed_wins_markdown(result)


def test_winners_spread_over_the_seeds_are_chance():
    winners = list(range(10)) + [3, 7]
    result = seed_wins(_runs(winners), {f"c{c}": "score" for c in range(12)})
    assert (
        result.p == pytest.approx(1.0) and result.verdict == "no seed wins more often than chance"
    )


def test_only_tied_cells_leave_nothing_to_test():
    result = seed_wins(_runs([None, None]), {"c0": "score", "c1": "score"})
    assert result.top_seed is None and result.tied == 2 and "nothing to test" in result.verdict
