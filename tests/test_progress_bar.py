"""The training progress bar and per-step logging: cheap per step, yet complete at the end."""

import csv

import lightning as L
import pytest

from lit_seq.fit import build_cli
from lit_seq.fit.progress_bar import ThrottledRichProgressBar
from tests.helpers import REPO, tiny_fit

ECHO_RNN = REPO / "configs" / "echo" / "rnn.yaml"


class CountingBar(ThrottledRichProgressBar):
    """Counts how often the training bar and its metrics are actually updated."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.updates: list[dict] = []

    def get_metrics(self, trainer: L.Trainer, pl_module: L.LightningModule) -> dict:
        # the public hook every redraw of the bar's metrics goes through
        metrics = super().get_metrics(trainer, pl_module)
        self.updates.append((trainer.global_step, dict(metrics)))
        return metrics


def _fit_with_bar(tmp_path, bar: CountingBar, steps: int) -> None:
    cli = build_cli(
        [
            "--config",
            str(ECHO_RNN),
            f"--run_dir={tmp_path / 'run'}",
            "--wandb=off",
            f"--trainer.max_steps={steps}",
            "--trainer.limit_val_batches=0",
            "--trainer.log_every_n_steps=5",
            "--trainer.enable_model_summary=false",
        ]
    )
    cli.trainer.callbacks = [
        c for c in cli.trainer.callbacks if not isinstance(c, L.pytorch.callbacks.ProgressBar)
    ]
    cli.trainer.callbacks.append(bar)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)


def test_fit_uses_the_throttled_bar_by_default(tmp_path):
    cli = build_cli(["--config", str(ECHO_RNN), f"--run_dir={tmp_path / 'run'}", "--wandb=off"])
    bars = [c for c in cli.trainer.callbacks if isinstance(c, L.pytorch.callbacks.ProgressBar)]
    assert [type(b) for b in bars] == [ThrottledRichProgressBar]


@pytest.mark.integration
def test_bar_updates_rarely_but_always_shows_the_last_step(tmp_path):
    bar = CountingBar(updates_per_second=1e-6)  # one update per 11 days: only first and last
    _fit_with_bar(tmp_path, bar, steps=40)
    steps = [step for step, _ in bar.updates]
    assert len(steps) <= 3  # first batch, last batch (and the final epoch end)
    assert steps[-1] == 40
    assert "train/loss" in bar.updates[-1][1]


def test_bar_rejects_a_non_positive_rate():
    with pytest.raises(ValueError, match="updates_per_second"):
        ThrottledRichProgressBar(updates_per_second=0)


@pytest.mark.integration
def test_train_loss_and_lr_are_written_every_log_every_n_steps(tmp_path):
    tiny_fit(
        ECHO_RNN,
        tmp_path / "run",
        "--trainer.max_steps=23",
        "--trainer.log_every_n_steps=5",
        "--trainer.val_check_interval=50",
        "--trainer.limit_val_batches=0",
    )
    with open(tmp_path / "run" / "metrics.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["train/loss"]]
    assert [int(r["step"]) for r in rows] == [4, 9, 14, 19]  # every 5th step, as Lightning writes
    assert all(float(r["lr"]) > 0 for r in rows)


class WatchingBar(ThrottledRichProgressBar):
    """Keeps what the training bar shows after every update: description, count, total."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.shown: list[tuple[str, float, float]] = []
        self.metrics: list[dict] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)
        task = self.progress.tasks[self.train_progress_bar_id]
        self.shown.append((task.description, task.completed, task.total))

    def get_metrics(self, trainer, pl_module) -> dict:
        metrics = super().get_metrics(trainer, pl_module)
        self.metrics.append(metrics)
        return metrics


@pytest.mark.integration
def test_the_bar_counts_the_optimizer_steps_of_the_run_and_shows_no_version(tmp_path):
    bar = WatchingBar(updates_per_second=1e6)  # every step
    _fit_with_bar(tmp_path, bar, steps=150)  # 63 batches an epoch: more than two epochs
    assert {description for description, _, _ in bar.shown} == {"step"}
    assert [completed for _, completed, _ in bar.shown] == list(range(1, 151))
    assert {total for _, _, total in bar.shown} == {150}  # never an epoch's batches, never -2
    assert bar.metrics and not any("v_num" in m for m in bar.metrics)
