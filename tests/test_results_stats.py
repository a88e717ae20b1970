"""Intervals, tests and q values on worked numbers; the compare command and its library."""

import math

import numpy as np
import pytest
from scipy import stats

from lit_seq.compare import main as compare_main
from lit_seq.record import RunRecord, write_record
from lit_seq.results.compare import difference_lines, selection_notes
from lit_seq.results.stats import (
    MAX_LEVEL,
    UNDER_COVERS_NOTE,
    bh_q_values,
    bootstrap_ends,
    bootstrap_interval,
    clip_ends,
    expanded_level,
    pages_ends,
    paired_difference,
    share_above,
    sign_flip_p,
    smallest_sign_flip_p,
    studentized_ends,
    success_rate,
    under_covers_note,
    wilson_interval,
)
from lit_seq.results.tables import aggregate_table, runs_table


def test_bootstrap_interval_worked_example_is_seeded():
    # [0.9, 1.0, 0.8, 0.7, 0.95]: mean 0.87; 10,000 resamples from generator seed 0; the
    # 95% BCa is (0.77, 0.96), the expanded BCa asks for 99.8% at 5 seeds: (0.70, 0.98)
    interval = bootstrap_interval([0.9, 1.0, 0.8, 0.7, 0.95])
    assert interval.n == 5 and interval.mean == pytest.approx(0.87)
    assert (interval.low, interval.high) == pytest.approx((0.70, 0.98))
    assert (interval.method, interval.reason) == ("expanded BCa", "")
    assert bootstrap_interval([0.9, 1.0, 0.8, 0.7, 0.95]) == interval
    ends = bootstrap_ends(np.array([[0.9, 1.0, 0.8, 0.7, 0.95]]))
    assert (ends["BCa"][0][0], ends["BCa"][1][0]) == pytest.approx((0.77, 0.96))


def test_the_expanded_level_widens_the_normal_quantile_to_a_scaled_t_one():
    # n = 10: sqrt(10/9) x t_{0.025, 9} = 1.054 x 2.262 = 2.384 -> 2 x Phi(-2.384) = 0.0171
    assert expanded_level(10) == pytest.approx(0.98290, abs=1e-5)
    assert expanded_level(5) == pytest.approx(0.99809, abs=1e-5)
    assert expanded_level(1000) == pytest.approx(0.95, abs=1e-3)  # the plain level at large n
    assert expanded_level(2) == MAX_LEVEL  # 1 - 1.6e-72 would round to 1: capped


def test_bca_reaches_toward_the_seed_the_percentile_interval_underweights():
    # four seeds solve, one sits at chance: resampled means are skewed left (few resamples
    # draw 0.5 twice), and BCa moves the low end from the percentile's 0.696 down to 0.596;
    # the expanded BCa, at 99.8%, down to the seed at chance itself
    values = [0.5, 0.98, 0.99, 1.0, 1.0]
    ends = bootstrap_ends(np.array([values]))
    assert (ends["percentile"][0][0], ends["percentile"][1][0]) == pytest.approx((0.696, 0.998))
    assert (ends["BCa"][0][0], ends["BCa"][1][0]) == pytest.approx((0.596, 0.996))
    interval = bootstrap_interval(values)
    assert (interval.low, interval.high) == pytest.approx((0.5, 0.998))


def test_bootstrap_t_leaves_the_range_a_clip_brings_it_back():
    values = np.array([[0.5, 0.98, 0.99, 1.0, 1.0]])
    low, high = studentized_ends(values)
    assert low[0] == pytest.approx(-3.958, abs=1e-3) and high[0] == pytest.approx(1.057, abs=1e-3)
    clipped = clip_ends((low, high), (0.0, 1.0))
    assert (clipped[0][0], clipped[1][0]) == (0.0, 1.0)


def test_bootstrap_t_is_near_the_student_t_interval_on_symmetric_values():
    values = [0.8, 0.82, 0.85, 0.9, 0.88, 0.79, 0.91, 0.84, 0.86, 0.83]
    half = stats.t.ppf(0.975, 9) * np.std(values, ddof=1) / np.sqrt(10)  # 0.0293
    low, high = studentized_ends(np.array([values]))
    assert (low[0], high[0]) == pytest.approx(
        (np.mean(values) - half, np.mean(values) + half), abs=0.005
    )


def test_bootstrap_interval_of_few_or_equal_values():
    assert math.isnan(bootstrap_interval([0.7]).low) and bootstrap_interval([0.7]).mean == 0.7
    assert math.isnan(bootstrap_interval([]).mean)
    same = bootstrap_interval([1.0, 1.0, 1.0])
    assert (same.mean, same.low, same.high) == (1.0, 1.0, 1.0)
    # BCa's acceleration is 0/0 on equal values: the expanded percentile interval, and why
    assert (same.method, same.reason) == ("expanded percentile", "all values equal: a point")


def test_bca_falls_back_to_the_percentile_interval_where_it_is_nan():
    # unequal, but the jackknife's squared spread (1e-600) underflows to 0: BCa is 0/0
    tiny = bootstrap_interval([0.0, 1e-300, 2e-300])
    assert tiny.method == "expanded percentile" and tiny.reason.startswith("BCa undefined")
    assert (tiny.low, tiny.high) == (0.0, 2e-300)  # the percentile ends, finite
    ends = bootstrap_ends(np.array([[0.0, 1e-300, 2e-300], [0.1, 0.5, 0.3]]))
    low, high = pages_ends(ends)
    assert math.isnan(ends["expanded BCa"][0][0]) and low[0] == 0.0 and high[0] == 2e-300
    expanded = ends["expanded BCa"]
    assert (low[1], high[1]) == (expanded[0][1], expanded[1][1])  # expanded BCa where defined


@pytest.mark.parametrize(
    "values",
    [
        [0.018, 0.6, 0.55],  # t: 0.389 ± 0.80, i.e. [-0.41, 1.19]
        [1.0, 1.0, 1.0, 0.98],  # t reaches above 1
        [0.0, 0.0, 0.01],  # and below 0
        [0.0, 1.0],
        [0.0, 1.0, 1.0, 1.0, 1.0, 0.02, 0.99, 1.0, 1.0, 0.5],
        list(np.random.default_rng(3).beta(0.3, 0.3, size=5)),  # piled at both ends
        [0.5, 0.98, 0.99, 1.0, 1.0],  # skewed: BCa moves its ends, still inside
        [0.98, 0.99, 1.0],  # expanded to 99.99999% at 3 seeds: still the seeds' range
        [1.0] * 9 + [0.0],
    ],
)
def test_no_interval_of_an_accuracy_leaves_0_1(values):
    interval = bootstrap_interval(values)
    assert 0.0 <= interval.low <= interval.mean <= interval.high <= 1.0
    # it stays inside the seeds' own range, so inside any bound the metric has
    assert min(values) <= interval.low and interval.high <= max(values)


def test_wilson_interval_worked_example():
    # 4 of 5: (0.8 + 1.96²/10) / (1 + 1.96²/5) = 0.6697, half width
    # 1.96 / (1 + 1.96²/5) * sqrt(0.8 * 0.2 / 5 + 1.96² / 100) = 0.2941
    assert wilson_interval(4, 5) == pytest.approx((0.3755, 0.9638), abs=1e-4)
    assert wilson_interval(0, 5) == pytest.approx((0.0, 0.4345), abs=1e-4)  # not empty at 0/n
    assert wilson_interval(5, 5) == pytest.approx((0.5655, 1.0), abs=1e-4)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def test_success_rate_counts_values_at_or_above_the_threshold():
    assert success_rate([0.99, 0.95, 1.0, 0.30], 0.99) == (2, 4)


def test_sign_flip_p_counts_sign_patterns_exactly():
    # all three of one sign: 2 of the 8 patterns are as far from 0 -> 0.25
    assert sign_flip_p([0.20, 0.22, 0.19]) == pytest.approx(0.25)
    # magnitudes 0.1 0.2 0.3 0.1 0.25 0.15 (sum 1.1), observed sum 0.9: a pattern is as far
    # when its negatives sum to <= 0.1 (none, either 0.1: 3 patterns) or >= 1.0 (their 3
    # mirrors) -> 6/64
    assert sign_flip_p([0.1, 0.2, 0.3, -0.1, 0.25, 0.15]) == pytest.approx(6 / 64)
    assert sign_flip_p([0.1] * 6) == pytest.approx(2 / 64)  # the least p of 6 seeds
    assert sign_flip_p([0.0, 0.0, 0.0]) == 1.0 and math.isnan(sign_flip_p([0.3]))
    assert smallest_sign_flip_p(5) == 0.0625 and smallest_sign_flip_p(6) == 0.03125


def test_bh_q_values_worked_example():
    # sorted p 0.005 0.01 0.03 0.04 times m/rank 4/1 4/2 4/3 4/4 -> 0.02 0.02 0.04 0.04,
    # then the running minimum from the largest down (already monotone)
    assert bh_q_values([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # step-up: 0.01 * 4 = 0.04, and 0.02 * 4/2 = 0.03 * 4/3 = 0.04; 0.5 stays 0.5
    assert bh_q_values([0.01, 0.02, 0.03, 0.5]) == pytest.approx([0.04, 0.04, 0.04, 0.5])
    q = bh_q_values([0.01, math.nan, 0.04])  # a comparison without a p does not count
    assert q[0] == pytest.approx(0.02) and math.isnan(q[1]) and q[2] == pytest.approx(0.04)


def test_paired_difference_uses_shared_seeds_and_words_the_verdict():
    a = {0: 0.50, 1: 0.60, 2: 0.55, 3: 0.9}
    b = {0: 0.70, 1: 0.82, 2: 0.74}  # seed 3 only in a: left out
    diff = paired_difference(a, b)
    assert diff.seeds == [0, 1, 2]
    assert diff.differences == pytest.approx([0.20, 0.22, 0.19])
    # the interval excludes 0, but 3 seeds cannot give p < 0.05: no direction claimed
    assert diff.interval.excludes_zero and diff.p == pytest.approx(0.25)
    assert diff.verdict == "no difference detected"
    six = paired_difference({s: 0.5 for s in range(6)}, {s: 0.6 + 0.01 * s for s in range(6)})
    assert six.p == pytest.approx(2 / 64) and six.verdict == "b is higher"
    assert paired_difference({0: 0.5}, {0: 0.6}).verdict.startswith("too few")


def test_share_above_counts_the_seeds_b_wins_and_half_its_ties():
    assert share_above([0.2, 0.0, -0.1, 0.3]) == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    # b solves 2 of 10 seeds a did not (+0.5) and loses 0.1 on the rest: the mean difference
    # is +0.02, and b is above a on the same seed only 2 times in 10
    split = [0.5, 0.5] + [-0.1] * 8
    assert np.mean(split) == pytest.approx(0.02) and share_above(split) == pytest.approx(0.2)
    assert math.isnan(share_above([]))
    diff = paired_difference({0: 0.5, 1: 0.6, 2: 0.7, 5: 0.1}, {0: 0.6, 1: 0.6, 2: 0.4})
    assert diff.p_above == pytest.approx((1 + 0.5 + 0) / 3)  # seed 5: not shared


def test_the_under_covers_note_marks_tables_with_an_interval_over_few_seeds():
    assert under_covers_note([10, 3]) == f"\n{UNDER_COVERS_NOTE}\n"
    assert under_covers_note([10, 12]) == ""  # every interval over 10 seeds or more
    assert under_covers_note([1, 0, math.nan, 10]) == ""  # n < 2: no interval to cover
    assert "sign-flip p" in UNDER_COVERS_NOTE and "fewer than 10 seeds" in UNDER_COVERS_NOTE


def test_difference_lines_say_what_few_seeds_cannot_show():
    diff = paired_difference({0: 0.50, 1: 0.60, 2: 0.55}, {0: 0.70, 1: 0.82, 2: 0.74})
    assert difference_lines(diff) == [
        "mean difference +0.2033 [+0.1900, +0.2200] (95% bootstrap, n=3); sign-flip p = 0.25 "
        "(exact: all 8 sign patterns): no difference detected",
        "3 seeds can never give p below 0.05 (their least p is 0.25): a difference needs at "
        "least 6 shared seeds to be detected",
    ]


def _record(cell: str, seed: int, acc: float) -> RunRecord:
    return RunRecord(
        run_id=f"{cell}__seed={seed}",
        block="b",
        cell=cell,
        task="echo",
        arch="transformer",
        axes={"pos_mode": cell.split("=")[1]},
        axis_order=["pos_mode"],
        seed=seed,
        main_metric="acc",
        status="ok",
        metrics={"test/acc": 1.0, "test_len40/acc_ood": acc},
    )


def test_compare_command_prints_the_paired_difference(tmp_path, capsys):
    for seed in range(6):
        write_record(tmp_path, _record("b__pos_mode=sinusoidal", seed, 0.50 + 0.01 * seed))
        write_record(tmp_path, _record("b__pos_mode=none", seed, 0.59 + 0.01 * seed))
    code = compare_main(
        [str(tmp_path), "pos_mode=sinusoidal", "pos_mode=none", "--metric", "test_len40/acc_ood"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "mean difference +0.0900" in out and "b is higher" in out and "n=6" in out


def test_compare_names_the_problem_in_one_line(tmp_path, capsys):
    write_record(tmp_path, _record("b__pos_mode=none", 0, 0.6))
    assert compare_main([str(tmp_path), "pos_mode=none", "pos_mode=alibi"]) == 2
    assert "'pos_mode=alibi' matches no cell" in capsys.readouterr().err
    assert compare_main([str(tmp_path), "b", "b", "--metric", "test/accc"]) == 2
    assert "metric 'test/accc' is not one of" in capsys.readouterr().err
    assert compare_main([str(tmp_path / "nothing"), "a", "b"]) == 2


def test_every_interval_of_the_tables_stays_in_0_1():
    # a bimodal cell (two seeds solve it, one never learns): t would give [-0.41, 1.19]
    values = {0: 0.018, 1: 0.6, 2: 0.55, 3: 1.0, 4: 0.99}
    records = [_record("b__pos_mode=none", s, v) for s, v in values.items()]
    records += [_record("b__pos_mode=alibi", s, 1.0 - 0.001 * s) for s in range(5)]
    aggregate = aggregate_table(runs_table(records))
    lows = aggregate.filter(regex=r"(acc|acc_ood)_(ci|success)_low$").to_numpy().ravel()
    highs = aggregate.filter(regex=r"(acc|acc_ood)_(ci|success)_high$").to_numpy().ravel()
    assert len(lows) == len(highs) == 2 * 4 and (lows >= 0).all() and (highs <= 1).all()
    none = aggregate.set_index("cell").loc["b__pos_mode=none"]
    assert none["test_len40/acc_ood_success"] == "2/5"
    assert (none["test_len40/acc_ood_success_low"], none["test_len40/acc_ood_success_high"]) == (
        pytest.approx(wilson_interval(2, 5))
    )
    assert selection_notes(aggregate, {"a": "b__pos_mode=none"}) == []  # no select: block
