"""A grid's select: the learning rate (or any axis) chosen by validation, per seed or on some."""

import pytest

from lit_seq.ablate.__main__ import main
from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.selection import resolve
from lit_seq.ablate.spec import expand, parse_spec
from lit_seq.record import RunRecord, read_records
from lit_seq.results.selection import choose_value
from lit_seq.results.tables import aggregate_table, runs_table
from tests.helpers import write_grid


def _spec(select: dict, seeds=(0, 1, 2)) -> dict:
    block = {"name": "b", "axes": {"task": ["echo"], "arch": ["rnn"], "lr": [0.01, 0.001]}}
    return parse_spec({"name": "g", "seeds": list(seeds), "blocks": [{**block, "select": select}]})


def test_selection_seeds_compete_and_the_others_wait_for_the_winner():
    runs = expand(_spec({"axis": "lr", "seeds": [0]}))
    assert [r.run_id for r in runs] == [
        "b__task=echo__arch=rnn__lr=0.01__seed=0",
        "b__task=echo__arch=rnn__lr=selected__seed=1",
        "b__task=echo__arch=rnn__lr=selected__seed=2",
        "b__task=echo__arch=rnn__lr=0.001__seed=0",
    ]
    waiting = runs[1]
    assert waiting.select_from == (0.01, 0.001) and waiting.select_group == "b__task=echo__arch=rnn"
    assert not any("--model.init_args.lr" in a for a in waiting.overrides)
    # per seed (no select.seeds): every value on every seed
    assert len(expand(_spec({"axis": "lr"}))) == 6


@pytest.mark.parametrize(
    ("select", "expected"),
    [
        (
            {"axis": "dropout"},
            r"select.axis='dropout' must be an axis the block varies: one of \['lr'\]",
        ),
        ({"axis": "lr", "seeds": [7]}, r"select.seeds=\[7\] must be a list of the grid's seeds"),
        ({"axis": "lr", "metric": "test/acc"}, r"select.metric='test/acc' must be a validation"),
        ({"axis": "lr", "by": "x"}, r"unknown key 'by'"),
    ],
)
def test_a_bad_select_is_one_line(select, expected):
    with pytest.raises(BadGrid, match=expected):
        _spec(select)


def test_choose_value_worked_example_and_failed_values_are_not_eligible():
    # lr 0.01: val 0.9, 0.7 (mean 0.80); lr 0.001: 0.8, 0.85 (mean 0.825) -> 0.001
    runs = [
        (0.01, 0, True, 0.9),
        (0.01, 1, True, 0.7),
        (0.001, 0, True, 0.8),
        (0.001, 1, True, 0.85),
    ]
    assert choose_value(runs, [0.01, 0.001], [0, 1], "val/acc") == 0.001
    assert choose_value(runs, [0.01, 0.001], [0, 1], "val/loss") == 0.01  # lower is better
    diverged = [(0.01, 0, False, None), (0.001, 0, True, 0.2)]
    assert choose_value(diverged, [0.01, 0.001], [0], "val/acc") == 0.001
    assert (
        choose_value([(0.01, 0, True, 0.5), (0.001, 0, True, 0.5)], [0.01, 0.001], [0], "val/acc")
        == 0.01
    )  # tie: first


def test_a_waiting_run_whose_group_has_no_ok_run_fails_with_a_reason():
    waiting = expand(_spec({"axis": "lr", "seeds": [0]}))[1]
    record = RunRecord(run_id="x", select_group=waiting.select_group, axes={"lr": 0.01}, seed=0)
    resolved, error = resolve(waiting, {"x": record})  # status failed
    assert (
        resolved is None and "no lr of [0.01, 0.001] has ok runs on every selection seed" in error
    )


@pytest.mark.integration
def test_a_grid_selects_on_seed_0_and_runs_the_other_seeds_at_the_winner(tmp_path):
    grid = write_grid(
        tmp_path,
        "sel",
        "seeds: [0, 1]\nblocks:\n  - name: b\n    select: {axis: lr, seeds: [0]}\n"
        "    axes: {task: [echo], arch: [rnn], lr: [0.00001, 0.03]}\n",
    )
    out = tmp_path / "out"
    assert main([str(grid), "--out", str(out), "--workers", "1", "--wandb", "off"]) == 0
    records = read_records(out)
    contest = {r.axes["lr"]: r.val_metrics["val/acc"] for r in records.values() if r.seed == 0}
    winner = max(contest, key=contest.get)
    waited = records["b__task=echo__arch=rnn__lr=selected__seed=1"]
    assert waited.ok and waited.axes["lr"] == winner and waited.select_from == [0.00001, 0.03]
    assert f"--model.init_args.lr={winner}" in waited.overrides
    row = aggregate_table(runs_table(list(records.values()))).iloc[0]
    assert (
        row["n"] == 2 and row["selected"] == f"lr by val/acc on seeds 0 for all: {winner} {winner}"
    )
    # nothing left to run: a second call trains nothing and selects the same value
    assert main([str(grid), "--out", str(out), "--workers", "1", "--wandb", "off"]) == 0
    assert read_records(out)[waited.run_id].finished_at == waited.finished_at
