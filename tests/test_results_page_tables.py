"""A page's own tables (``lit_seq.report --tables``): the cells it names, side by side, with
the numbers the aggregate holds; a bad file is one line naming the table and row."""

import re

import pytest

from lit_seq.record import write_record
from lit_seq.report import main as report_main
from lit_seq.results.page_tables import read_tables, tables_markdown
from tests.test_results_comparisons import _record, _tables

TWO_CELLS = """
- title: Encodings with residuals
  columns: [test acc, past N]
  rows:
    - [sinusoidal, 'residual=True sinusoidal', test/acc, range_ood/acc_ood]
    - [NoPE, 'residual=True none', '-', range_ood/acc_ood]
"""


def test_a_table_shows_each_named_cell_with_its_aggregate_numbers(tmp_path):
    _, aggregate = _tables()
    (tmp_path / "tables.yaml").write_text(TWO_CELLS)
    text = tables_markdown(read_tables(tmp_path / "tables.yaml", aggregate), aggregate)
    lines = text.splitlines()
    assert lines[0] == "### Encodings with residuals"
    assert lines[2] == "|  | test acc | past N | n | rate chosen |"
    # past N: sinusoidal 0.50 + 0.01 s over seeds 0-5 (mean 0.525); none adds 0.10
    sinusoidal, nope = lines[4], lines[5]
    assert sinusoidal == (
        "| sinusoidal | 1.000 [1.000, 1.000]; 6/6 [0.61, 1.00] | 0.525 [0.507, 0.543] | 6 "
        "| shipped |"
    )
    assert nope.startswith("| NoPE | - | 0.625 [") and nope.endswith("| 6 | shipped |")


def test_a_table_names_what_each_column_is_scored_on(tmp_path):
    _, aggregate = _tables()
    aggregate["train_length"], aggregate["chance"], aggregate["main_metric"] = 10, 0.5, "acc"
    (tmp_path / "tables.yaml").write_text(TWO_CELLS)
    lines = tables_markdown(read_tables(tmp_path / "tables.yaml", aggregate), aggregate)
    # from the cells' aggregate, not typed: the test set's length, the positions past N
    assert lines.splitlines()[2] == (
        "Scored on: test acc: length 10, chance 0.5 | past N: lengths > 10, positions > 10, "
        "chance 0.5."
    )


def test_a_rate_the_grid_sets_is_named_as_set_not_as_shipped(tmp_path):
    _, aggregate = _tables()
    aggregate["lr"] = 0.01  # an lr axis with one value, no select: block
    (tmp_path / "tables.yaml").write_text(TWO_CELLS)
    text = tables_markdown(read_tables(tmp_path / "tables.yaml", aggregate), aggregate)
    assert text.splitlines()[4].endswith("| 6 | 0.01 (set, not selected) |")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[{title: t, columns: [a], rows: [[x, rotary, test/acc]]}]", "row 1: 'rotary' matches no cell"),
        ("[{title: t, columns: [a], rows: [[x, 'residual=True none']]}]", "row 1: a row is [label, cell, one metric per column (1)]"),
        ("[{title: t, columns: [a], rows: [[x, 'residual=True none', test/f1]]}]", "no metric 'test/f1'"),
        ("[{title: t, rows: []}]", "table 1: keys must be exactly ['title', 'columns', 'rows']"),
        ("{title: t}", "a tables file is a list"),
    ],
)  # fmt: skip
def test_a_bad_tables_file_is_one_line_naming_the_table_and_row(tmp_path, text, problem):
    _, aggregate = _tables()
    (tmp_path / "tables.yaml").write_text(text)
    with pytest.raises(ValueError, match=re.escape(problem)) as caught:
        read_tables(tmp_path / "tables.yaml", aggregate)
    assert "\n" not in str(caught.value)


def test_report_writes_the_tables_and_refuses_a_bad_file_before_writing(tmp_path, capsys):
    out = tmp_path / "out"
    for i, seed in enumerate([0, 1, 2]):
        write_record(out, _record("none", True, seed, 0.5, i))
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("- {title: T, columns: [past N], rows: [[NoPE, none, range_ood/acc_ood]]}\n")
    bad.write_text("- {title: T, columns: [past N], rows: [[NoPE, rotary, range_ood/acc_ood]]}\n")
    assert report_main([str(out), "--tables", str(bad)]) == 2
    assert "table 1, row 1: 'rotary' matches no cell" in capsys.readouterr().err
    assert not (out / "runs.csv").exists() and not (out / "tables.md").exists()
    assert report_main([str(out), "--tables", str(good)]) == 0
    assert "| NoPE | 0.500 [" in (out / "tables.md").read_text()


# a results page's tables file -> the grid whose cells it names
TABLES_FILES = {
    "docs/results/matrix_tables.yaml": "matrix.yaml",
    "docs/results/pe_extrapolation_tables.yaml": "pe_extrapolation.yaml",
    "docs/results/mixers_tables.yaml": "mixers.yaml",
    "docs/results/mixers_budget_tables.yaml": "mixers_budget.yaml",
    "docs/results/mixers_recall_10k_tables.yaml": "mixers_recall_10k.yaml",
    "docs/results/mixers_modular_6k_tables.yaml": "mixers_modular_6k.yaml",
}


@pytest.mark.parametrize(("path", "grid"), TABLES_FILES.items())
def test_every_shipped_tables_file_names_cells_of_its_grid(path, grid):
    import pandas as pd
    import yaml

    from tests.helpers import REPO, report_cells

    cells = report_cells(grid)
    entries = yaml.safe_load((REPO / path).read_text())
    metrics = {m for table in entries for row in table["rows"] for m in row[2:] if m != "-"}
    aggregate = pd.DataFrame({"cell": cells, **{f"{m}_mean": float("nan") for m in metrics}})
    tables = read_tables(REPO / path, aggregate)
    assert sum(len(t["rows"]) for t in tables) == sum(len(e["rows"]) for e in entries) > 0


def _sweep_record(lr, seed: int, val: float, acc: float, index: int):
    """One run of block ``r``'s lr sweep on arch ``mamba``: selection seeds 100-101 at each
    rate, reported seeds at the winner (``lr="selected"``, run at 0.01)."""
    from lit_seq.record import RunRecord

    group = "r__arch=mamba"
    return RunRecord(
        run_id=f"{group}__lr={lr}__seed={seed}",
        block="r",
        cell=f"{group}__lr={lr}",
        task="associative_recall",
        arch="mamba",
        axes={"arch": "mamba", "lr": 0.01 if lr == "selected" else lr},
        axis_order=["arch", "lr"],
        seed=seed,
        main_metric="acc",
        status="ok",
        metrics={"test/acc": acc},
        val_metrics={"val/acc": val},
        select_axis="lr",
        select_metric="val/acc",
        select_group=group,
        select_seeds=[100, 101],
        select_from=[0.001, 0.01] if lr == "selected" else [],
        index=index,
    )


def test_zoologys_best_rate_is_each_selection_seeds_maximum_over_rates_then_their_mean(tmp_path):
    """best_rate.py's worked example: test/acc 0.30 / 0.90 at rates 0.001 / 0.01 on seed 100,
    0.95 / 0.50 on seed 101 -> draws 0.90 and 0.95, mean 0.925 (the best per-rate mean would
    be 0.700); the reported seeds (0.80, 0.70 at the winner, 0.01) are ours beside it."""
    from lit_seq.results.best_rate import best_rate_values
    from lit_seq.results.tables import aggregate_table, runs_table

    runs = runs_table(
        [
            _sweep_record(0.001, 100, 0.3, 0.30, 0),
            _sweep_record(0.01, 100, 0.9, 0.90, 1),
            _sweep_record(0.001, 101, 0.9, 0.95, 2),
            _sweep_record(0.01, 101, 0.6, 0.50, 3),
            _sweep_record("selected", 0, 0.8, 0.80, 4),
            _sweep_record("selected", 1, 0.7, 0.70, 5),
        ]
    )
    aggregate = aggregate_table(runs)
    assert best_rate_values(runs, "r__arch=mamba", "test/acc") == ({100: 0.90, 101: 0.95}, 2)
    (tmp_path / "tables.yaml").write_text(
        "[{title: recall, columns: [N], best_rate: test/acc, rows: [[mamba, mamba, test/acc]]}]"
    )
    text = tables_markdown(read_tables(tmp_path / "tables.yaml", aggregate), aggregate, runs)
    header, _, row = text.splitlines()[2:5]
    assert header == (
        "|  | N | Zoology's protocol: best rate's test/acc, per seed | n | rate chosen |"
    )
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[0] == "mamba" and cells[1].startswith("0.750 [")  # ours: seeds 0-1 at 0.01
    assert cells[2] == "0.925 (2 seeds, 0.900-0.950; best of 2 rates)"
    assert cells[3:] == ["2", "0.01 (highest of its sweep)"]
