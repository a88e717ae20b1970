"""How often the pages' 95% interval covers a known mean, measured by simulation (fixed seeds).

The full table, with more simulations: ``python -m lit_seq.results.coverage``.
"""

from functools import cache

import pytest

from lit_seq.results.coverage import DISTRIBUTIONS, Mixture, coverage, main

SIMULATIONS = 400  # ~0.5 s a cell at 10 seeds; the coverage's own noise is ~0.015
SMOOTH = [name for name, (_, smooth) in DISTRIBUTIONS.items() if smooth]


@cache
def _measured(name: str, n: int) -> dict[str, float]:
    return coverage(name, n, SIMULATIONS)  # each cell drawn once for all the tests here


def test_a_mixture_of_solved_and_at_chance_seeds_has_its_known_mean():
    assert Mixture(0.8).mean() == pytest.approx(0.8 * 60 / 61 + 0.2 * 0.5)  # 0.887


@pytest.mark.xfail(
    strict=True,
    reason="measured: BCa covers 0.87-0.90 at 10 seeds on these (4000 simulations, "
    "docs/grids.md); issue 54's bar of 0.93 is not met by BCa",
)
@pytest.mark.parametrize("name", SMOOTH)
def test_at_10_seeds_the_pages_interval_covers_93_percent_of_smooth_draws(name):
    assert _measured(name, 10)["pages"] >= 0.93


@pytest.mark.parametrize("name", SMOOTH)
def test_at_10_seeds_bca_covers_at_least_as_often_as_the_percentile_interval(name):
    # BCa's coverage error falls as 1/n, the percentile's as 1/sqrt(n) (Hesterberg 2015);
    # both from the same resampled means of the same draws, so the gap is not noise
    measured = _measured(name, 10)
    assert measured["pages"] >= 0.85 and measured["pages"] >= measured["percentile"] - 0.005


def test_no_bootstrap_covers_at_3_seeds():
    for name in DISTRIBUTIONS:
        measured = _measured(name, 3)
        assert max(measured["percentile"], measured["BCa"]) < 0.8, name
    # 80% of seeds solve: in 0.8^3 = 51% of draws all 3 do (± 0.025 over 400 draws), and
    # every interval then sits in the solved cluster above the true mean 0.887
    assert _measured("80% solved, 20% at chance", 3)["pages"] <= 1 - 0.8**3 + 0.05


def test_the_command_prints_the_table(capsys):
    assert main(["--simulations", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "20 simulations per cell, draws seeded 54"
    assert lines[1] == "| distribution | n | percentile covers (95%) | BCa covers |"
    assert len(lines) == 3 + len(DISTRIBUTIONS) * 3  # title, header, rule, n = 3, 5, 10 each
