"""Intervals, paired differences and the compare command, on worked numbers."""

import math

import pytest

from lit_seq.compare import main as compare_main
from lit_seq.record import RunRecord, write_record
from lit_seq.results.stats import paired_difference, success_rate, t_interval, t_quantile_975


def test_t_interval_worked_example():
    # [0.9, 1.0, 0.8]: mean 0.9, s = 0.1, t(0.975, 2) = 4.303 -> 0.9 ± 0.2484
    interval = t_interval([0.9, 1.0, 0.8])
    assert interval.n == 3 and interval.mean == pytest.approx(0.9)
    assert (interval.low, interval.high) == pytest.approx((0.65156, 1.14844), abs=1e-4)


def test_one_value_has_no_interval_and_none_has_no_mean():
    assert math.isnan(t_interval([0.7]).low) and t_interval([0.7]).mean == 0.7
    assert math.isnan(t_interval([]).mean)


def test_t_quantile_agrees_with_the_published_table():
    # published values: t(0.975, 1) = 12.706, t(0.975, 4) = 2.776, t(0.975, 40) = 2.021,
    # t(0.975, 120) = 1.980 (to the table's three decimals)
    assert t_quantile_975(1) == pytest.approx(12.706, abs=5e-4)
    assert t_quantile_975(4) == pytest.approx(2.776, abs=5e-4)
    assert t_quantile_975(40) == pytest.approx(2.021, abs=1e-3)
    assert t_quantile_975(120) == pytest.approx(1.980, abs=1e-3)
    with pytest.raises(ValueError):
        t_quantile_975(0)


def test_paired_difference_uses_shared_seeds_and_words_the_verdict():
    a = {0: 0.50, 1: 0.60, 2: 0.55, 3: 0.9}
    b = {0: 0.70, 1: 0.82, 2: 0.74}  # seed 3 only in a: left out
    diff = paired_difference(a, b)
    assert diff.seeds == [0, 1, 2]
    assert diff.differences == pytest.approx([0.20, 0.22, 0.19])
    assert diff.interval.excludes_zero and diff.verdict == "b is higher"
    noisy = paired_difference({0: 0.5, 1: 0.6, 2: 0.4}, {0: 0.6, 1: 0.5, 2: 0.45})
    assert noisy.verdict == "no difference detected"
    assert paired_difference({0: 0.5}, {0: 0.6}).verdict.startswith("too few")


def test_success_rate_counts_values_at_or_above_the_threshold():
    assert success_rate([0.99, 0.95, 1.0, 0.30], 0.99) == (2, 4)


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
    for seed, (sin, none) in enumerate([(0.52, 0.61), (0.53, 0.60), (0.51, 0.62)]):
        write_record(tmp_path, _record("b__pos_mode=sinusoidal", seed, sin))
        write_record(tmp_path, _record("b__pos_mode=none", seed, none))
    code = compare_main(
        [str(tmp_path), "pos_mode=sinusoidal", "pos_mode=none", "--metric", "test_len40/acc_ood"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "mean difference +0.0900" in out and "b is higher" in out
    assert "+0.0900" in out and "(95% t, n=3)" in out


def test_compare_names_the_problem_in_one_line(tmp_path, capsys):
    write_record(tmp_path, _record("b__pos_mode=none", 0, 0.6))
    assert compare_main([str(tmp_path), "pos_mode=none", "pos_mode=alibi"]) == 2
    assert "'pos_mode=alibi': no cell matches" in capsys.readouterr().err
    assert compare_main([str(tmp_path), "b", "b", "--metric", "test/accc"]) == 2
    assert "metric 'test/accc' is not one of" in capsys.readouterr().err
    assert compare_main([str(tmp_path / "nothing"), "a", "b"]) == 2
