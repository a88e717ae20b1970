"""Result tables and plots of a grid, from synthetic run rows (no training)."""

import math

import pandas as pd

from lit_seq.results.plots import held_slice, write_plots
from lit_seq.results.tables import aggregate_table, summary_markdown


def _runs() -> pd.DataFrame:
    """A matrix-like grid: a transformer block crossing residual x n_layers (2 seeds),
    and a recurrent block that does not set those axes."""
    rows = []
    for residual in ("true", "false"):
        for layers in ("2", "6"):
            for seed in (0, 1):
                acc = 1.0 if residual == "true" else (0.9 if layers == "2" else 0.5)
                rows.append(
                    ("transformer", "transformer", residual, layers, seed, acc + 0.01 * seed)
                )
    for seed in (0, 1):
        rows.append(("recurrent", "rnn", None, None, seed, 0.8))
    table = pd.DataFrame(
        rows, columns=["block", "arch", "residual", "n_layers", "seed", "test/acc"]
    )
    table["run_id"] = [f"r{i}" for i in range(len(table))]
    table["cell"] = (
        table["block"]
        + "_"
        + table["arch"]
        + "_"
        + table["residual"].astype(str)
        + "_"
        + table["n_layers"].astype(str)
    )
    table["task"] = "echo"
    table["main_metric"] = "acc"
    table["status"] = "ok"
    table["test_len20/acc"] = table["test/acc"] / 2
    for column in ("params", "steps", "train_seconds", "samples_per_second"):
        table[column] = 1.0
    order = [
        "run_id",
        "block",
        "cell",
        "task",
        "arch",
        "residual",
        "n_layers",
        "seed",
        "main_metric",
    ]
    order += ["params", "steps", "train_seconds", "samples_per_second", "status"]
    return table[order + ["test/acc", "test_len20/acc"]]


def test_a_one_axis_slice_holds_the_other_axes_at_their_first_value():
    rows, held = held_slice(_runs(), ["residual"])
    assert held == {"n_layers": "2"}  # arch is also held, but rnn rows lack residual
    assert sorted(rows["residual"].unique()) == ["false", "true"]
    assert set(rows["n_layers"]) == {"2"}


def test_blocks_that_do_not_set_an_axis_stay_in_the_arch_slice():
    rows, held = held_slice(_runs(), ["arch"])
    assert held == {"residual": "true", "n_layers": "2"}
    assert sorted(rows["arch"].value_counts().items()) == [("rnn", 2), ("transformer", 2)]


def test_plots_cover_each_axis_and_the_pair_a_block_crosses(tmp_path):
    paths = write_plots(tmp_path, _runs())
    names = sorted(p.name for p in paths)
    assert names == [
        "echo_arch.png",
        "echo_n_layers.png",
        "echo_residual.png",
        "echo_residual_x_n_layers.png",
    ]
    assert all(p.stat().st_size > 0 for p in paths)


def test_summary_shows_mean_and_std_per_cell_and_test_length():
    aggregate = aggregate_table(_runs())
    text = summary_markdown(aggregate)
    assert text.startswith("### echo: acc (mean ± std over seeds)")
    # residual=false at 6 layers: seeds 0.50 and 0.51
    std = pd.Series([0.5, 0.51]).std()
    line = next(x for x in text.splitlines() if "| false | 6 |" in x)
    assert f"0.505 ± {std:.3f}" in line
    assert f"{0.505 / 2:.3f}" in line and not math.isnan(std)
