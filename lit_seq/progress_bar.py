"""A rich progress bar whose per-step cost is one clock read.

Lightning's ``RichProgressBar`` updates the bar, re-reads every progress-bar metric and
asks rich to refresh after *every* training batch and at every epoch boundary. lit_seq's
models are small and its epochs short (a few dozen batches), so that bookkeeping is a
measurable share of a step, and on a GPU reading the metrics is a host sync per step.
This bar does the same work at most ``updates_per_second`` times a second, plus once at
the very last step, so what it shows is never more than a fraction of a second stale.
"""

import math
import time
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import RichProgressBar


class ThrottledRichProgressBar(RichProgressBar):
    """``RichProgressBar`` that updates the training bar at most ``updates_per_second``
    times a second (validation and test bars are unchanged: they are rare).

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
        self._shown_epoch = -1

    def _due(self, trainer: L.Trainer) -> bool:
        """True when the bar may change now: the interval has passed, or training ends."""
        now = time.monotonic()
        if now - self._last_update >= self._interval or _last_step(trainer):
            self._last_update = now
            return True
        return False

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        # the first epoch creates the bar; later epochs reset it when an update is due
        if self.train_progress_bar_id is None:
            super().on_train_epoch_start(trainer, pl_module)
            self._shown_epoch = trainer.current_epoch

    def on_train_batch_end(
        self,
        trainer: L.Trainer,
        pl_module: L.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        if not self._due(trainer):
            return
        if trainer.current_epoch != self._shown_epoch:
            super().on_train_epoch_start(trainer, pl_module)  # new epoch: reset count and title
            self._shown_epoch = trainer.current_epoch
        super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if _last_step(trainer) or trainer.current_epoch + 1 == trainer.max_epochs:
            super().on_train_epoch_end(trainer, pl_module)


def _last_step(trainer: L.Trainer) -> bool:
    return trainer.max_steps > 0 and trainer.global_step >= trainer.max_steps
