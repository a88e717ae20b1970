"""Every table of scores names its lengths and chance level, derived from the records."""

import pandas as pd

from lit_seq.data import TASKS
from lit_seq.record import RunRecord
from lit_seq.results.best import best_markdown, best_tables
from lit_seq.results.paper import PaperRow, paper_markdown, side_by_side
from lit_seq.results.scored_on import VARIABLE_LENGTH_TASKS, range_lengths, scored_on
from lit_seq.results.tables import aggregate_markdown, aggregate_table, runs_table, summary_markdown


def _record(seed: int, task: str = "parity_check", step: int = 1) -> RunRecord:
    # trained at N = 40, range evaluation at every `step`th length up to 5 N = 200
    curve = {"acc": {str(n): 0.5 + 0.01 * seed for n in range(step, 201, step)}}
    return RunRecord(
        run_id=f"c__seed={seed}",
        block="b",
        cell="c",
        task=task,
        arch="rnn",
        seed=seed,
        index=seed,
        main_metric="acc",
        status="ok",
        train_length=40,
        chance=0.5,
        curve=curve,
        range_ood_longest=200,
        metrics={
            "test/acc": 1.0,
            "test/exact": 1.0,
            "test_len200/acc": 0.6,
            "range_ood/acc": 0.5 + 0.01 * seed,
        },
        val_metrics={"val/acc": 1.0},
    )


def test_the_range_is_the_curves_lengths_past_the_training_length():
    assert range_lengths({"acc": {"20": 1, "40": 1, "41": 1, "42": 1}}, 40) == "41-42"
    assert range_lengths({"acc": {str(n): 1 for n in range(20, 201, 20)}}, 40) == "60-200 every 20"
    assert range_lengths({"acc": {"60": 1, "80": 1, "160": 1}}, 40) == "60-160 (3 lengths)"
    assert range_lengths({"acc": {"20": 1, "40": 1}}, 40) == ""  # nothing past N
    assert range_lengths({}, None) == ""


def test_worked_example_lengths_and_chance_from_the_runs_table():
    runs = runs_table([_record(s) for s in (0, 1, 2)])
    assert list(runs["range_ood_lengths"]) == ["41-200"] * 3
    assert scored_on(runs, "range_ood/acc") == "lengths 41-200, chance 0.5"
    assert scored_on(runs, "test/acc") == "length 40, chance 0.5"
    assert scored_on(runs, "test_len200/acc") == "length 200, chance 0.5"
    assert scored_on(runs, "test/exact") == "length 40"  # a guess's exact match is not 1/2
    assert scored_on(runs, "range_ood/acc", scale=100) == "lengths 41-200, chance 50"
    stepped = runs_table([_record(s, step=20) for s in (0, 1)])
    assert scored_on(stepped, "range_ood/acc") == "lengths 60-200 every 20, chance 0.5"


def test_acc_ood_says_it_counts_the_positions_past_n_and_seq2seq_mixes_lengths():
    rows = pd.DataFrame(
        [{"task": "seq2seq", "train_length": 10, "chance": None, "main_metric": "exact"}]
    )
    assert scored_on(rows, "test/exact") == "lengths <= 10"
    assert scored_on(rows, "test_len20/acc_ood") == "lengths 11-20, positions > 10"
    per_step = rows.assign(task="echo", chance=0.1, main_metric="acc")
    assert scored_on(per_step, "test_len20/acc_ood") == "length 20, positions > 10, chance 0.1"


def test_the_variable_length_tasks_are_the_seq2seq_ones():
    assert set(VARIABLE_LENGTH_TASKS) == {n for n, t in TASKS.items() if t.task_kind == "seq2seq"}


def test_cells_that_differ_in_n_are_labelled_each():
    rows = pd.DataFrame(
        {"task": "t", "train_length": [40, 20], "chance": 0.5, "main_metric": "acc"}
    )
    assert scored_on(rows, "test/acc") == "length 40, chance 0.5; length 20, chance 0.5"


def test_every_table_of_scores_names_its_lengths_and_chance():
    runs = runs_table([_record(s) for s in (0, 1, 2)])
    aggregate = aggregate_table(runs)
    summary = summary_markdown(aggregate).splitlines()[2]
    assert "| test acc (length 40, chance 0.5) |" in summary
    assert "| test_len200 acc (length 200, chance 0.5) |" in summary
    lines = aggregate_markdown(aggregate).splitlines()
    assert any("| test acc (length 40, chance 0.5) | 1.000" in line for line in lines)
    best = best_markdown(best_tables(runs, aggregate))
    assert "| range_ood/acc (lengths 41-200, chance 0.5) |" in best
    beside = side_by_side(runs, [PaperRow("parity_check", "rnn", 100.0, "t")])
    assert beside["scored_on"].iloc[0] == "lengths 41-200, chance 50"
    page = paper_markdown(beside, "paper").splitlines()
    assert page[2].startswith("| task | arch | scored on (range_ood/acc, x 100) | paper |")
    assert page[4].startswith("| parity_check | rnn | lengths 41-200, chance 50 | 100.0 |")


def test_an_older_runs_table_without_the_column_still_aggregates():
    runs = runs_table([_record(s) for s in (0, 1)]).drop(columns=["range_ood_lengths"])
    aggregate = aggregate_table(runs)
    assert aggregate["range_ood_lengths"].iloc[0] is None
    assert scored_on(aggregate, "range_ood/acc") == "lengths > 40, chance 0.5"
