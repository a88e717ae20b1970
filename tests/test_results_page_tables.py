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
