"""The one callback that plugs a solo fit's :class:`~lit_seq.fit.book.RunBook` into Lightning.

Lightning's hooks become the book's verbs: the end of a training step ``after_step``, the
end of a validation ``after_validation``, the end of training ``end_training``; the book's
state travels in every checkpoint under ``callbacks["RunBook"]``, with the RNG states an
exact resume needs (restored as training starts, after everything that draws at set-up).
It is a ``Checkpoint`` callback, so Lightning adds no ModelCheckpoint of its own and runs it
after every other callback of a hook (a validation's scores are all logged by then).

It also carries the step boundary of a signal (``fit.signals.SignalCatcher``): ``last.ckpt``
saved at the end of the step running when it came (or after the validation that follows
it), then FitInterrupted before the next step.
"""

from __future__ import annotations

import contextlib

import lightning as L
from lightning.pytorch.callbacks import Checkpoint

from lit_seq.fit.book import BOOK_STATE_KEY, RunBook
from lit_seq.fit.checkpoints import device_rng, rng_states, set_rng_states
from lit_seq.fit.signals import SignalCatcher


def validates_now(trainer: L.Trainer) -> bool:
    """Whether Lightning validates after the training step that just ended (when unsure:
    True, which leaves the checkpoint to the validation)."""
    loop = trainer.fit_loop
    try:
        return bool(loop.epoch_loop._should_check_val_fx(loop._data_fetcher))
    except Exception:  # noqa: BLE001 - Lightning internals: a later version may differ
        return True


class BookKeeper(Checkpoint):
    """Lightning's hooks of a solo fit, handed to its ``book``; see the module docstring."""

    def __init__(self, book: RunBook) -> None:
        self.book = book
        self.signals = SignalCatcher(lambda: (book.folder / "last.ckpt").is_file())
        self._rng: dict | None = None  # to restore as training starts (a resume)
        self._training = self._in_step = False

    @property
    def state_key(self) -> str:
        return BOOK_STATE_KEY

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        self.book.save = lambda path: trainer.save_checkpoint(path, weights_only=False)

    # -- training --------------------------------------------------------------------------

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._rng is not None:
            set_rng_states(self._rng, device_rng())
            self._rng = None
        self.book.step = trainer.global_step
        self.book.phases.leave("build")
        self.book.phases.enter("train")
        self.book.start()
        self.signals.start_training()
        self._training = True

    def on_train_batch_start(self, trainer: L.Trainer, pl_module, batch, batch_idx) -> None:
        self._in_step = True
        # a signal that came after the last step's end: stop if that step is saved, else
        # take this step and stop at its end
        if self.signals.signum is not None and self.book.saved_step == trainer.global_step:
            self.signals.stop(trainer.global_step)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._in_step = False
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        self.book.after_step(trainer.global_step, loss.detach(), validates_now(trainer))
        if self.signals.signum is not None:
            self.book.save_last()

    def on_validation_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.book.phases.enter("val")

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.book.phases.leave("val")
        if trainer.sanity_checking or not self._training:
            return
        scores = {k: v for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
        if self.book.after_validation(scores):
            trainer.should_stop = True
        if self.signals.signum is not None:
            self.signals.stop(trainer.global_step)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._training = self.signals.training = False
        self.book.end_training()
        self.book.phases.leave("train")
        if self.signals.signum is not None:
            self.book.save_last()
            self.signals.stop(trainer.global_step)

    def on_exception(self, trainer: L.Trainer, pl_module, exception: BaseException) -> None:
        # between steps, keep where the fit got to; inside a step or on a divergence the
        # previous checkpoint is the last state known to be whole
        if self._training and not self._in_step and not isinstance(exception, FloatingPointError):
            with contextlib.suppress(Exception):  # the error being raised is the one to tell
                self.book.save_last()
        self._training = self.signals.training = False
        self.book.timer.stop(trainer.global_step)
        self.book.phases.leave("train")

    # -- checkpoints -------------------------------------------------------------------

    def state_dict(self) -> dict:
        return {**self.book.state_dict(), "rng": rng_states(device_rng())}

    def load_state_dict(self, state_dict: dict) -> None:
        self.book.load_state_dict(state_dict)
        self._rng = state_dict.get("rng")

    def on_load_checkpoint(self, trainer: L.Trainer, pl_module, checkpoint: dict) -> None:
        """A checkpoint of an older lit_seq keeps the book in four callbacks' states."""
        callbacks = checkpoint.get("callbacks") or {}
        if BOOK_STATE_KEY in callbacks:
            return
        best = next((v for k, v in callbacks.items() if k.startswith("ModelCheckpoint")), {})
        score = best.get("best_model_score")
        self.book.load_state_dict(
            {
                "timer": callbacks.get("TrainTimer", {"seconds": 0.0, "steps": 0}),
                "target": callbacks.get("StopAtTarget"),
                "first_train_loss": checkpoint.get("first_train_loss"),
                "best": {"score": float(score) if score is not None else None,
                         "name": best.get("best_model_path")},
            }
        )  # fmt: skip
        self._rng = (callbacks.get("ResumeState") or {}).get("rng")
