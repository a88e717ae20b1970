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
        self.seconds, self.steps = self.totals()
        self._start_time = None

    def elapsed(self) -> float:
        """Training seconds so far, sessions before this one included."""
        return self.totals()[0]

    def totals(self) -> tuple[float, int]:
        seconds, steps = self._carried
        if self._start_time is not None:
            seconds += time.perf_counter() - self._start_time
            steps += self._step - self._start_step
        return seconds, steps

    def state_dict(self) -> dict:
        seconds, steps = self.totals()
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
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    for logger in trainer.loggers:
        if isinstance(logger, WandbLogger):
            logger.log_image(key=key, images=[str(path)])
    return path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only: never a window, also without a display
    import matplotlib.pyplot as plt

    return plt


def class_names(datamodule, n: int) -> list[str]:
    """Names of a task's ``n`` classes: its ``class_names`` if it has them, the signal task's
    frequencies (``2 cycles``), else ``class 0``, ``class 1``, ..."""
    names = getattr(datamodule, "class_names", None)
    if names is not None and len(names) == n:
        return [str(name) for name in names]
    freqs = getattr(datamodule, "freqs", None)
    if freqs is not None and len(freqs) == n:
        return [f"{float(f):g} cycle{'s' if float(f) != 1 else ''}" for f in freqs]
    return [f"class {i}" for i in range(n)]


def confusion_figure(matrices: dict[str, torch.Tensor], names: list[str], train_length: int):
    """One panel per test set (``{length: (C, C) counts}``, rows true class, columns
    predicted): colour is the share of the true class (light to dark, 0 to 1), each cell
    says its count and share in a colour readable on it; titles give length and accuracy."""
    plt = _pyplot()
    n = len(names)
    size = 1.0 + 0.55 * n
    fig, axes = plt.subplots(
        1, len(matrices), figsize=(size * len(matrices) + 1.2, size + 0.6), squeeze=False
    )
    for panel, (ax, (length, counts)) in enumerate(zip(axes[0], matrices.items(), strict=True)):
        counts = counts.double()
        shares = counts / counts.sum(dim=1, keepdim=True).clamp(min=1)  # per true class
        image = ax.imshow(shares, cmap="Blues", vmin=0.0, vmax=1.0)
        for i in range(n):
            for j in range(n):
                dark = shares[i, j] > 0.55  # white text on the dark end of the map
                ax.text(
                    j,
                    i,
                    f"{int(counts[i, j])}\n{shares[i, j]:.0%}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if dark else "#1a1a1a",
                )
        acc = float(counts.diagonal().sum() / counts.sum().clamp(min=1))
        which = "training length" if length == train_length else f"{length // train_length}x"
        ax.set_title(f"length {length} ({which})\naccuracy {acc:.1%}", fontsize=8)
        ax.set_xticks(range(n), names, rotation=30, ha="right", fontsize=7)
        ax.set_yticks(range(n), names if panel == 0 else [], fontsize=7)  # same rows in all
        ax.set_xlabel("predicted class", fontsize=8)
        if panel == 0:
            ax.set_ylabel("true class", fontsize=8)
    bar = fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8)
    bar.set_label("share of the true class", fontsize=8)
    fig.suptitle("test confusion matrices, one per test length", fontsize=9)
    return fig


class ConfusionMatrixLogger(L.Callback):
    """Plots the confusion matrix of every test set of a classifier, side by side."""

    def on_test_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        confusion = getattr(pl_module, "confusion", None)
        datamodule = getattr(trainer, "datamodule", None)
        if confusion is None or datamodule is None:
            return
        lengths = dict(zip(datamodule.test_prefixes, datamodule.test_lengths, strict=True))
        matrices = {}
        for prefix, metric in confusion.items():
            if metric.update_called:
                matrices[lengths[prefix]] = metric.compute().cpu()  # (C, C)
                metric.reset()
        if matrices:
            n = next(iter(matrices.values())).shape[0]
            names = class_names(datamodule, n)
            fig = confusion_figure(matrices, names, datamodule.train_length)
            _log_figure(trainer, "test/confusion_matrix", fig)


def _input_labels(x: torch.Tensor, extra: int) -> list[str]:
    """Tick labels of one input sequence ``x`` (T,) tokens or (T, F) values: the token, or
    the first feature rounded; ``extra`` leading positions the network added (``CLS``)."""
    values = x[:, 0] if x.dim() == 2 else x  # (T,)
    if values.dtype.is_floating_point and not torch.equal(values, values.round()):
        labels = [f"{float(v):.1f}" for v in values]
    else:  # tokens, or bits stored as floats
        labels = [str(int(v)) for v in values]
    return ["CLS"] * extra + labels


def attention_figure(maps: list[torch.Tensor], labels: list[str], title: str):
    """Every layer (rows) and head (columns) of one example's attention, ``maps`` one
    (H, T, T) tensor per layer: queries down, keys across, both labelled with the input
    at that position, one shared colour bar of the attention weight."""
    plt = _pyplot()
    n_layers, n_heads, T = len(maps), maps[0].shape[0], maps[0].shape[-1]
    every = max(1, -(-T // 12))  # at most about a dozen labelled positions per axis
    ticks = list(range(0, T, every))
    tick_labels = [f"{t}: {labels[t]}" for t in ticks]
    top = max(float(m.max()) for m in maps)
    cell = 2.2 if T > 12 else 1.8
    fig, axes = plt.subplots(
        n_layers, n_heads, figsize=(cell * n_heads + 1.5, cell * n_layers + 0.8), squeeze=False
    )
    for layer, layer_maps in enumerate(maps):
        for head in range(n_heads):
            ax = axes[layer][head]
            image = ax.imshow(layer_maps[head], cmap="viridis", vmin=0.0, vmax=top)
            ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=7)
            ax.set_xticks(ticks, tick_labels if layer == n_layers - 1 else [], rotation=90)
            ax.set_yticks(ticks, tick_labels if head == 0 else [])
            ax.tick_params(labelsize=5, length=2)
            if layer == n_layers - 1:
                ax.set_xlabel("key position: input", fontsize=7)
            if head == 0:
                ax.set_ylabel("query position: input", fontsize=7)
    bar = fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.7)
    bar.set_label("attention weight (each row sums to 1)", fontsize=7)
    bar.ax.tick_params(labelsize=6)
    fig.suptitle(title, fontsize=8)
    return fig


class AttentionMapLogger(L.Callback):
    """After training, plots every layer's and head's attention on one validation example.

    Only for networks that expose ``attention_maps`` (transformer backbones).
    """

    def __init__(self, example: int = 0) -> None:
        self.example = example

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.plot(trainer, pl_module, getattr(trainer, "datamodule", None))

    def plot(self, trainer: L.Trainer, pl_module: L.LightningModule, datamodule) -> None:
        """The plot of ``pl_module``'s weights now, on ``datamodule``'s validation example,
        written to ``trainer``'s run folder and loggers (a population member's is drawn by
        the population, whose members' Trainers do not train)."""
        net = getattr(pl_module, "net", None)
        if datamodule is None or not hasattr(getattr(net, "backbone", None), "attention_maps"):
            return
        batch = datamodule.val_set[[self.example]]
        if "x" not in batch:
            return
        was_training = net.training
        net.eval()
        x = trainer.precision_plugin.convert_input(batch["x"].to(pl_module.device))  # 64-true
        with torch.no_grad():
            maps = net.attention_maps(x)  # per layer (1, H, T, T)
        net.train(was_training)
        maps = [m[0].float().cpu() for m in maps]
        x = batch["x"][0].cpu()
        labels = _input_labels(x, extra=maps[0].shape[-1] - x.shape[0])
        target = batch.get("y")
        about = f", target {target[0].tolist()}" if target is not None and target.dim() == 1 else ""
        title = (
            f"attention of validation example {self.example} ({datamodule.name}{about}); "
            "tick labels: position: input value"
        )
        _log_figure(trainer, "val/attention_maps", attention_figure(maps, labels, title))
