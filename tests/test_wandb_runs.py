"""W&B runs that tell the truth, read back from the offline run files that real wandb wrote.

How a fit ended (ok, failed, diverged, interrupted) is the run's exit code and ``status``; a
resume continues the same run; the config holds the values the model was built with (and,
for a grid run, its place in the grid); the summary has the run's size, length and speed
and the best validation values so far.
"""

import json

import lightning as L
import pytest
import torch

from lit_seq.ablate.__main__ import main
from lit_seq.ablate.jobs import GridJob, RayOptions
from lit_seq.ablate.run_one import run_args, wandb_config
from lit_seq.fit import build_cli, cli_main, run
from lit_seq.fit.run_folder import WANDB_ID_FILE
from lit_seq.fit.signals import FitInterrupted
from lit_seq.fit.wandb_modes import resolve_wandb_mode, wandb_host
from tests.helpers import REPO, TINY, driver, echo_rnn_runs, write_grid
from tests.test_resume import SignalAt, step_of
from tests.test_wandb_files import read_runs

SIGNAL = REPO / "configs" / "signal" / "transformer.yaml"
ECHO_RNN = REPO / "configs" / "echo" / "rnn.yaml"
OFFLINE = [*TINY[:-1], "--wandb=offline"]  # the tiny fit, W&B offline instead of off


def _args(config, run_dir, *extra: str) -> list[str]:
    return ["--config", str(config), f"--run_dir={run_dir}", *OFFLINE, *extra]


class Raise(L.Callback):
    """Raises ``error`` at the start of the validation after step ``step``."""

    def __init__(self, error: BaseException, step: int = 3) -> None:
        self.error, self.step = error, step

    def on_validation_start(self, trainer, pl_module) -> None:
        if trainer.global_step >= self.step and not trainer.sanity_checking:
            raise self.error


class PoisonWeights(L.Callback):
    """Sets every weight to NaN after step 2: a real divergence, caught by the system."""

    def on_train_batch_end(self, trainer, pl_module, *args) -> None:
        if trainer.global_step == 2:
            with torch.no_grad():
                for p in pl_module.parameters():
                    p.fill_(float("nan"))


def _fit_with(tmp_path, callback: L.Callback, config=ECHO_RNN):
    cli = build_cli(_args(config, tmp_path / "run"))
    cli.trainer.callbacks.insert(0, callback)
    return cli


@pytest.mark.integration
def test_a_fit_logs_a_train_run_with_resolved_config_and_a_full_summary(tmp_path):
    result = cli_main(_args(SIGNAL, tmp_path / "run"))
    [view] = read_runs(tmp_path / "run")
    assert (view.name, view.job_type, view.state) == ("run", "train", "finished")
    assert view.id == (tmp_path / "run" / WANDB_ID_FILE).read_text().strip()
    model = view.config["cli"]["model"]["init_args"]
    # the linked fields as the model has them, not their parse-time defaults (1 and 512)
    assert (model["out_features"], model["max_len"]) == (3, 256)
    assert view.config["out_features"] == 3
    # where it ran, as its record says (lit_seq.util.environment)
    environment = view.config["environment"]
    assert environment["torch_version"] == result.torch_version == torch.__version__
    assert (environment["device"], environment["precision"]) == (result.device, result.precision)
    summary = view.summary
    assert summary["status"] == "ok" and summary["params"] == result.params
    assert summary["steps"] == 6 and summary["train_seconds"] > 0
    assert summary["samples_per_second"] > 0
    # best so far: the max of the validations, not the last one
    assert set(summary["val/acc"]) == {"max"} and set(summary["val/loss"]) == {"min"}
    assert summary["test/acc"] == pytest.approx(result.metrics["test/acc"])


@pytest.mark.integration
@pytest.mark.parametrize(
    ("make", "status", "code"),
    [
        (lambda: Raise(RuntimeError("boom")), "failed", 1),
        (PoisonWeights, "diverged", 1),
        (lambda: SignalAt("step", 4), "interrupted", 143),
    ],
    ids=["failed", "diverged", "interrupted"],
)
def test_a_fit_that_does_not_finish_is_a_failed_run_in_wandb(make, status, code, tmp_path):
    cli = _fit_with(tmp_path, make())
    with pytest.raises((RuntimeError, FloatingPointError, FitInterrupted)):
        run(cli)
    [view] = read_runs(tmp_path / "run")
    assert (view.exit_code, view.state) == (code, "failed")
    assert view.summary["status"] == status
    assert view.summary["steps"] >= 2


@pytest.mark.integration
def test_a_resumed_fit_continues_the_same_wandb_run(tmp_path):
    run_dir = tmp_path / "run"
    cli = _fit_with(tmp_path, SignalAt("step", 4))
    with pytest.raises(FitInterrupted):
        run(cli)
    first = (run_dir / WANDB_ID_FILE).read_text().strip()
    cli_main(_args(ECHO_RNN, run_dir, "--ckpt_path=last"))
    interrupted, resumed = read_runs(run_dir)  # wandb sync uploads both into one run
    assert interrupted.id == resumed.id == first
    assert (interrupted.state, resumed.state) == ("failed", "finished")
    assert resumed.summary["status"] == "ok" and resumed.summary["steps"] == 6


@pytest.mark.integration
def test_an_exception_between_steps_saves_last_ckpt_there(tmp_path):
    cli = _fit_with(tmp_path, Raise(RuntimeError("boom"), step=3))
    with pytest.raises(RuntimeError):
        run(cli)
    assert step_of(tmp_path / "run" / "checkpoints" / "last.ckpt") == 3


@pytest.mark.integration
def test_log_model_uploads_the_checkpoints_as_artifacts(tmp_path):
    cli_main(_args(ECHO_RNN, tmp_path / "run", "--wandb_log_model=true"))
    [view] = read_runs(tmp_path / "run")
    assert view.artifacts, "no checkpoint artifact in the run file"


def test_a_grid_run_gets_its_place_in_the_grid_as_flat_config_keys(tmp_path):
    [grid_run] = echo_rnn_runs([3], tiny=True)
    job = GridJob(tmp_path, "g", "offline", 1, RayOptions())
    keys = wandb_config(grid_run, job)
    assert keys == {
        "task": "echo",
        "arch": "rnn",
        "grid": "g",
        "block": grid_run.block,
        "cell": grid_run.cell,
        "seed": 3,
        "run_id": grid_run.run_id,
    }
    [given] = [a for a in run_args(grid_run, job) if a.startswith("--wandb.config=")]
    assert json.loads(given.split("=", 1)[1]) == keys
    cli = build_cli([*run_args(grid_run, job), "--wandb.mode=off"])
    assert dict(cli.config.wandb.config) == keys  # the fit parses what the grid gives


@pytest.fixture
def self_hosted(tmp_path, monkeypatch):
    """A `wandb login --host` of a self-hosted server: its netrc entry, no api.wandb.ai one."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL", "NETRC"):
        monkeypatch.delenv(name, raising=False)
    netrc = tmp_path / ".netrc"
    netrc.write_text("machine wandb.example.org\n  login user\n  password " + "k" * 40 + "\n")
    netrc.chmod(0o600)
    return monkeypatch


def test_auto_goes_online_with_a_login_for_the_self_hosted_server(self_hosted):
    assert resolve_wandb_mode("auto") == "offline"  # runs would go to api.wandb.ai: no login
    self_hosted.setenv("WANDB_BASE_URL", "https://wandb.example.org:8443")
    assert wandb_host() == "wandb.example.org"
    assert resolve_wandb_mode("auto") == "online"


def test_the_host_saved_by_wandb_login_counts_too(self_hosted, tmp_path):
    settings = tmp_path / "wandb-config" / "settings"
    settings.parent.mkdir()
    settings.write_text("[default]\nbase_url = https://wandb.example.org\n")
    assert resolve_wandb_mode("auto") == "online"


@pytest.mark.integration
def test_a_grid_logs_train_runs_with_grid_keys_one_summary_run_and_says_how_to_upload(
    tmp_path, capsys
):
    body = "seeds: [0]\nblocks:\n  - name: b\n    axes: {task: [echo], arch: [rnn], lr: [0.01]}\n"
    grid, out = write_grid(tmp_path, "wg", body), tmp_path / "out"
    first = driver(grid, "--out", out, "--wandb", "offline")
    assert first.returncode == 0, first.stderr[-2000:]
    [run_dir] = (out / "runs").iterdir()
    [view] = read_runs(run_dir)
    assert (view.job_type, view.group, view.state) == ("train", "wg", "finished")
    for key, value in {"grid": "wg", "block": "b", "seed": 0, "run_id": run_dir.name}.items():
        assert view.config[key] == value
    assert (view.config["task"], view.config["arch"], view.config["lr"]) == ("echo", "rnn", 0.01)
    assert view.config["cell"] == "b__task=echo__arch=rnn__lr=0.01"
    assert {"params", "steps", "train_seconds", "samples_per_second", "status"} <= set(view.summary)
    [summary] = read_runs(out)
    assert (summary.name, summary.job_type, summary.group) == ("wg-summary", "summary", "wg")
    command = f"wandb sync {out}/runs/*/wandb/offline-run-* {out}/wandb/offline-run-*"
    assert f"upload every W&B run of this grid: {command}" in first.stdout.replace("\n", "")

    # nothing left to train: the same command, as the driver's code in this process
    assert main([str(grid), "--out", str(out), "--wandb", "offline"]) == 0
    assert "W&B summary run unchanged" in capsys.readouterr().out
    assert len(list((out / "wandb").glob("offline-run-*"))) == 1  # no second summary run
