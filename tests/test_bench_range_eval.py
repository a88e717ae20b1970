"""The range_eval bench row counts what the fit's range evaluation computes."""

import pytest

from lit_seq.bench import range_eval


def test_the_row_counts_the_curves_token_steps_and_its_bound():
    """Quick: reverse_string rnn at 40, 80, 120, 160, 512 sequences of 2 L positions each;
    the bound is 2 FLOPs a weight a token step, and the ratios are of the row's own values."""
    row = range_eval.measure("rnn", quick=True, repeats=1)
    assert row["lengths"] == "40..160/40" and row["n"] == 512
    assert row["token_steps_m"] == round(512 * 2 * (40 + 80 + 120 + 160) / 1e6, 2)
    assert row["vs_bound"] == pytest.approx(row["range_cpu_s"] / row["bound_s"], abs=0.05)
    rate = row["eval_steps_per_s"] / row["train_fwd_steps_per_s"]
    assert row["eval_vs_train_fwd"] == pytest.approx(rate, abs=0.01)
    assert row["passed"] == (row["range_cpu_s"] / row["bound_s"] <= range_eval.GOAL)
