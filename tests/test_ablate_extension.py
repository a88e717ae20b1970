"""A select: block's extension: a winner at an end of its sweep adds the next value past it,
which runs on the selection seeds before the group chooses again, at most ``extend`` times;
decided from the records alone, so a resumed grid makes the same choices."""

import pytest

from lit_seq.ablate.__main__ import main
from lit_seq.ablate.extension import (
    Sweep,
    added_run,
    beyond,
    decide,
    extend_sweeps,
    reach,
    sweeps,
)
from lit_seq.ablate.jobs import GridJob
from lit_seq.ablate.select import resolve
from lit_seq.ablate.spec import expand, parse_spec
from lit_seq.record import RunRecord, read_records, record_path, write_record
from lit_seq.results.selection import choose_value, sweep_end
from lit_seq.results.tables import aggregate_table, runs_table
from tests.helpers import write_grid

RATES = [0.0001, 0.0003, 0.001, 0.003]
SEEDS = [100, 101, 102]
GROUP = "b__task=echo__arch=rnn"


def _runs(extend: int) -> list:
    """The (unchecked) runs of a one-cell grid sweeping RATES on SEEDS, reported on seed 0."""
    block = {"name": "b", "axes": {"task": ["echo"], "arch": ["rnn"], "lr": RATES}}
    block["select"] = {"axis": "lr", "seeds": SEEDS, "metric": "val/acc", "extend": extend}
    return expand(parse_spec({"name": "g", "seeds": [0], "blocks": [block]}))


def _sweep(extend: int) -> Sweep:
    (sweep,) = sweeps(_runs(extend))
    return sweep


def _record(lr: float, seed: int, val: float | None, step: int = 0) -> RunRecord:
    """A competing run of the group at ``lr`` (``val`` None: it failed)."""
    return RunRecord(
        run_id=f"{GROUP}__lr={lr}__seed={seed}",
        block="b",
        cell=f"{GROUP}__lr={lr}",
        task="echo",
        arch="rnn",
        axes={"task": "echo", "arch": "rnn", "lr": lr},
        axis_order=["task", "arch", "lr"],
        seed=seed,
        main_metric="acc",
        status="failed" if val is None else "ok",
        metrics={} if val is None else {"test/acc": val},
        val_metrics={} if val is None else {"val/acc": val},
        select_axis="lr",
        select_metric="val/acc",
        select_group=GROUP,
        select_seeds=SEEDS,
        select_extension=step,
    )


def _records(scores: dict, step: int = 0, seeds=SEEDS) -> dict[str, RunRecord]:
    """Records of each ``lr: val`` of ``scores`` on ``seeds`` (the same val on each)."""
    found = [_record(lr, seed, val, step) for lr, val in scores.items() for seed in seeds]
    return {r.run_id: r for r in found}


LOW_WINS = {0.0001: 0.9, 0.0003: 0.8, 0.001: 0.7, 0.003: 0.6}


def test_the_next_value_is_one_geometric_step_past_the_end():
    assert beyond(RATES, "lowest") == 3.33e-05  # 1e-4 * (1e-4 / 3e-4), 3 digits
    assert beyond(RATES, "highest") == 0.009  # 3e-3 * (3e-3 / 1e-3)
    assert reach(RATES, 2) == {"lowest": [3.33e-05, 1.11e-05], "highest": [0.009, 0.027]}


def test_the_groups_that_may_extend_and_their_runs_past_the_sweep():
    assert sweeps(_runs(extend=0)) == []
    sweep = _sweep(extend=1)
    assert (sweep.group, sweep.values, sweep.limit, sweep.seeds) == (GROUP, (*RATES,), 1, (*SEEDS,))
    assert [(t.seed, t.axes["lr"]) for t in sweep.templates] == [(s, 0.0001) for s in SEEDS]
    run = added_run(sweep, sweep.templates[1], 3.33e-05, step=1)
    assert run.run_id == f"{GROUP}__lr=3.33e-05__seed=101" and run.cell == f"{GROUP}__lr=3.33e-05"
    assert "--model.init_args.lr=3.33e-05" in run.overrides
    assert not any(a.startswith("--model.init_args.lr=0.0001") for a in run.overrides)
    assert (run.select_extension, run.select_from, run.seed) == (1, (), 101)


def test_a_winner_inside_the_sweep_adds_nothing():
    inside = {0.0001: 0.5, 0.0003: 0.9, 0.001: 0.6, 0.003: 0.4}
    assert decide(_sweep(extend=3), _records(inside)) == (RATES, None)


def test_nothing_is_decided_before_every_listed_value_has_run():
    records = _records(LOW_WINS, seeds=SEEDS[:2])
    assert decide(_sweep(extend=1), records) == (RATES, None)


def test_a_lowest_winner_runs_one_step_below_which_then_wins_and_is_still_flagged():
    sweep = _sweep(extend=1)
    records = _records(LOW_WINS)
    assert decide(sweep, records) == (RATES, 3.33e-05)  # run 3.33e-05 on the selection seeds
    records |= _records({3.33e-05: 0.95}, step=1)
    values, _ = decide(sweep, records)
    assert values == [*RATES, 3.33e-05] and decide(sweep, records)[1] is None  # limit reached
    # the reported seed waited for that: it takes the new winner, chosen from all five
    waiting = next(r for r in _runs(extend=1) if r.select_from)
    resolved, error = resolve(waiting, records, values)
    assert error == "" and resolved.axes["lr"] == 3.33e-05
    assert "--model.init_args.lr=3.33e-05" in resolved.overrides
    assert resolved.select_from == (*RATES, 3.33e-05)
    # the tables: the winner still ends the sweep as extended, so it is still flagged
    row = _aggregate(records, winner=3.33e-05)
    assert row["select_edge"] == "lowest"
    assert row["selected"] == (
        "lr=3.33e-05 by mean val/acc on seeds 100 101 102 (not among the reported); sweep "
        "extended 1 step past the values listed; won at the lowest lr swept: extend the sweep"
    )


def test_a_step_that_loses_leaves_the_winner_inside_and_unflagged():
    sweep = _sweep(extend=2)
    records = _records(LOW_WINS) | _records({3.33e-05: 0.5}, step=1)
    assert decide(sweep, records) == ([*RATES, 3.33e-05], None)  # no second step: inside
    row = _aggregate(records, winner=0.0001)
    assert row["select_edge"] == ""
    assert row["selected"].endswith("; sweep extended 1 step past the values listed")


def test_at_most_extend_steps_are_added():
    sweep = _sweep(extend=2)
    records = _records(LOW_WINS) | _records({3.33e-05: 0.95}, step=1)
    assert decide(sweep, records) == ([*RATES, 3.33e-05], 1.11e-05)
    records |= _records({1.11e-05: 0.97}, step=2)
    assert decide(sweep, records) == ([*RATES, 3.33e-05, 1.11e-05], None)  # still lowest: done
    assert _aggregate(records, winner=1.11e-05)["select_edge"] == "lowest"


def test_a_failed_step_makes_its_value_ineligible_not_a_new_step():
    sweep = _sweep(extend=2)
    records = _records(LOW_WINS) | _records({3.33e-05: 0.99}, step=1, seeds=SEEDS[:2])
    records |= _records({3.33e-05: None}, step=1, seeds=SEEDS[2:])  # diverged on seed 102
    assert decide(sweep, records) == ([*RATES, 3.33e-05], None)  # 1e-4 wins, now inside


def test_a_resumed_grid_makes_the_same_choices_from_the_same_records(tmp_path):
    """Killed while the step ran (seed 102 has no record yet): the same value is asked for,
    for the seed that lacks it; read back from disk, the records decide as before."""
    sweep = _sweep(extend=2)
    records = _records(LOW_WINS) | _records({3.33e-05: 0.95}, step=1, seeds=SEEDS[:2])
    for record in records.values():
        write_record(tmp_path, record)
    assert decide(sweep, read_records(tmp_path)) == (RATES, 3.33e-05)
    write_record(tmp_path, _record(3.33e-05, 102, 0.95, step=1))
    first = decide(sweep, read_records(tmp_path))
    assert first == ([*RATES, 3.33e-05], 1.11e-05)
    assert decide(sweep, read_records(tmp_path)) == first  # again: the same


def test_each_round_goes_to_the_grids_executor_and_a_run_is_tried_once_per_call(tmp_path):
    """No training: an executor that writes the records a table of scores says (any executor,
    local or Ray, is called the same way). Step 1 (3.33e-05) wins, step 2 (1.11e-05) fails on
    seed 102 in the first call and is ok in the second."""
    sweep = _sweep(extend=2)
    for record in _records(LOW_WINS).values():
        write_record(tmp_path, record)
    scores = {3.33e-05: 0.95, 1.11e-05: 0.9}
    calls, added = [], []

    def execute(runs, job, on_start, on_record):
        calls.append(sorted(r.run_id for r in runs))
        for run in runs:
            failed = run.axes["lr"] == 1.11e-05 and run.seed == 102 and len(calls) < 3
            val = None if failed else scores[run.axes["lr"]]
            record = _record(run.axes["lr"], run.seed, val, run.select_extension)
            write_record(job.out_dir, record)
            on_record(record)

    def grow(job):
        return extend_sweeps(
            [sweep],
            job=job,
            execute=execute,
            on_start=lambda run, worker: None,
            on_record=lambda record: None,
            on_added=added.append,
            where="g",
        )

    job = GridJob(tmp_path, "g", "off")
    values, runs = grow(job)
    assert [len(c) for c in calls] == [3, 3] and added == [3, 3]  # one round per step
    assert all("lr=3.33e-05" in i for i in calls[0]) and all("lr=1.11e-05" in i for i in calls[1])
    # 1.11e-05 failed on a seed: ineligible, so 3.33e-05 wins, inside now; not retried here
    assert values == {GROUP: [*RATES, 3.33e-05, 1.11e-05]} and len(runs) == 6
    values, _ = grow(job)  # the next call runs the failed one again, and only that
    assert calls[2] == [f"{GROUP}__lr=1.11e-05__seed=102"]
    assert values == {GROUP: [*RATES, 3.33e-05, 1.11e-05]}  # 1.11e-05 wins: the limit
    grow(job)
    assert len(calls) == 3  # all done: nothing runs


def _aggregate(records: dict[str, RunRecord], winner: float):
    """The aggregate row of the group, seed 0 reported at ``winner``."""
    waited = _record(winner, 0, 0.5)
    waited.run_id, waited.cell = f"{GROUP}__lr=selected__seed=0", f"{GROUP}__lr=selected"
    waited.select_from = RATES
    listed = sorted(records.values(), key=lambda r: (r.select_extension, r.run_id))
    for index, record in enumerate([*listed, waited]):
        record.index = index
    (row,) = aggregate_table(runs_table([*listed, waited])).to_dict("records")
    return row


def test_dry_run_lists_the_values_an_extension_may_add(tmp_path, capsys):
    grid = write_grid(
        tmp_path,
        "ext",
        "seeds: [0]\nblocks:\n  - name: b\n    select: {axis: lr, seeds: [100, 101, 102], "
        "extend: 1}\n    axes: {task: [echo], arch: [rnn], lr: [0.0001, 0.0003, 0.001, 0.003]}\n",
    )
    assert main([str(grid), "--out", str(tmp_path / "out"), "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        f"{GROUP}: select may extend lr (at most 1 step(s), toward the end its winner sits at) "
        "to 3.33e-05 (lower) or 0.009 (higher), each on seeds 100,101,102; done 0/3"
    ) in out.replace("__ ", "__")  # a run id may wrap after a "__"
    assert "up to 3 more if select: extends its sweeps" in out


@pytest.mark.integration
def test_a_grid_extends_its_sweep_then_reports_at_the_winner_and_resumes_the_same(tmp_path):
    """Two rates: the winner is at an end whichever it is, so one step is always added."""
    grid = write_grid(
        tmp_path,
        "ext",
        "seeds: [0]\nblocks:\n  - name: b\n    select: {axis: lr, seeds: [100, 101, 102], "
        "extend: 1, sweep_reason: two rates keep the test fast}\n"
        "    axes: {task: [echo], arch: [rnn], lr: [0.0003, 0.003]}\n",
    )
    out = tmp_path / "out"
    args = [str(grid), "--out", str(out), "--workers", "1", "--wandb", "off"]
    assert main(args) == 0
    records = read_records(out)
    added = [r for r in records.values() if r.select_extension]
    assert len(added) == 3 and {r.seed for r in added} == set(SEEDS)
    (value,) = {r.axes["lr"] for r in added}
    assert value in (3e-05, 0.03)  # below 3e-4 or above 3e-3, as the winner said
    assert all(r.ok and r.run_id == f"{GROUP}__lr={value}__seed={r.seed}" for r in added)
    candidates = [
        (r.axes["lr"], r.seed, r.ok, r.val_metrics.get("val/acc"))
        for r in records.values()
        if r.seed in SEEDS
    ]
    values = [0.0003, 0.003, value]
    winner = choose_value(candidates, values, SEEDS, "val/acc")
    waited = records[f"{GROUP}__lr=selected__seed=0"]
    assert waited.ok and waited.axes["lr"] == winner and waited.select_from == values
    row = aggregate_table(runs_table(list(records.values()))).iloc[0]
    assert row["select_edge"] == sweep_end(winner, values)
    assert (
        "sweep extended 1 step" in row["selected"] and "sweep reason: two rates" in row["selected"]
    )
    # killed before two records were written: the same command runs just those, the same way
    kept = added[0]
    for run_id in (added[1].run_id, waited.run_id):
        record_path(out, run_id).unlink()
    assert main(args) == 0
    again = read_records(out)
    assert again[kept.run_id].finished_at == kept.finished_at  # not run again
    assert again[added[1].run_id].axes["lr"] == value
    assert again[waited.run_id].axes["lr"] == winner
