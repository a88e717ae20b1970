"""The lines the grid prints per finished run, and the steps of the running ones."""

import io

import pytest
from rich.console import Console

from lit_seq.ablate.progress import GridProgress, describe, run_progress
from lit_seq.ablate.spec import Run
from lit_seq.record import RunRecord
from tests.helpers import REPO, tiny_fit


def test_a_run_line_shows_acc_ood_past_the_training_length_and_the_target():
    record = RunRecord(
        run_id="r",
        status="ok",
        main_metric="acc",
        wall_seconds=2.0,
        target_reached=True,
        target_step=100,
        metrics={"test/acc": 1.0, "test_len20/acc": 0.75, "test_len20/acc_ood": 0.5},
    )
    assert describe(record) == "r  acc: test 1.000, len20 ood 0.500  (2.0 s)  target at 100"
    record.main_metric = "exact"  # seq2seq: exact at every length, and acc_ood beside it
    record.metrics = {"test/exact": 1.0, "test_len20/exact": 0.1, "test_len20/acc_ood": 0.4}
    record.target_reached = None
    assert describe(record) == "r  exact: test 1.000, len20 0.100, len20 ood 0.400  (2.0 s)"
    failed = RunRecord(run_id="r", error="boom")
    assert describe(failed) == "r  boom"


def test_a_run_line_of_a_long_run_id_stays_within_100_columns():
    run_id = "echo_pos__pos_mode=sinusoidal__residual=true__model.dropout=0.1__n_layers=6__seed=2"
    metrics = {f"test_len{n}/acc": 0.5 for n in (20, 40, 80, 160)}
    metrics |= {f"test_len{n}/acc_ood": 0.25 for n in (20, 40, 80, 160)}
    record = RunRecord(run_id=run_id, status="ok", main_metric="acc", metrics=metrics)
    record.wall_seconds = 12.5
    console = Console(file=io.StringIO(), width=300)
    GridProgress(1, 0, console).finish(record)
    lines = console.file.getvalue().splitlines()
    assert max(map(len, lines)) <= 100 and len(lines) == 2
    assert lines[0].startswith("[1/1] ok     echo_pos__pos_mode=sinusoidal__residual=true__")
    # nothing lost: the lines are the one line, broken
    assert "".join(line.strip() for line in lines).replace(" ", "") == (
        "[1/1]ok" + describe(record).replace(" ", "")
    )


def test_the_bar_counts_the_steps_a_running_run_has_written(tmp_path):
    folder = tmp_path / "runs" / "r"
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text("trainer:\n  max_steps: 500\n")
    (folder / "metrics.csv").write_text("epoch,lr,step,train/loss\n0,0.1,99,0.7\n0,0.1,124,0.6\n")
    progress = GridProgress(4, 1, Console(file=io.StringIO()), out_dir=tmp_path)
    progress.start(Run("r", "b", "b", {}, 0, "c", ()), "w0")
    progress.read_steps()
    assert progress._counts() == "ok 1  running 1 (steps 124/500)  failed 0"
    assert progress.completed() == pytest.approx(1 + 124 / 500)


@pytest.mark.integration
def test_the_step_of_a_real_run_folder_is_read_from_its_log(tmp_path):
    folder = tmp_path / "runs" / "r"
    tiny_fit(REPO / "configs" / "echo" / "rnn.yaml", folder, "--trainer.log_every_n_steps=2")
    assert run_progress(folder) == (6, 6)
