"""A selection run computes what selection reads (issue 57): its validation scores, not the
range evaluation or the longer test sets, unless its block asks ``select.score: full`` or
the grid names ``paper:`` (whose maximum over runs reads every run's range score); the
reported runs, the run ids and the fingerprints stay as they were."""

import json

import pytest

from lit_seq.ablate.__main__ import main
from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.folder import fingerprint
from lit_seq.ablate.run_one import run_args
from lit_seq.ablate.spec import expand, load_spec, parse_spec
from lit_seq.record import RunRecord, read_records
from lit_seq.results.best import best_markdown, best_tables
from lit_seq.results.tables import aggregate_table, runs_table
from tests.helpers import REPO

SELECT = {"axis": "lr", "seeds": [100, 101, 102], "sweep_reason": "two rates: a small test"}


def _spec(select: dict, paper: str | None = None) -> dict:
    block = {"name": "b", "axes": {"task": ["echo"], "arch": ["rnn"], "lr": [0.01, 0.001]}}
    spec = {"name": "g", "seeds": [0, 1], "blocks": [{**block, "select": select}]}
    return parse_spec({**spec, **({"paper": paper} if paper else {})})


@pytest.mark.parametrize(
    ("select", "paper", "selection_scoring"),
    [
        (SELECT, None, "selection"),  # the default: selection runs scored for selection
        ({**SELECT, "score": "full"}, None, "full"),
        (SELECT, "deletang2023", "full"),  # a paper's max over runs reads every run
        ({**SELECT, "score": "selection"}, "deletang2023", "selection"),
    ],
)
def test_what_a_selection_run_is_scored_on(select, paper, selection_scoring):
    runs = expand(_spec(select, paper))
    for run in runs:
        competes = run.seed in SELECT["seeds"]
        assert run.scoring == (selection_scoring if competes else "full"), run.run_id
    # the flag reaches the fit of a selection run only, and never its digest or overrides
    job = type("Job", (), {"out_dir": "/tmp/o", "wandb_mode": "off", "grid_name": "g"})()
    lean = [r for r in runs if "--scoring=selection" in run_args(r, job)]
    assert len(lean) == (6 if selection_scoring == "selection" else 0)
    assert not any("--scoring" in arg for r in runs for arg in r.overrides)


def test_the_score_option_leaves_ids_and_fingerprint_as_they_were():
    lean, full = expand(_spec(SELECT)), expand(_spec({**SELECT, "score": "full"}))
    assert [r.run_id for r in lean] == [r.run_id for r in full]
    assert fingerprint("g", lean) == fingerprint("g", full)


def test_a_bad_score_is_one_line():
    with pytest.raises(
        BadGrid, match=r"select.score='some' must be one of \['selection', 'full'\]"
    ):
        _spec({**SELECT, "score": "some"})


def test_every_published_grid_keeps_its_run_ids():
    for marker in sorted((REPO / "docs" / "results").glob("*/fingerprint.json")):
        grid = REPO / "ablations" / f"{marker.parent.name}.yaml"
        if grid.is_file():
            ids = json.loads(marker.read_text())["run_digests"]
            assert sorted(r.run_id for r in expand(load_spec(grid))) == sorted(ids), grid.name


def _lean_and_full_records() -> list[RunRecord]:
    """A group of 2 rates: the best validation score is a selection run's (scored for
    selection only, no range score) at lr 0.01; the reported seed ran at 0.001."""
    common = {"task": "echo", "arch": "rnn", "block": "b", "main_metric": "acc", "status": "ok"}
    common |= {"select_axis": "lr", "select_metric": "val/acc", "select_seeds": [100, 101, 102]}
    common |= {"select_group": "b__task=echo__arch=rnn", "axis_order": ["lr"]}
    records = []
    for i, (lr, seed, val, score, scoring) in enumerate(
        [
            (0.01, 100, 0.99, None, "selection"),
            (0.001, 100, 0.90, None, "selection"),
            (0.001, 0, 0.95, 0.7, "full"),
        ]
    ):
        cell = f"b__task=echo__arch=rnn__lr={lr if seed >= 100 else 'selected'}"
        metrics = {"test/acc": val} | ({"range_ood/acc": score} if score is not None else {})
        records.append(
            RunRecord(
                **common, run_id=f"{cell}__seed={seed}", cell=cell, seed=seed, index=i,
                axes={"lr": lr}, val_metrics={"val/acc": val}, metrics=metrics, scoring=scoring,
                select_from=[0.01, 0.001] if seed < 100 else [],
            )
        )  # fmt: skip
    return records


def test_best_and_max_cover_the_runs_scored_in_full_and_say_how_many_are_not():
    runs = runs_table(_lean_and_full_records())
    best = best_tables(runs, aggregate_table(runs))
    row = best[best["level"] == "task+arch"].iloc[0]
    assert (row["runs"], row["unscored"], row["failed"]) == (1, 2, 0)
    assert row["val"] == 0.95 and row["best_by_val_score"] == 0.7 and row["max"] == 0.7
    assert "1 of 1 scored, 2 for selection only" in best_markdown(best)


@pytest.mark.integration
def test_a_grid_scoring_selection_runs_for_selection_reports_the_same_numbers(tmp_path):
    """The same small grid with ``score: full`` (the old behaviour) and without: the
    reported run's record is equal in every metric, the selection runs keep their
    validation scores and lose their range scores; the full grid on the lean folder
    (same fingerprint) reruns the selection runs alone."""
    body = (
        "seeds: [0]\n"
        "overrides: {{range_eval.max_factor: 2, steps: 6, val_every: 3, warmup_steps: 2,"
        " batch_size: 32, data.init_args.n_train: 64, data.init_args.n_val: 32,"
        " data.init_args.n_test: 32, data.init_args.gen_factors: [2]}}\n"
        "blocks:\n  - name: b\n    select: {{axis: lr, seeds: [100, 101, 102], "
        "sweep_reason: two rates keep the test fast{score}}}\n"
        "    axes: {{task: [echo], arch: [rnn], lr: [0.00001, 0.03]}}\n"
    )
    lean_grid, full_grid = tmp_path / "lean.yaml", tmp_path / "full.yaml"
    lean_grid.write_text("name: sel\n" + body.format(score=""))
    full_grid.write_text("name: sel\n" + body.format(score=", score: full"))
    args = ["--workers", "1", "--wandb", "off", "--pack", "on"]  # the packed path: populations
    assert main([str(lean_grid), "--out", str(tmp_path / "a"), *args]) == 0
    assert main([str(full_grid), "--out", str(tmp_path / "b"), *args]) == 0
    lean, full = read_records(tmp_path / "a"), read_records(tmp_path / "b")
    assert sorted(lean) == sorted(full) and len(lean) == 7
    for run_id, record in lean.items():
        other = full[run_id]
        assert record.val_metrics == other.val_metrics and record.axes == other.axes
        if record.seed < 100:  # the reported run: every number as before
            assert record.scoring == other.scoring == "full"
            assert record.metrics == other.metrics and record.curve == other.curve
            assert any(k.startswith("range_ood/") for k in record.metrics)
        else:
            assert record.scoring == "selection" and other.scoring == "full"
            assert not any(k.startswith(("range_ood/", "test_len")) for k in record.metrics)
            assert record.metrics == {k: v for k, v in other.metrics.items() if "test/" in k}
            assert record.phase_seconds["range_eval"] == 0 < other.phase_seconds["range_eval"]
    marker = "fingerprint.json"
    assert (tmp_path / "a" / marker).read_text() == (tmp_path / "b" / marker).read_text()
    # asking full scoring of the lean folder reruns its selection runs, nothing else
    assert main([str(full_grid), "--out", str(tmp_path / "a"), *args]) == 0
    again = read_records(tmp_path / "a")
    for run_id, record in again.items():
        rerun = record.finished_at != lean[run_id].finished_at or record.scoring != (
            lean[run_id].scoring
        )
        assert rerun is (record.seed >= 100) and record.scoring == "full", run_id
