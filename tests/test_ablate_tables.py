"""Result tables and plots of a grid, from synthetic run rows (no training)."""

import pandas as pd

from lit_seq.record import RunRecord
from lit_seq.results.plots import bar_figure, curve_values, held_slice, write_plots
from lit_seq.results.tables import aggregate_markdown, aggregate_table, runs_table, summary_markdown


def _record(block, arch, axes, seed, metrics, **fields) -> RunRecord:
    cell = "__".join([block, *(f"{k}={v}" for k, v in axes.items())])
    return RunRecord(
        run_id=f"{cell}__seed={seed}",
        block=block,
        cell=cell,
        task="echo",
        arch=arch,
        axes=axes,
        axis_order=list(axes),
        seed=seed,
        main_metric="acc",
        status="ok",
        params=1,
        steps=1,
        train_seconds=1.0,
        samples_per_second=1.0,
        metrics=metrics,
        **fields,
    )


def _runs() -> pd.DataFrame:
    """A matrix-like grid: a transformer block crossing residual x n_layers (2 seeds),
    and a recurrent block that does not set those axes."""
    records = []
    for residual in (True, False):
        for layers in (2, 6):
            for seed in (0, 1):
                acc = 1.0 if residual else (0.9 if layers == 2 else 0.5)
                acc += 0.01 * seed
                axes = {"residual": residual, "n_layers": layers}
                metrics = {"test/acc": acc, "test_len20/acc": acc / 2}
                records.append(_record("transformer", "transformer", axes, seed, metrics))
    for seed in (0, 1):
        metrics = {"test/acc": 0.8, "test_len20/acc": 0.4}
        records.append(_record("recurrent", "rnn", {}, seed, metrics))
    for i, record in enumerate(records):
        record.index = i
    return runs_table(records)


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


def test_a_per_step_curve_is_scored_past_n_on_the_unseen_positions_only():
    # echo at N = 10: acc over all positions at 20 counts the 10 trained ones (0.75 here);
    # the tables score 20 on positions >= 10 only (0.5), and so does the curve
    curve = {"acc": {"10": 1.0, "20": 0.75}, "acc_ood": {"20": 0.5}, "exact": {"10": 1.0}}
    assert curve_values(curve, "acc") == {"10": 1.0, "20": 0.5}
    assert curve_values(curve, "exact") == {"10": 1.0}  # no exact_ood: as recorded
    assert curve_values({}, "acc") == {}


def test_summary_shows_mean_interval_success_and_per_seed_values():
    aggregate = aggregate_table(_runs())
    text = summary_markdown(aggregate)
    assert text.startswith("### echo: acc — mean [95% bootstrap interval]; seeds >= 0.99 [95%")
    # residual=false at 6 layers: seeds 0.50 and 0.51 -> mean 0.505; resampling two seeds
    # gives 0.50 or 0.51 a quarter of the time each: the interval is [0.500, 0.510]; no
    # seed solves it: 0/2, Wilson [0.00, 0.66]
    line = next(x for x in text.splitlines() if "| false | 6 |" in x)
    assert "0.505 [0.500, 0.510]; 0/2 [0.00, 0.66]; 0.500 0.510" in line
    line = next(x for x in text.splitlines() if "| true | 2 |" in x)
    assert "; 2/2 [0.34, 1.00]; 1.000 1.010" in line  # both seeds at or above 0.99
    row = aggregate.set_index("cell").loc["transformer__residual=False__n_layers=6"]
    assert (row["n"], row["seeds"], row["test/acc_min"], row["test/acc_max"]) == (
        2,
        "0 1",
        0.5,
        0.51,
    )


def test_acc_ood_replaces_acc_past_the_training_length_in_the_summary():
    records = [
        _record(
            "b",
            "rnn",
            {},
            seed,
            {"test/acc": 1.0, "test_len20/acc": 0.75, "test_len20/acc_ood": 0.5},
        )
        for seed in (0, 1)
    ]
    header = summary_markdown(aggregate_table(runs_table(records))).splitlines()[2]
    assert "test acc" in header and "test_len20 acc_ood" in header
    assert "test_len20 acc |" not in header


def test_an_old_per_seed_select_keeps_the_best_validation_run_per_seed_and_says_so():
    records = []
    # seed 0: lr 0.01 best on validation (test says otherwise: must not matter);
    # seed 1: lr 0.001 best; seed 2: lr 0.01 failed, lr 0.001 ok
    val = {(0, 0.01): 0.9, (0, 0.001): 0.8, (1, 0.01): 0.5, (1, 0.001): 0.7, (2, 0.001): 0.6}
    test = {(0, 0.01): 0.1, (0, 0.001): 0.99, (1, 0.01): 0.2, (1, 0.001): 0.3, (2, 0.001): 0.4}
    for seed in (0, 1, 2):
        for lr in (0.01, 0.001):
            ok = (seed, lr) in val
            records.append(
                _record(
                    "b",
                    "transformer",
                    {"lr": lr},
                    seed,
                    {"test/acc": test[seed, lr]} if ok else {},
                    val_metrics={"val/acc": val[seed, lr]} if ok else {},
                    select_axis="lr",
                    select_metric="val/acc",
                    select_group="b",
                )
            )
            records[-1].status = "ok" if ok else "failed"
            records[-1].index = len(records)
    runs = runs_table(records)
    assert runs["selected"].tolist() == [True, False, False, True, False, True]
    aggregate = aggregate_table(runs)
    assert aggregate["cell"].tolist() == ["b"]
    row = aggregate.iloc[0]
    # an old grid's per-seed choice: read, and called what it is
    assert row["selected"] == (
        "lr by val/acc per seed, on the reported seeds (biased up): 0.01 0.001 0.001; won at "
        "the highest and lowest lr swept: extend the sweep"
    )
    assert row["test/acc_values"] == "0.100 0.300 0.400"
    assert (row["n"], row["failed"], row["lr"]) == (3, 0, "selected")


def test_aggregate_md_shows_the_main_metrics_long_form_and_links_the_full_csv():
    records = [
        _record(
            "b",
            "rnn",
            {},
            seed,
            {"test/acc": 1.0, "test_len20/acc": 0.75, "test_len20/acc_ood": 0.5 + 0.01 * seed},
        )
        for seed in (0, 1)
    ]
    text = aggregate_markdown(aggregate_table(runs_table(records)))
    assert "[aggregate.csv](aggregate.csv)" in text.splitlines()[2]
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == "| cell | n | metric | mean [95% interval] | success [95% interval] |"
    assert table[2:] == [
        "| b | 2 | test acc | 1.000 [1.000, 1.000] | 2/2 [0.34, 1.00] |",  # equal seeds
        "|  |  | test_len20 acc_ood (length 20) | 0.505 [0.500, 0.510] | 0/2 [0.00, 0.66] |",
    ]
    wide = aggregate_markdown(aggregate_table(_runs())).splitlines()
    assert max(line.count("|") for line in wide) == 6  # 5 columns, however many metrics
    assert any("| transformer__residual=False__n_layers=6 | 2 | test acc |" in x for x in wide)


def test_bar_plots_name_the_metric_drawn_and_what_the_error_bars_are():
    records = [
        _record(b, b, {}, seed, {"test/acc": acc, "test_len20/acc_ood": 0.6})
        for b in ("rnn", "lstm")
        for seed, acc in enumerate([0.5, 1.0, 1.0])
    ]
    runs = runs_table(records)
    fig = bar_figure(runs, ["arch"], "acc", "echo: acc by arch")
    [ax] = [a for a in fig.axes]
    assert ax.get_ylabel() == "acc (train length) / acc_ood (past it)"
    assert ax.get_title() == (
        "echo: acc by arch\nerror bars: 95% bootstrap interval of the mean over seeds"
    )
    # the error bars end where the tables' interval does: inside the seeds' range [0.5, 1]
    # (mean +- std, 0.833 +- 0.289, would pass 1)
    caps = [y for line in ax.lines for y in line.get_ydata()]
    assert caps and max(caps) <= 1.0 and min(caps) >= 0.5
    one = bar_figure(runs[runs["seed"] == 0], ["arch"], "acc", "t")
    assert one.axes[0].get_title() == "t\none seed: no error bars"
