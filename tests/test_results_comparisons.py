"""A report's comparisons table: a grid's own pairs, paired statistics, BH q and verdicts."""

import re

import pandas as pd
import pytest

from lit_seq.record import RunRecord
from lit_seq.results.comparisons import (
    block_pairs,
    comparisons_markdown,
    comparisons_table,
    read_pairs,
)
from lit_seq.results.fits import FitRule
from lit_seq.results.stats import bh_q_values, under_covers_note
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


def test_a_block_without_range_evaluation_is_compared_on_its_own_longest_scores():
    # the same task's other block has range_ood; this one (as matrix's spec7_recurrent) has
    # only a 2N test set: its pair is scored there, not on a column it lacks (n = 0)
    from tests.helpers import arch_record

    records = []
    for arch, ood in (("rnn", 0.9), ("lstm", 0.8)):
        for seed in range(4):
            metrics = {"test/acc": 1.0, "test_len20/acc_ood": ood - 0.01 * seed}
            records.append(arch_record("plain", "echo", arch, seed, metrics, 100 + len(records)))
    base, _ = _tables()
    runs = pd.concat([base, runs_table(records)], ignore_index=True)
    aggregate = aggregate_table(runs)
    (plain,) = [p for p in block_pairs(runs, aggregate) if p["block"] == "plain"]
    assert plain["metric"] == "test_len20/acc_ood"
    row = comparisons_table(runs, aggregate, [plain]).iloc[0]
    assert row["n"] == 4 and row["difference"] == pytest.approx(-0.1)


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
        '| <a id="c3"></a>C3 | echo | b | residual=true | pos_mode | sinusoidal | none '
        "| range_ood/acc_ood | 6 |" in text
    )
    assert list(table["id"]) == ["C1", "C2", "C3", "C4"]


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


def test_a_pages_own_pairs_follow_the_grids_under_one_adjustment(tmp_path):
    runs, aggregate = _tables()
    (tmp_path / "pairs.yaml").write_text(
        "- {a: 'residual=True none', b: 'residual=False sinusoidal', metric: range_ood/acc_ood}\n"
    )
    extra = read_pairs(tmp_path / "pairs.yaml", aggregate)
    table = comparisons_table(runs, aggregate, block_pairs(runs, aggregate) + extra)
    assert list(table["id"]) == ["C1", "C2", "C3", "C4", "C5"]
    assert table["difference"].iloc[4] == pytest.approx(-0.30)  # 0.60 + 0.01 s -> 0.30 + 0.01 s
    assert table["block"].iloc[4] == "(page)"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[{a: residual=True, b: pos_mode=none, metric: m}]", "matches 2 cells"),
        ("[{a: sinusoidal, b: none}]", "keys must be exactly ['a', 'b', 'metric']"),
        ("{a: x}", "a pairs file is a list"),
    ],
)
def test_a_bad_pairs_file_is_one_line_naming_the_entry(tmp_path, text, problem):
    _, aggregate = _tables()
    (tmp_path / "pairs.yaml").write_text(text)
    with pytest.raises(ValueError, match=re.escape(problem)) as caught:
        read_pairs(tmp_path / "pairs.yaml", aggregate)
    assert "\n" not in str(caught.value)


def test_report_with_a_bad_pairs_file_is_one_line_and_writes_nothing(tmp_path, capsys):
    from lit_seq.record import write_record
    from lit_seq.report import main as report_main

    out = tmp_path / "out"
    for i, seed in enumerate([0, 1, 2]):
        write_record(out, _record("none", True, seed, 0.5, i))
    (tmp_path / "pairs.yaml").write_text("- {a: rotary, b: none, metric: range_ood/acc_ood}\n")
    assert report_main([str(out), "--pairs", str(tmp_path / "pairs.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "entry 1: a: 'rotary' matches no cell" in err
    assert not (out / "comparisons.csv").exists()


# a results page's pairs file -> the grid whose cells it names
PAIRS_FILES = {
    "docs/results/matrix_pairs.yaml": "matrix.yaml",
    "docs/results/pe_extrapolation_pairs.yaml": "pe_extrapolation.yaml",
}


@pytest.mark.parametrize(("pairs", "grid"), PAIRS_FILES.items())
def test_every_shipped_pairs_file_names_cells_of_its_grid(pairs, grid):
    from tests.helpers import REPO, report_cells

    cells = report_cells(grid)
    aggregate = pd.DataFrame(
        {"cell": cells, "task": [c.split("task=")[1].split("__")[0] for c in cells]}
    )
    assert len(read_pairs(REPO / pairs, aggregate)) > 0


def test_each_side_says_how_many_seeds_fit_n_by_the_pages_rule():
    runs, aggregate = _tables()
    # residual=false with NoPE: 4 of 6 seeds at 0.995 at N, 2 at 0.97; val/acc 0.95 on all
    nope = runs["cell"].str.endswith("residual=False__pos_mode=none")
    runs.loc[nope, "test/acc"] = [0.995, 0.995, 0.97, 0.995, 0.97, 0.995]
    runs["val/acc"] = 0.95
    table = comparisons_table(runs, aggregate, block_pairs(runs, aggregate))
    last = table.iloc[-1]  # residual=false: sinusoidal vs none
    assert (last["fits_a"], last["fits_b"]) == ("6/6", "4/6")  # test/acc >= 0.99
    table = comparisons_table(
        runs, aggregate, block_pairs(runs, aggregate), FitRule("val/acc", 0.9)
    )
    assert set(table["fits_a"]) | set(table["fits_b"]) == {"6/6"}  # val/acc >= 0.9: Delétang's
    assert "fits N: seeds with val/acc >= 0.9" in comparisons_markdown(
        table, FitRule("val/acc", 0.9)
    )


def test_each_row_gives_p_b_above_a_over_the_shared_seeds():
    runs, aggregate = _tables()
    # residual=true, none vs sinusoidal: +0.10 on seeds 0-5; make seed 0 a tie and seed 1
    # a loss: (0.5 + 0 + 4) / 6 = 0.75 beside a mean difference of (0 - 0.1 + 0.4) / 6
    b = runs["cell"].str.endswith("residual=True__pos_mode=none")
    runs.loc[b & runs["seed"].isin([0, 1]), "range_ood/acc_ood"] = [0.50, 0.41]
    table = comparisons_table(runs, aggregate, block_pairs(runs, aggregate))
    row = table[(table["held"] == "residual=true") & (table["axis"] == "pos_mode")].iloc[0]
    assert row["difference"] == pytest.approx(0.05) and row["p_b_above_a"] == pytest.approx(0.75)
    assert row["ci_method"] == "expanded BCa"
    assert list(table.columns).index("p_b_above_a") == list(table.columns).index("p") - 1
    text = comparisons_markdown(table)
    assert "| b - a [95% expanded BCa] | P(b > a) | sign-flip p |" in text
    assert "| +0.050 [" in text and "] | 0.75 | " in text
    # every difference is one value (-0.20, or -0.10) on every seed: a point, and why
    assert table["ci_method"].iloc[0] == "expanded percentile: all values equal: a point"
    assert under_covers_note([6]).strip() in text  # 6 seeds: the intervals under-cover
