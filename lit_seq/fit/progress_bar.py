"""A rich progress bar of the run's optimizer steps whose per-step cost is one clock read.

What it shows: ``step 120/400`` (the optimizer steps of the whole run, a resumed one
starting where its checkpoint left it), the bar, time and speed, and the logged metrics.
Lightning's own bar counts the batches of an epoch under ``Epoch 26/-2`` (a run bounded
by steps has no last epoch), lit_seq's epochs are a few dozen batches, and its ``v_num``
is a W&B id; none of that says how far the run is.

Lightning's ``RichProgressBar`` also updates the bar, re-reads every progress-bar metric
and asks rich to refresh after *every* training batch: a measurable share of a small
model's step, and on a GPU reading the metrics is a host sync per step. This bar does
that at most ``updates_per_second`` times a second, plus once at the very last step, so
what it shows is never more than a fraction of a second stale.
"""

import math
import time
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import RichProgressBar
from lightning.pytorch.callbacks.progress.rich_progress import BatchesProcessedColumn

TRAIN_DESCRIPTION = "step"


class ThrottledRichProgressBar(RichProgressBar):
    """``RichProgressBar`` over the run's optimizer steps, updated at most
    ``updates_per_second`` times a second (validation and test bars are Lightning's own:
    they are rare).

    Args:
        updates_per_second: how often the training bar and its metrics may change.
        **kwargs: passed to ``RichProgressBar`` (``leave``, ``theme``, ...).
    """

    def __init__(self, updates_per_second: float = 2.0, **kwargs: Any) -> None:
        if not updates_per_second > 0:
            raise ValueError(f"updates_per_second must be > 0, got {updates_per_second!r}")
        super().__init__(**kwargs)
        self._interval = 1.0 / updates_per_second
        self._last_update = -math.inf

    def configure_columns(self, trainer: L.Trainer) -> list:
        # "step 120/400" reads as one phrase: the count right after the description
        columns = super().configure_columns(trainer)
        count = next(c for c in columns if isinstance(c, BatchesProcessedColumn))
        columns.remove(count)
        return [columns[0], count, *columns[1:]]

    def get_metrics(self, trainer: L.Trainer, pl_module: L.LightningModule) -> dict:
        metrics = super().get_metrics(trainer, pl_module)
        metrics.pop("v_num", None)  # the logger's version (a W&B id): not a metric
        return metrics

    def _due(self, trainer: L.Trainer) -> bool:
        """True when the bar may change now: the interval has passed, or training ends."""
        now = time.monotonic()
        if now - self._last_update >= self._interval or _last_step(trainer):
            self._last_update = now
            return True
        return False

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        # one bar for the whole run, created as the first epoch (of this session) starts
        if self.is_disabled or self.progress is None or self.train_progress_bar_id is not None:
            return
        self.train_progress_bar_id = self._add_task(run_steps(trainer), TRAIN_DESCRIPTION)
        self._update(self.train_progress_bar_id, trainer.global_step)
        self.refresh()

    def on_train_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        if self.is_disabled or not self._due(trainer):
            return
        if self.train_progress_bar_id is None:  # the progress was restarted (after a test)
            self.on_train_epoch_start(trainer, pl_module)
        self._update(self.train_progress_bar_id, trainer.global_step)
        self._update_metrics(trainer, pl_module)
        self.refresh()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if _last_step(trainer) or trainer.current_epoch + 1 == trainer.max_epochs:
            super().on_train_epoch_end(trainer, pl_module)


def run_steps(trainer: L.Trainer) -> int | float:
    """The optimizer steps of the whole run: ``max_steps``, else Lightning's estimate."""
    if trainer.max_steps > 0:
        return trainer.max_steps
    return trainer.estimated_stepping_batches


def _last_step(trainer: L.Trainer) -> bool:
    return trainer.max_steps > 0 and trainer.global_step >= trainer.max_steps
