"""A grid's select: the learning rate (or any axis) chosen on selection seeds that are not
reported, by their mean validation score; a winner at an end of its sweep is flagged."""

import pytest

from lit_seq.ablate.__main__ import main
from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.select import resolve
from lit_seq.ablate.spec import expand, parse_spec
from lit_seq.record import RunRecord, read_records
from lit_seq.results.best import best_markdown, best_tables
from lit_seq.results.comparisons import comparisons_table
from lit_seq.results.selection import choose_value, sweep_end
from lit_seq.results.tables import aggregate_table, runs_table, summary_markdown
from tests.helpers import write_grid

# two rates keep these tests small; a real grid sweeps 4 spanning 30x or says why not
SELECT = {"axis": "lr", "seeds": [100, 101, 102], "sweep_reason": "two rates: a small test"}


def _spec(select: dict, seeds=(0, 1, 2)) -> dict:
    block = {"name": "b", "axes": {"task": ["echo"], "arch": ["rnn"], "lr": [0.01, 0.001]}}
    return parse_spec({"name": "g", "seeds": list(seeds), "blocks": [{**block, "select": select}]})


def test_selection_seeds_compete_and_the_grid_seeds_wait_for_the_winner():
    runs = expand(_spec(SELECT))
    assert [r.run_id for r in runs] == [
        "b__task=echo__arch=rnn__lr=0.01__seed=100",
        "b__task=echo__arch=rnn__lr=0.01__seed=101",
        "b__task=echo__arch=rnn__lr=0.01__seed=102",
        "b__task=echo__arch=rnn__lr=selected__seed=0",
        "b__task=echo__arch=rnn__lr=selected__seed=1",
        "b__task=echo__arch=rnn__lr=selected__seed=2",
        "b__task=echo__arch=rnn__lr=0.001__seed=100",
        "b__task=echo__arch=rnn__lr=0.001__seed=101",
        "b__task=echo__arch=rnn__lr=0.001__seed=102",
    ]
    waiting = runs[3]
    assert waiting.select_from == (0.01, 0.001) and waiting.select_group == "b__task=echo__arch=rnn"
    assert waiting.select_seeds == (100, 101, 102)
    assert not any("--model.init_args.lr" in a for a in waiting.overrides)
    assert "--data.init_args.seed=101" in runs[1].overrides  # its own data, like any seed


@pytest.mark.parametrize(
    ("select", "expected"),
    [
        (
            {"axis": "dropout"},
            r"select.axis='dropout' must be an axis the block varies: one of \['lr'\]",
        ),
        (
            {"axis": "lr"},  # per seed: each seed's best rate, reported on that seed
            r"select.seeds=None must list at least 3 distinct seeds .* e.g. \[100, 101, 102\]",
        ),
        ({"axis": "lr", "seeds": [100, 101]}, r"select.seeds=\[100, 101\] must list at least 3"),
        ({"axis": "lr", "seeds": [100, 100, 101]}, r"must list at least 3 distinct seeds"),
        (
            {"axis": "lr", "seeds": [0, 100, 101]},
            r"select.seeds \[0\] are also the grid's seeds: a seed that chose the lr would be "
            r"in the mean it reports",
        ),
        ({"axis": "lr", "metric": "test/acc", **SELECT}, r"select.metric='test/acc' must be"),
        ({"axis": "lr", "by": "x"}, r"unknown key 'by'"),
        ({**SELECT, "sweep_reason": " "}, r"select.sweep_reason=' ' must be a sentence saying"),
        ({**SELECT, "sweep_reason": 3}, r"select.sweep_reason=3 must be a sentence"),
        ({**SELECT, "extend": -1}, r"select.extend=-1 must be an integer >= 0: how many values"),
        ({**SELECT, "extend": True}, r"select.extend=True must be an integer >= 0"),
        ({**SELECT, "extend": "2"}, r"select.extend='2' must be an integer >= 0"),
    ],
)
def test_a_bad_select_is_one_line(select, expected):
    with pytest.raises(BadGrid, match=expected):
        _spec(select)


def _sweep(axis: str, values: list, **select) -> dict:
    """A one-block grid selecting ``axis`` among ``values`` (the rest of select: as given)."""
    axes = {"task": ["echo"], "arch": ["transformer"], axis: values}
    select = {"axis": axis, "seeds": [100, 101, 102], **select}
    return parse_spec(
        {"name": "g", "seeds": [0], "blocks": [{"name": "b", "axes": axes, "select": select}]}
    )


@pytest.mark.parametrize(
    ("rates", "expected"),
    [
        (  # three rates, however wide
            [0.0001, 0.001, 0.01],
            "grid: block 'b': axes.lr=[0.0001, 0.001, 0.01] has 3 values spanning 100x; a select: "
            "block sweeps at least 4 learning rates spanning at least 30x (max/min), e.g. "
            "[0.0001, 0.0003, 0.001, 0.003], or states why not in select.sweep_reason",
        ),
        (  # four rates within 10x
            [0.001, 0.002, 0.005, 0.01],
            "grid: block 'b': axes.lr=[0.001, 0.002, 0.005, 0.01] has 4 values spanning 10x; a "
            "select: block sweeps at least 4 learning rates spanning at least 30x (max/min), "
            "e.g. [0.001, 0.003, 0.01, 0.03], or states why not in select.sweep_reason",
        ),
    ],
)
def test_a_narrow_learning_rate_sweep_is_refused_in_one_line(rates, expected):
    with pytest.raises(BadGrid) as err:
        _sweep("lr", rates)
    assert str(err.value) == expected


def test_a_narrow_sweep_with_its_reason_is_accepted_and_every_run_carries_the_reason():
    reason = "Deletang et al.'s own three rates"
    runs = expand(_sweep("lr", [0.0001, 0.0003, 0.0005], sweep_reason=reason))
    assert {r.select_reason for r in runs} == {reason}
    wide = expand(_sweep("lr", [0.0001, 0.0003, 0.001, 0.003]))  # the default: no reason needed
    assert {r.select_reason for r in wide} == {""} and wide[0].select_extend == 0
    assert expand(_sweep("lr", [0.00001, 0.00003, 0.0001, 0.0003]))  # 30x, 29.99.. in binary


def test_the_sweep_rule_is_about_learning_rates_and_extend_needs_numbers():
    assert _sweep("pos_mode", ["none", "rotary"])["blocks"][0]["select"]["extend"] == 0
    assert _sweep("dropout", [0.0, 0.1])["blocks"][0]["select"]["sweep_reason"] == ""
    with pytest.raises(
        BadGrid,
        match=r"select.extend=1 steps the pos_mode sweep geometrically, "
        r"so axes.pos_mode must be positive numbers, got \['none', 'rotary'\]",
    ):
        _sweep("pos_mode", ["none", "rotary"], extend=1)


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


def test_sweep_end_names_the_end_a_winner_sits_at():
    assert sweep_end(0.01, [0.003, 0.001, 0.01]) == "highest"  # by value, not list order
    assert sweep_end("0.001", ["0.003", "0.001", "0.01"]) == "lowest"
    assert sweep_end(0.003, [0.003, 0.001, 0.01]) == ""
    assert sweep_end("rotary", ["none", "rotary"]) == ""  # no ends to a list of names


def test_a_waiting_run_whose_group_has_no_ok_run_fails_with_a_reason():
    waiting = expand(_spec(SELECT))[3]
    record = RunRecord(run_id="x", select_group=waiting.select_group, axes={"lr": 0.01}, seed=100)
    resolved, error = resolve(waiting, {"x": record})  # status failed
    assert resolved is None and "no lr of [0.01, 0.001] has ok runs on every selection" in error


def _run(lr, seed: int, val: float, test: float, select_seeds, index: int) -> RunRecord:
    """A record of group ``b``: a contest run at ``lr``, or (``lr`` given as ``(winner,)``)
    a run that waited for the winner."""
    waited = isinstance(lr, tuple)
    value = lr[0] if waited else lr
    return RunRecord(
        run_id=f"b__lr={'selected' if waited else value}__seed={seed}",
        block="b",
        cell=f"b__lr={'selected' if waited else value}",
        task="echo",
        arch="transformer",
        axes={"lr": value},
        axis_order=["lr"],
        seed=seed,
        main_metric="acc",
        status="ok",
        metrics={"test/acc": test},
        val_metrics={"val/acc": val},
        select_axis="lr",
        select_metric="val/acc",
        select_group="b",
        select_seeds=list(select_seeds),
        select_from=[0.01, 0.003, 0.001] if waited else [],
        index=index,
    )


def _grid(lucky: float) -> list:
    """lr 0.003 wins on seeds 100-102 (mean val 0.9 vs 0.8 and 0.7); seed 100's test score
    at it is ``lucky``; seeds 0-2 ran at 0.003 and score 0.6, 0.5, 0.4."""
    records, val = [], {0.01: 0.8, 0.003: 0.9, 0.001: 0.7}
    for lr in (0.01, 0.003, 0.001):
        for seed in (100, 101, 102):
            test = lucky if (lr, seed) == (0.003, 100) else 0.3
            records.append(_run(lr, seed, val[lr], test, (100, 101, 102), len(records)))
    for seed, test in zip((0, 1, 2), (0.6, 0.5, 0.4), strict=True):
        records.append(_run((0.003,), seed, 0.85, test, (100, 101, 102), len(records)))
    return records


@pytest.mark.parametrize("lucky", [0.0, 0.3, 1.0])
def test_a_lucky_selection_seed_does_not_move_the_reported_mean(lucky):
    runs = runs_table(_grid(lucky))
    assert runs["selected"].tolist() == [False] * 9 + [True] * 3
    row = aggregate_table(runs).iloc[0]
    assert (row["cell"], row["n"], row["seeds"]) == ("b", 3, "0 1 2")
    assert row["test/acc_mean"] == pytest.approx(0.5)  # 0.6 0.5 0.4, whatever seed 100 got
    assert row["selected"] == (
        "lr=0.003 by mean val/acc on seeds 100 101 102 (not among the reported)"
    )
    assert row["select_edge"] == ""  # 0.003 lies inside 0.001..0.01


def test_the_reason_a_grid_gives_for_its_sweep_is_printed_beside_the_choice():
    records = _grid(0.3)
    for record in records:
        record.select_reason = "Deletang et al.'s own three rates"
    aggregate = aggregate_table(runs_table(records))
    assert aggregate.iloc[0]["selected"] == (
        "lr=0.003 by mean val/acc on seeds 100 101 102 (not among the reported); "
        "sweep reason: Deletang et al.'s own three rates"
    )
    assert "sweep reason: Deletang et al.'s own three rates" in summary_markdown(aggregate)
    # a record written before these fields existed reads as no reason, no extension
    old = RunRecord.from_json({"run_id": "x", "select_group": "b", "select_from": [0.01]})
    assert (old.select_reason, old.select_extension) == ("", 0)


def test_an_old_grid_that_chose_on_a_reported_seed_reports_the_others():
    """Records of the old rule (seed 0 chose, seeds 1-2 waited): seed 0's lucky run at the
    winner is no longer in the mean."""
    records = [
        _run(lr, 0, val, test, (0,), i)
        for i, (lr, val, test) in enumerate([(0.01, 0.8, 0.3), (0.003, 0.9, 0.99)])
    ]
    records += [_run((0.003,), s, 0.85, t, (0,), 2 + s) for s, t in ((1, 0.5), (2, 0.4))]
    row = aggregate_table(runs_table(records)).iloc[0]
    assert (row["n"], row["test/acc_mean"]) == (2, pytest.approx(0.45))


def test_a_winner_at_an_end_of_its_sweep_is_flagged_in_every_table():
    records = _grid(0.3)
    for record in records:  # lr 0.01 now wins: the highest rate swept
        if record.axes["lr"] == 0.01:
            record.val_metrics = {"val/acc": 0.95}
        if record.select_from:
            record.axes = {"lr": 0.01}
    runs = runs_table(records)
    assert set(runs["select_edge"]) == {"highest"}
    aggregate = aggregate_table(runs)
    row = aggregate.iloc[0]
    assert row["select_edge"] == "highest"
    assert row["selected"].endswith("; won at the highest lr swept: extend the sweep")
    assert "won at the highest lr swept" in summary_markdown(aggregate)
    best = best_markdown(best_tables(runs, aggregate))
    assert "selected value at the highest end of its sweep" in best
    pair = {"cell_a": "b", "cell_b": "b", "metric": "test/acc"}
    compared = comparisons_table(runs, aggregate, [pair])
    assert compared["select_edge"].iloc[0] == "a: highest; b: highest"


@pytest.mark.integration
def test_a_grid_selects_on_its_selection_seeds_and_runs_its_seeds_at_the_winner(tmp_path):
    grid = write_grid(
        tmp_path,
        "sel",
        "seeds: [0]\nblocks:\n  - name: b\n    select: {axis: lr, seeds: [100, 101, 102], "
        "sweep_reason: two rates keep the test fast}\n"
        "    axes: {task: [echo], arch: [rnn], lr: [0.00001, 0.03]}\n",
    )
    out = tmp_path / "out"
    assert main([str(grid), "--out", str(out), "--workers", "1", "--wandb", "off"]) == 0
    records = read_records(out)
    val = {}
    for r in records.values():
        if r.seed >= 100:
            val.setdefault(r.axes["lr"], []).append(r.val_metrics["val/acc"])
    winner = max(val, key=lambda lr: sum(val[lr]) / len(val[lr]))
    waited = records["b__task=echo__arch=rnn__lr=selected__seed=0"]
    assert waited.ok and waited.axes["lr"] == winner and waited.select_from == [0.00001, 0.03]
    assert f"--model.init_args.lr={winner}" in waited.overrides
    # the selection runs and the run at the winner took turns on the grid's one worker
    # process: its start-up (the Lightning import) is paid once a grid, not once a phase
    assert len({r.worker for r in records.values()}) == 1
    row = aggregate_table(runs_table(list(records.values()))).iloc[0]
    assert row["n"] == 1 and row["seeds"] == "0"
    assert row["selected"].startswith(f"lr={winner} by mean val/acc on seeds 100 101 102")
    # nothing left to run: a second call trains nothing and selects the same value
    assert main([str(grid), "--out", str(out), "--workers", "1", "--wandb", "off"]) == 0
    assert read_records(out)[waited.run_id].finished_at == waited.finished_at
