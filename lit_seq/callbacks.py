"""Callbacks that every fit uses: training timer, stop on a signal, confusion matrix, attention maps.

The plots are written as PNGs in the run folder and, when W&B is on, logged as images.
"""

import contextlib
import signal
import threading
import time
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import Checkpoint
from lightning.pytorch.loggers import WandbLogger

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)  # a preempted job, Ctrl-C


class TrainTimer(L.Callback):
    """Wall seconds and optimizer steps of the training behind the fit's model.

    Saved with every checkpoint: a resumed fit adds its own to those of the sessions before
    it, as of the checkpoint it resumed from (the work redone after a kill is timed once, in
    the session that kept it). A resume with nothing left to train keeps the totals.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self.steps = 0
        self._carried = (0.0, 0)  # (seconds, steps) of the sessions before this one
        self._start_time: float | None = None
        self._start_step = 0
        self._step = 0

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._start_time = time.perf_counter()
        self._start_step = self._step = trainer.global_step

    def on_train_batch_end(self, trainer: L.Trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._step = trainer.global_step

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._step = trainer.global_step
        self.seconds, self.steps = self._totals()
        self._start_time = None

    def _totals(self) -> tuple[float, int]:
        seconds, steps = self._carried
        if self._start_time is not None:
            seconds += time.perf_counter() - self._start_time
            steps += self._step - self._start_step
        return seconds, steps

    def state_dict(self) -> dict:
        seconds, steps = self._totals()
        return {"seconds": seconds, "steps": steps}

    def load_state_dict(self, state_dict: dict) -> None:
        self._carried = (float(state_dict["seconds"]), int(state_dict["steps"]))
        self.seconds, self.steps = self._carried


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

    def __init__(self, last_checkpoint: Path) -> None:
        self.last_checkpoint = Path(last_checkpoint)
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
            trainer.save_checkpoint(self.last_checkpoint, weights_only=False)
        raise FitInterrupted(self.signum, trainer.global_step, True)

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
            trainer.save_checkpoint(self.last_checkpoint, weights_only=False)

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.signum is not None and self._training and not trainer.sanity_checking:
            self._stop(trainer)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._training = False
        if self.signum is not None:
            self._stop(trainer)


def _log_figure(trainer: L.Trainer, key: str, fig) -> Path | None:
    """Save ``fig`` as ``<run_dir>/<key>.png`` and log it to W&B if W&B is on."""
    import matplotlib.pyplot as plt

    if not trainer.default_root_dir:
        plt.close(fig)
        return None
    path = Path(trainer.default_root_dir) / f"{key.replace('/', '_')}.png"
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    for logger in trainer.loggers:
        if isinstance(logger, WandbLogger):
            logger.log_image(key=key, images=[str(path)])
    return path


class ConfusionMatrixLogger(L.Callback):
    """Plots the confusion matrix of a classifier's training-length test set."""

    def on_test_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        confusion = getattr(pl_module, "confusion", None)
        if confusion is None or not confusion.update_called:
            return
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        matrix = confusion.compute().cpu()  # (C, C): rows true class, columns predicted
        confusion.reset()
        fig, ax = plt.subplots(figsize=(3.2, 3))
        ax.imshow(matrix, cmap="Blues")
        for i in range(matrix.shape[0]):
            for j in range(matrix.shape[1]):
                ax.text(j, i, int(matrix[i, j]), ha="center", va="center", fontsize=8)
        ax.set_xlabel("predicted")
        ax.set_ylabel("true")
        ax.set_title("test confusion matrix")
        _log_figure(trainer, "test/confusion_matrix", fig)


class AttentionMapLogger(L.Callback):
    """After training, plots the last layer's attention maps of a few validation examples.

    Only for networks that expose ``attention_maps`` (transformer backbones).
    """

    def __init__(self, n_examples: int = 2) -> None:
        self.n_examples = n_examples

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        net = getattr(pl_module, "net", None)
        datamodule = getattr(trainer, "datamodule", None)
        if datamodule is None or not hasattr(getattr(net, "backbone", None), "attention_maps"):
            return
        batch = datamodule.val_set[list(range(self.n_examples))]
        if "x" not in batch:
            return
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        was_training = net.training
        net.eval()
        with torch.no_grad():
            maps = net.attention_maps(batch["x"].to(pl_module.device))[-1].float().cpu()
        net.train(was_training)
        n_heads = maps.shape[1]  # maps: (B, H, T, T) of the last layer
        fig, axes = plt.subplots(
            self.n_examples, n_heads, figsize=(1.8 * n_heads, 1.8 * self.n_examples), squeeze=False
        )
        for b in range(self.n_examples):
            for h in range(n_heads):
                axes[b][h].imshow(maps[b, h], cmap="viridis")
                axes[b][h].set_axis_off()
                axes[b][h].set_title(f"ex {b} head {h}", fontsize=7)
        _log_figure(trainer, "val/attention_maps", fig)
