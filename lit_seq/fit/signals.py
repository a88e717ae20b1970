"""SIGTERM (a preempted job) and SIGINT (Ctrl-C) end a fit at a step boundary, resumably.

A fit stopped by a signal saves ``last.ckpt`` of the step it stopped at and exits with
128 + the signal (143, 130) and no ``metrics.json``, so a job scheduler sees a failure and
``--ckpt_path last`` finishes the run exactly as if it had never stopped.
"""

import contextlib
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import Checkpoint

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)  # a preempted job, Ctrl-C


class FitInterrupted(SystemExit):
    """A fit stopped by SIGTERM or SIGINT; its exit status is 128 + the signal (143, 130).

    ``step``: the step ``last.ckpt`` was saved at as the fit stopped, or None when it stopped
    at once (outside training, or on a second signal). ``resumable``: ``last.ckpt`` exists.
    """

    def __init__(self, signum: int, step: int | None, resumable: bool) -> None:
        super().__init__(128 + signum)
        self.signum, self.step, self.resumable = signum, step, resumable

    def __str__(self) -> str:
        name = signal.Signals(self.signum).name
        if self.step is not None:
            return f"stopped by {name} at step {self.step}, saved in last.ckpt"
        if self.resumable:
            return f"stopped by {name} at once; last.ckpt holds the newest saved step"
        return f"stopped by {name} before the first checkpoint"


class StopOnSignal(Checkpoint):
    """SIGTERM or SIGINT end a fit at a step boundary with ``last.ckpt`` of that step saved.

    During training a signal is noted, never acted on mid-step: at the end of the running
    training step ``last.ckpt`` is saved and the fit raises :class:`FitInterrupted` before
    the next one. At a validation step it first lets the validation and the ModelCheckpoint's
    save of it happen (Lightning runs Checkpoint callbacks last, in their order, and this one
    comes after the ModelCheckpoint), so a resumed fit neither repeats nor skips anything.
    Outside training (set-up, sanity check, test) and on a second signal it stops at once;
    checkpoints are written atomically, so none is spoilt. The handlers are installed by
    :meth:`handling_signals`, in the main thread only, and a signal ignored then (a grid
    worker ignores Ctrl-C, which is its driver's) stays ignored.
    """

    def __init__(self, last_checkpoint: Path, save: Callable[[L.Trainer], None] | None = None):
        """``save``: what saves the fit's state as it stops (default: the Trainer's
        checkpoint to ``last_checkpoint``; a population saves each member's)."""
        self.last_checkpoint = Path(last_checkpoint)
        self.save = save
        self.signum: int | None = None
        self._handled: list[int] = []
        self._training = False
        self._saved_step = -1  # global step of the latest checkpoint saved in this fit

    @contextlib.contextmanager
    def handling_signals(self):
        """While the block runs, SIGTERM and SIGINT stop the fit as described above."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
        self._handled = [s for s, handler in previous.items() if handler is not signal.SIG_IGN]
        for signum in self._handled:
            signal.signal(signum, self._on_signal)
        try:
            yield
        finally:
            for signum in self._handled:
                signal.signal(signum, previous[signum])
            self._handled = []

    def _on_signal(self, signum: int, frame) -> None:
        first = self.signum is None
        self.signum = signum
        if not (self._training and first):
            raise FitInterrupted(signum, None, self.last_checkpoint.is_file())

    def _stop(self, trainer: L.Trainer) -> None:
        """Raise FitInterrupted, first saving last.ckpt unless this step's is saved."""
        assert self.signum is not None
        if self._saved_step != trainer.global_step:
            self._save(trainer)
        raise FitInterrupted(self.signum, trainer.global_step, True)

    def _save(self, trainer: L.Trainer) -> None:
        if self.save is not None:
            self.save(trainer)
            self._saved_step = trainer.global_step
        else:
            trainer.save_checkpoint(self.last_checkpoint, weights_only=False)

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        # Lightning installs its own SIGTERM handler as the fit starts; during training it
        # would stop the fit mid-validation (or leave with exit status 0): take it back
        for signum in self._handled:
            signal.signal(signum, self._on_signal)
        self._training = True

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module, checkpoint: dict) -> None:
        self._saved_step = trainer.global_step  # any checkpoint: the ModelCheckpoint's too

    def on_train_batch_start(self, trainer: L.Trainer, pl_module, batch, batch_idx) -> None:
        # a signal that came after the last step's end: stop if that step is saved, else
        # take this step and stop at its end
        if self.signum is not None and self._saved_step == trainer.global_step:
            self._stop(trainer)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.signum is not None and self._saved_step != trainer.global_step:
            self._save(trainer)

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.signum is not None and self._training and not trainer.sanity_checking:
            self._stop(trainer)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._training = False
        if self.signum is not None:
            self._stop(trainer)
