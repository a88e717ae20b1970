"""Seed luck: the most frequent best seed of a page's cells, tested by permuting the seeds
within each block of cells that share data at one seed."""

import math

import numpy as np
import pandas as pd
import pytest

import lit_seq.results.seed_wins as seed_wins_module
from lit_seq.results.seed_wins import block_permutation_p, seed_wins, seed_wins_markdown


def _runs(winners: list[int | None], seeds: int = 10, tasks: list[str] | None = None):
    """One cell per entry: its winner scores 0.9, the others 0.5 (None: all tie at 1.0).
    ``tasks``: each cell's task (default: a task of its own, so every cell is a block)."""
    tasks = tasks or [f"t{c}" for c in range(len(winners))]
    rows = []
    for c, winner in enumerate(winners):
        for s in range(seeds):
            score = 1.0 if winner is None else (0.9 if s == winner else 0.5)
            rows.append(
                {"cell": f"c{c}", "task": tasks[c], "select_group": "", "seed": s,
                 "selected": True, "status": "ok", "score": score}
            )  # fmt: skip
    # a selection seed's run at another rate: never counted
    rows.append({"cell": "c0", "task": tasks[0], "select_group": "", "seed": 100,
                 "selected": False, "status": "ok", "score": 5.0})  # fmt: skip
    return pd.DataFrame(rows)


def _cells(n: int) -> dict[str, str]:
    return {f"c{c}": "score" for c in range(n)}


def test_worked_example_two_tasks_sharing_data_halve_the_evidence():
    # seeds 0 and 1; task A's two cells and task B's one all won by seed 0. A's wins move
    # together: totals (3,0) (2,1) (1,2) (0,3), each 1/4, so P(some seed >= 3) = 1/2;
    # three independent cells would give 2 x (1/2)^3 = 1/4
    runs = _runs([0, 0, 0], seeds=2, tasks=["A", "A", "B"])
    result = seed_wins(runs, _cells(3))
    assert (result.cells, result.top_seed, result.wins) == (3, 0, {0: 3})
    assert result.blocks == {"A": 2, "B": 1}
    assert (result.p, result.method) == (0.5, "exact")
    alone = seed_wins(_runs([0, 0, 0], seeds=2), _cells(3))  # each cell a task of its own
    assert alone.p == 0.25


def test_one_block_cannot_tell_luck_from_chance():
    # every cell shares its data at each seed: permuting the seeds never changes the most
    result = seed_wins(_runs([0, 0, 0, 0], seeds=3, tasks=["A"] * 4), _cells(4))
    assert result.p == 1.0 and result.verdict == "no seed wins more often than chance"


def _max_multinomial_sf(cells: int, seeds: int, k: int) -> float:
    """P(the most wins >= k) for ``cells`` independent uniform winners among ``seeds``:
    1 - cells!/seeds^cells x [x^cells] (sum_{j<k} x^j / j!)^seeds."""
    poly = np.array([1 / math.factorial(j) for j in range(k)])
    power = np.array([1.0])
    for _ in range(seeds):
        power = np.convolve(power, poly)[: cells + 1]
    return 1 - math.factorial(cells) / seeds**cells * power[cells]


def test_independent_cells_match_the_multinomial_maximum_by_monte_carlo():
    # 12 cells, each its own task, 10 seeds, seed 0 wins 5: 10! ^ 12 combinations, so Monte
    # Carlo; the exact value is the multinomial maximum's tail, 0.04324, a hair below
    # Bonferroni's 10 x P(Bin(12, 0.1) >= 5) = 0.04329 (which counts twice two seeds at 5)
    winners = [0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, None]
    result = seed_wins(_runs(winners), _cells(len(winners)))
    assert (result.cells, result.tied, result.seeds, result.top_seed) == (12, 1, 10, 0)
    assert result.method == "Monte Carlo, 200,000 draws"
    exact = _max_multinomial_sf(12, 10, 5)
    assert exact == pytest.approx(0.04324, abs=5e-5)
    assert result.p == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 200_000))
    assert result.verdict == "seed 0 wins more often than chance"
    text = seed_wins_markdown(result)
    assert "seed 0: 5" in text and "P(some seed wins >= 5) = " in text


def test_monte_carlo_agrees_with_the_exact_enumeration(monkeypatch):
    counts = [np.array([2, 1, 0, 0]), np.array([1, 1, 0, 0]), np.array([3, 0, 0, 0])]
    exact, method = block_permutation_p(counts, 5)
    assert method == "exact"  # 4!^3 = 13,824 combinations
    monkeypatch.setattr(seed_wins_module, "EXACT_LIMIT", 0)
    drawn, method = block_permutation_p(counts, 5)
    assert method.startswith("Monte Carlo")
    assert drawn == pytest.approx(exact, abs=0.005)
    assert block_permutation_p(counts, 5) == (drawn, method)  # a fixed generator


def test_winners_spread_over_the_seeds_are_chance():
    winners = list(range(10)) + [3, 7]
    result = seed_wins(_runs(winners), _cells(12))
    assert result.p > 0.5 and result.verdict == "no seed wins more often than chance"


def test_only_tied_cells_leave_nothing_to_test():
    result = seed_wins(_runs([None, None]), {"c0": "score", "c1": "score"})
    assert result.top_seed is None and result.tied == 2 and "nothing to test" in result.verdict


def test_a_data_seed_apart_from_the_run_seed_is_a_block_of_its_own():
    runs = _runs([0, 0, 0], seeds=2, tasks=["A", "A", "A"])
    runs["data_seed"] = runs["seed"]
    runs.loc[runs["cell"] == "c2", "data_seed"] = 7  # one cell trains on data seed 7
    result = seed_wins(runs, _cells(3))
    assert result.blocks == {"A": 2, "A data_seed=7": 1} and result.p == 0.5
