"""Callbacks that every fit uses: training timer, confusion matrix, attention maps.

The plots are written as PNGs in the run folder and, when W&B is on, logged as images.
"""

import time
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.loggers import WandbLogger


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

    def elapsed(self) -> float:
        """Training seconds so far, sessions before this one included."""
        return self._totals()[0]

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
