"""The plots every fit draws: confusion matrices and attention maps.

The plots are written as PNGs in the run folder and, when W&B is on, logged as images: by
two callbacks in a solo fit, by :func:`plot_confusion` and :func:`plot_attention` for a
population's members (which have no Trainer of their own).
"""

from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.loggers import WandbLogger


def _log_figure(where: "Drawing", key: str, fig) -> Path | None:
    """Save ``fig`` as ``<run_dir>/<key>.png`` and log it to W&B if W&B is on."""
    import matplotlib.pyplot as plt

    if not where.run_dir:
        plt.close(fig)
        return None
    path = Path(where.run_dir) / f"{key.replace('/', '_')}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    for logger in where.loggers:
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


class Drawing:
    """Where a run's plots go: its folder and loggers, with ``convert`` making an input what
    its Trainer's precision computes with (a solo fit's Trainer, or a population's)."""

    def __init__(self, run_dir, loggers: list, convert=lambda x: x) -> None:
        self.run_dir, self.loggers, self.convert = run_dir, loggers, convert

    @classmethod
    def of(cls, trainer: L.Trainer) -> "Drawing":
        convert = trainer.precision_plugin.convert_input
        return cls(trainer.default_root_dir, trainer.loggers, convert)


def plot_confusion(system: L.LightningModule, datamodule, where: Drawing) -> None:
    """The confusion matrix of every test set of a classifier just tested, side by side."""
    confusion = getattr(system, "confusion", None)
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
        _log_figure(where, "test/confusion_matrix", fig)


class ConfusionMatrixLogger(L.Callback):
    """Plots the confusion matrix of every test set of a classifier, side by side."""

    def on_test_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        plot_confusion(pl_module, getattr(trainer, "datamodule", None), Drawing.of(trainer))


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


def plot_attention(system: L.LightningModule, datamodule, where: Drawing, example: int = 0) -> None:
    """Every layer's and head's attention of ``system``'s weights now on validation
    ``example``; only for networks that expose ``attention_maps`` (transformer backbones)."""
    net = getattr(system, "net", None)
    if datamodule is None or not hasattr(getattr(net, "backbone", None), "attention_maps"):
        return
    batch = datamodule.val_set[[example]]
    if "x" not in batch:
        return
    was_training = net.training
    net.eval()
    x = where.convert(batch["x"].to(system.device))  # 64-true: float64
    with torch.no_grad():
        maps = net.attention_maps(x)  # per layer (1, H, T, T)
    net.train(was_training)
    maps = [m[0].float().cpu() for m in maps]
    x = batch["x"][0].cpu()
    labels = _input_labels(x, extra=maps[0].shape[-1] - x.shape[0])
    target = batch.get("y")
    about = f", target {target[0].tolist()}" if target is not None and target.dim() == 1 else ""
    title = (
        f"attention of validation example {example} ({datamodule.name}{about}); "
        "tick labels: position: input value"
    )
    _log_figure(where, "val/attention_maps", attention_figure(maps, labels, title))


class AttentionMapLogger(L.Callback):
    """After training, plots every layer's and head's attention on one validation example."""

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        plot_attention(pl_module, getattr(trainer, "datamodule", None), Drawing.of(trainer))
