"""The literature's row: Delétang's score from a length curve, and the best run of a group.

Worked numbers: the score is the plain mean over the lengths past training; the best run
is chosen on validation alone (a test-lucky run must not win), the maximum over runs is
reported beside it, and the interval comes from the selected cell's seeds.
"""

import math

import pandas as pd

from lit_seq.fit.scoring import past_training_means
from lit_seq.record import RunRecord
from lit_seq.results.best import best_markdown, best_table, best_tables, score_column
from lit_seq.results.tables import aggregate_table, runs_table


def test_the_score_is_the_mean_over_the_lengths_past_training():
    curve = {
        "acc": {"20": 1.0, "40": 0.6, "60": 0.5},
        "acc_ood": {"40": 0.2, "60": 0.4},
        "loss": {"20": 0.1, "40": 2.0},
    }
    means = past_training_means(curve, train_length=20)
    assert means == {"range_ood/acc": 0.55, "range_ood/acc_ood": 0.3}  # no loss mean
    assert past_training_means(curve, train_length=60) == {}  # nothing past 60
    assert past_training_means({}, train_length=20) == {}  # range evaluation off


def _run(task, arch, pos_mode, lr, seed, val, score, index, waited=False) -> RunRecord:
    group = f"t__task={task}__pos_mode={pos_mode}"
    return RunRecord(
        run_id=f"{group}__lr={lr}__seed={seed}",
        block="t",
        cell=f"{group}__lr={lr}",
        task=task,
        arch=arch,
        axes={"pos_mode": pos_mode, "lr": lr},
        axis_order=["pos_mode", "lr"],
        seed=seed,
        main_metric="acc",
        status="ok",
        metrics={"test/acc": 1.0, "range_ood/acc": score},
        val_metrics={"val/acc": val},
        select_axis="lr",
        select_metric="val/acc",
        select_group=group,
        select_seeds=[0],
        select_from=[0] if waited else [],
        index=index,
    )


def _grid() -> list[RunRecord]:
    """Two encodings x two rates on seed 0, seeds 1-2 at the winner.

    none: lr 0.01 wins on seed 0 (val 0.9 vs 0.8) though lr 0.001 scores higher past N
    (0.70 vs 0.60: the maximum over runs, not the choice); rotary: both rates tie at val
    1.0, so the rate listed first (0.01) is chosen; seed 2 is the group's best on val.
    """
    return [
        _run("echo", "transformer", "none", 0.01, 0, 0.9, 0.60, 0),
        _run("echo", "transformer", "none", 0.001, 0, 0.8, 0.70, 1),
        _run("echo", "transformer", "none", "selected", 1, 0.85, 0.50, 2, waited=True),
        _run("echo", "transformer", "none", "selected", 2, 0.7, 0.40, 3, waited=True),
        _run("echo", "transformer", "rotary", 0.01, 0, 1.0, 0.30, 4),
        _run("echo", "transformer", "rotary", 0.001, 0, 1.0, 0.35, 5),
        _run("echo", "transformer", "rotary", "selected", 1, 0.95, 0.20, 6, waited=True),
        _run("echo", "transformer", "rotary", "selected", 2, 0.99, 0.25, 7, waited=True),
    ]


def test_the_best_run_is_chosen_on_validation_and_the_maximum_is_shown_beside_it():
    runs = runs_table(_grid())
    aggregate = aggregate_table(runs)
    per_cell = best_table(runs, aggregate, ["group"]).set_index("group")
    none = per_cell.loc["t__task=echo__pos_mode=none"]
    assert none["score"] == "range_ood/acc"
    assert (none["best_by_val"], none["val"]) == ("lr=0.01 seed=0", 0.9)
    assert none["best_by_val_score"] == 0.60
    assert (none["max"], none["max_run"]) == (0.70, "lr=0.001 seed=0")
    # the interval is over the cell's reported seeds, 0.50 and 0.40: seed 0 chose the rate
    assert math.isclose(none["cell_mean"], 0.45) and none["cell_n"] == 2
    assert none["cell_values"] == "0.500 0.400"
    assert none["runs"] == 4
    rotary = per_cell.loc["t__task=echo__pos_mode=rotary"]
    # a tie (no val/loss to break it) goes to the run listed first, and is counted
    assert rotary["best_by_val"] == "lr=0.01 seed=0" and rotary["val_ties"] == 2
    assert rotary["tied_runs"] == "lr=0.01 seed=0; lr=0.001 seed=0"
    assert math.isclose(rotary["tied_score"], 0.325)  # 0.30 and 0.35


def test_per_task_and_arch_the_best_encoding_is_the_best_run_on_validation():
    runs = runs_table(_grid())
    aggregate = aggregate_table(runs)
    row = best_table(runs, aggregate, ["task", "arch"]).iloc[0]
    assert row["best_by_val"] == "pos_mode=rotary lr=0.01 seed=0"  # val 1.0 beats 0.9
    assert row["best_by_val_score"] == 0.30
    assert (row["max"], row["max_run"]) == (0.70, "pos_mode=none lr=0.001 seed=0")
    assert row["runs"] == 8
    text = best_markdown(best_tables(runs, aggregate))
    assert "### Best run per task and arch" in text and "### Best run per cell" in text
    assert "0.700 (pos_mode=none lr=0.001 seed=0)" in text


def test_a_run_is_named_by_what_sets_it_apart_and_an_unset_axis_is_left_out():
    spec7 = RunRecord(
        run_id="spec__task=echo__seed=0",
        block="spec",
        cell="spec__task=echo",
        task="echo",
        arch="transformer",
        seed=0,
        main_metric="acc",
        status="ok",
        metrics={"test/acc": 1.0, "range_ood/acc": 0.9},
        val_metrics={"val/acc": 1.0},
        index=8,
    )
    runs = runs_table([*_grid(), spec7])
    row = best_table(runs, aggregate_table(runs), ["task", "arch"]).iloc[0]
    assert row["best_by_val"] == "block=t pos_mode=rotary lr=0.01 seed=0"  # first of the ties
    assert row["max_run"] == "block=spec seed=0"  # no pos_mode=nan, lr=nan
    assert row["max"] == 0.9


def _step_run(pos_mode: str, seed: int, val: float, loss: float, acc: float, ood: float):
    """A per-step task's run: ``range_ood/acc`` counts the first N positions of each longer
    sequence, ``range_ood/acc_ood`` only the positions past N."""
    return RunRecord(
        run_id=f"e__pos_mode={pos_mode}__seed={seed}",
        block="e",
        cell=f"e__pos_mode={pos_mode}",
        task="sum_mod",
        arch="transformer",
        axes={"pos_mode": pos_mode},
        axis_order=["pos_mode"],
        seed=seed,
        main_metric="acc",
        status="ok",
        metrics={"test/acc": 1.0, "range_ood/acc": acc, "range_ood/acc_ood": ood},
        val_metrics={"val/acc": val, "val/loss": loss},
        index=2 * seed + (pos_mode == "rotary"),
    )


def test_a_per_step_task_is_ranked_and_scored_past_n_and_ties_are_listed_and_broken():
    # every run reaches val 1.000: a four-way tie, broken by the lower val/loss (rotary seed
    # 1, 0.02), not by grid order; "learnable" scores 0.30 on range_ood/acc but 0.20 past N
    records = [
        _step_run("learnable", 0, 1.0, 0.05, 0.60, 0.20),
        _step_run("rotary", 0, 1.0, 0.04, 0.55, 0.50),
        _step_run("learnable", 1, 1.0, 0.03, 0.62, 0.25),
        _step_run("rotary", 1, 1.0, 0.02, 0.50, 0.45),
    ]
    runs = runs_table(records)
    aggregate = aggregate_table(runs)
    row = best_table(runs, aggregate, ["task", "arch"]).iloc[0]
    assert row["score"] == "range_ood/acc_ood"
    assert (row["best_by_val"], row["best_by_val_score"]) == ("pos_mode=rotary seed=1", 0.45)
    assert row["val_ties"] == 4 and row["tied_runs"].startswith("pos_mode=rotary seed=1; ")
    assert math.isclose(row["tied_score"], (0.20 + 0.50 + 0.25 + 0.45) / 4)
    assert (row["max"], row["max_run"]) == (0.50, "pos_mode=rotary seed=0")  # not 0.62
    text = best_markdown(best_tables(runs, aggregate))
    assert (
        "pos_mode=rotary seed=1 (val 1.000; first of 4 tied (lower val/loss, then grid order))"
        in text
    )
    assert "0.450 (tied runs: mean 0.350)" in text
    assert "its cell: mean [95% bootstrap]" in text


def test_without_a_range_evaluation_a_task_is_scored_on_its_longest_test_set():
    def metrics(*names: str) -> pd.DataFrame:
        return pd.DataFrame({name: [0.5] for name in names})

    per_step = metrics("test/acc", "test_len128/acc_ood", "test_len40/acc_ood", "test_len40/acc")
    assert score_column(per_step, "acc") == "test_len128/acc_ood"  # by length, not by text
    # one label per sequence (no acc_ood): the whole longer sequence is past N
    label = metrics("test/acc", "test_len40/acc", "test_len128/acc")
    assert score_column(label, "acc") == "test_len128/acc"
    assert score_column(metrics("test/exact", "test_len20/exact"), "exact") == "test_len20/exact"
    assert score_column(metrics("test/acc"), "acc") == "test/acc"  # nothing past N
    assert score_column(metrics("test/exact", "range_ood/exact"), "exact") == "range_ood/exact"
