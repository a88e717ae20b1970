"""A report's comparisons table: a grid's own pairs, paired statistics, BH q and verdicts."""

import pytest

from lit_seq.record import RunRecord
from lit_seq.results.comparisons import block_pairs, comparisons_markdown, comparisons_table
from lit_seq.results.stats import bh_q_values
from lit_seq.results.tables import aggregate_table, runs_table


def _record(pos_mode: str, residual: bool, seed: int, ood: float, index: int) -> RunRecord:
    axes = {"residual": residual, "pos_mode": pos_mode}
    cell = f"b__task=echo__residual={residual}__pos_mode={pos_mode}"
    return RunRecord(
        run_id=f"{cell}__seed={seed}",
        block="b",
        cell=cell,
        task="echo",
        arch="transformer",
        axes=axes,
        axis_order=list(axes),
        seed=seed,
        main_metric="acc",
        status="ok",
        metrics={"test/acc": 1.0, "range_ood/acc": 0.9, "range_ood/acc_ood": ood},
        index=index,
    )


def _tables():
    """residual [true, false] x pos_mode [sinusoidal, none], 6 seeds. Past N: sinusoidal
    0.50 + 0.01 s; none adds 0.10 on every seed with residuals (p = 2/64) and nothing
    without; no residuals costs 0.20 on every seed with sinusoidal positions."""
    records = []
    for residual in (True, False):
        for pos_mode in ("sinusoidal", "none"):
            for seed in range(6):
                ood = 0.50 + 0.01 * seed
                ood += 0.10 if (residual, pos_mode) == (True, "none") else 0.0
                ood -= 0.20 if (residual, pos_mode) == (False, "sinusoidal") else 0.0
                records.append(_record(pos_mode, residual, seed, ood, len(records)))
    runs = runs_table(records)
    return runs, aggregate_table(runs)


def test_a_grid_compares_each_cell_with_its_axis_first_value_the_rest_held():
    runs, aggregate = _tables()
    pairs = block_pairs(runs, aggregate)
    described = [(p["held"], p["axis"], p["a"], p["b"]) for p in pairs]
    assert described == [
        ("pos_mode=sinusoidal", "residual", "true", "false"),
        ("pos_mode=none", "residual", "true", "false"),
        ("residual=true", "pos_mode", "sinusoidal", "none"),
        ("residual=false", "pos_mode", "sinusoidal", "none"),
    ]
    assert {p["metric"] for p in pairs} == {"range_ood/acc_ood"}  # a per-step task: past N


def test_q_is_benjamini_hochberg_across_the_page_and_the_verdict_reads_q():
    runs, aggregate = _tables()
    table = comparisons_table(runs, aggregate, block_pairs(runs, aggregate))
    # without residuals: -0.20 on every seed (sinusoidal), -0.10 (none); none vs
    # sinusoidal: +0.10 with residuals, +0.20 without; each of the 4 moves all 6 seeds one
    # way: p = 2/64 each, q = 2/64 too (4 equal p: m/rank times the largest is p itself)
    assert list(table["n"]) == [6, 6, 6, 6]
    assert list(table["difference"]) == pytest.approx([-0.20, -0.10, 0.10, 0.20])
    assert list(table["p"]) == pytest.approx([2 / 64] * 4)
    assert list(table["q"]) == pytest.approx(bh_q_values([2 / 64] * 4))
    assert list(table["verdict"]) == ["b is lower", "b is lower", "b is higher", "b is higher"]
    assert (table["ci_low"] <= table["difference"]).all()
    text = comparisons_markdown(table)
    assert "verdict on BH q < 0.05 across this table" in text
    assert (
        "| echo | b | residual=true | pos_mode | sinusoidal | none | range_ood/acc_ood | 6 |"
        in text
    )


def test_a_page_with_more_comparisons_needs_a_smaller_p():
    runs, aggregate = _tables()
    pair = block_pairs(runs, aggregate)[2]  # pos_mode with residuals: p = 2/64 = 0.03125
    no_effect = {**pair, "cell_b": pair["cell_a"]}  # a cell against itself: p = 1
    alone = comparisons_table(runs, aggregate, [pair])
    assert (
        alone["q"].iloc[0] == pytest.approx(0.03125) and alone["verdict"].iloc[0] == "b is higher"
    )
    # among two: q = 0.03125 * 2 / 1 = 0.0625 > 0.05, so no longer detected
    page = comparisons_table(runs, aggregate, [pair, no_effect])
    assert list(page["q"]) == pytest.approx([0.0625, 1.0])
    assert list(page["verdict"]) == ["no difference detected"] * 2
