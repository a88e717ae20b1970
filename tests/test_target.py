"""Stop at the target: the fit ends where the validation metric holds, and says when."""

import pytest

from lit_seq.fit import BadInput, build_cli, run
from lit_seq.fit.target import StopAtTarget, Target
from lit_seq.record import FitResult
from tests.helpers import REPO

ECHO_RNN = REPO / "configs" / "echo" / "rnn.yaml"  # val acc 1.0 from step 100 of 500
FAST = [
    "--trainer.val_check_interval=50",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--wandb=off",
]


def _fit(tmp_path, *args: str) -> FitResult:
    return run(build_cli(["--config", str(ECHO_RNN), f"--run_dir={tmp_path}", *FAST, *args]))


@pytest.mark.integration
def test_a_reached_target_stops_the_fit_and_records_time_to_target(tmp_path):
    result = _fit(tmp_path / "stop", "--target.metric=val/acc", "--target.consecutive=2")
    assert result.target == "val/acc>=0.99 x2" and result.target_reached
    # the streak began at target_step and held one more validation, 50 steps later
    assert result.steps == result.target_step + 50 < 500
    assert 0 < result.target_seconds <= result.train_seconds
    assert FitResult.read(tmp_path / "stop").target_step == result.target_step

    measured = _fit(tmp_path / "measure", "--target.metric=val/acc", "--target.stop=false")
    assert measured.steps == 500 and measured.target_reached
    assert measured.target_step <= result.target_step  # one validation needed, not two


@pytest.mark.integration
def test_an_unreached_target_trains_the_whole_budget(tmp_path):
    result = _fit(
        tmp_path,
        "--trainer.max_steps=100",
        "--target.metric=val/loss",
        "--target.mode=min",
        "--target.threshold=0",
    )
    assert result.steps == 100 and result.target_reached is False
    assert result.target_step is None and result.target_seconds is None


def test_no_target_is_recorded_as_none():
    assert FitResult().target_reached is None and Target().describe() == ""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--target.metric=val/accc"],
            r"target.metric='val/accc' is not one of \['val/acc', 'val/exact', 'val/loss'\]",
        ),
        (["--target.metric=val/acc", "--target.mode=up"], r"target.mode='up' is not one of"),
        (["--target.metric=val/acc", "--target.consecutive=0"], r"target.consecutive must be"),
        (["--range_eval.step=0"], r"range_eval.step must be an integer >= 1"),
        (["--range_eval.max_factor=-1"], r"range_eval.max_factor=-1(\.0)? must be"),
    ],
)
def test_a_bad_target_or_range_is_one_line_before_any_run_folder(args, expected, tmp_path):
    with pytest.raises(BadInput, match=expected):
        build_cli(["--config", str(ECHO_RNN), f"--run_dir={tmp_path / 'run'}", *args])
    assert not (tmp_path / "run").exists()


def test_the_streak_survives_a_checkpoint():
    stopper = StopAtTarget(Target(metric="val/acc", consecutive=3))
    stopper.streak, stopper.streak_start = 2, (200, 1.5)
    resumed = StopAtTarget(Target(metric="val/acc", consecutive=3))
    resumed.load_state_dict(stopper.state_dict())
    assert (resumed.streak, resumed.streak_start, resumed.reached) == (2, (200, 1.5), None)
