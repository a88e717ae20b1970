"""A backbone and a task of your own, used by import path: nothing inside lit_seq is edited.

    python -m lit_seq.fit --config examples/majority_gru.yaml

``GRUBackbone`` is a backbone (``nn.Module``, (B, T, d) -> (B, T, d), a ``causal`` flag, an
optional (B, T) padding mask): ``--model.backbone examples.plugins.GRUBackbone``.
``ConvBackbone`` is one with an option of its own, ``kernel``, given as LightningCLI gives any
class's options: ``--model.backbone examples.plugins.ConvBackbone
--model.backbone.init_args.kernel 5``, or ``class_path`` + ``init_args`` in a config.
``MajorityData`` is a task (a ``SyntheticDataModule``): ``--data examples.plugins.MajorityData``.
Both work from a config file, the command line and as grid axis values (docs/plugins.md).
"""

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lit_seq.data import SyntheticDataModule
from lit_seq.util.checks import check_int


class GRUBackbone(nn.Module):
    """A stack of GRU layers: (B, T, d) -> (B, T, d).

    A plug-in backbone is given the options of ``SequenceSystem`` that its ``__init__``
    names (here d_model, n_layers, dropout, causal); ``causal`` must be honoured: a
    forward-only GRU never sees a later position, so only ``causal=False`` may read both ways.

    Args:
        d_model: width of the input and of the output (the hidden size of each direction
            is d_model / 2 when bidirectional).
        n_layers: stacked GRU layers.
        dropout: dropout between layers.
        causal: position t may depend on positions <= t only.
        bidirectional: read both ways (needs causal=False).
    """

    arch = "gru"  # what records call it

    def __init__(
        self,
        d_model: int,
        n_layers: int = 1,
        dropout: float = 0.0,
        causal: bool = True,
        bidirectional: bool = False,
    ) -> None:
        super().__init__()
        if causal and bidirectional:
            raise ValueError("bidirectional=True reads later positions: needs causal=False")
        hidden = d_model // 2 if bidirectional else d_model
        self.gru = nn.GRU(
            d_model,
            hidden,
            num_layers=n_layers,
            dropout=dropout if n_layers > 1 else 0.0,
            batch_first=True,
            bidirectional=bidirectional,
        )
        self.causal = causal

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        # padding (True) only ever follows the real positions, which a forward GRU reads first
        h, _ = self.gru(x)  # (B, T, d)
        return h


class ConvBackbone(nn.Module):
    """Stacked depthwise convolutions over time, each with a GELU, a mixing layer and a
    residual: (B, T, d) -> (B, T, d).

    Its own option is ``kernel``; from the system it takes d_model, n_layers, dropout and
    causal (the options it names). Causal, each layer pads ``kernel - 1`` positions on the
    left only, so position t reads positions t - kernel + 1 .. t; else it pads both sides.

    Args:
        d_model: width of the input and of the output.
        n_layers: stacked convolution layers.
        dropout: dropout on each layer's output.
        causal: position t may depend on positions <= t only.
        kernel: positions each convolution reads (its receptive field grows by kernel - 1
            per layer).
    """

    arch = "conv"  # what records call it

    def __init__(
        self,
        d_model: int,
        n_layers: int = 2,
        dropout: float = 0.0,
        causal: bool = True,
        kernel: int = 3,
    ) -> None:
        super().__init__()
        self.kernel = check_int("kernel", kernel, 1)
        self.causal = causal
        self.convs = nn.ModuleList(
            nn.Conv1d(d_model, d_model, kernel, groups=d_model) for _ in range(n_layers)
        )
        self.mixes = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(n_layers))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        left = self.kernel - 1 if self.causal else (self.kernel - 1) // 2
        right = self.kernel - 1 - left
        for conv, mix in zip(self.convs, self.mixes, strict=True):
            if padding_mask is not None:  # padding reads as zeros, never as a token
                x = x.masked_fill(padding_mask.unsqueeze(-1), 0.0)
            h = F.pad(x.transpose(1, 2), (left, right))  # (B, d, T + kernel - 1)
            h = conv(h).transpose(1, 2)  # (B, T, d)
            x = x + self.dropout(mix(F.gelu(h)))
        return x


def majority_labels(bits: Tensor) -> Tensor:
    """1 when more than half the bits are ones: (B, N) -> (B,).

    Example: [1, 1, 0] -> 2 of 3 -> 1; [1, 0, 0, 0] -> 1 of 4 -> 0; [1, 0] -> a tie -> 0.
    """
    return (2 * bits.sum(dim=1) > bits.shape[1]).long()


class MajorityData(SyntheticDataModule):
    """Sequence classification: are most of the bits ones? Worked example: 1101 -> 3 of 4
    ones -> class 1; 0100 -> 1 of 4 -> class 0. Batch keys: ``x`` (B, N, 1) float bits,
    ``y`` (B,) long.

    Args:
        length: bits per training sequence.
        n_train: training sequences.
        n_val: validation sequences (fewer than the shared default).
        n_test: sequences in each test set (fewer than the shared default).
        **kwargs: the other options every task shares (``SyntheticDataModule``): batch_size,
            seed, gen_factors, curriculum.
    """

    name = "majority"  # carried into every record
    task_kind = "classification"  # trained by lit_seq.systems.SequenceClassification

    def __init__(
        self, length: int = 15, n_train: int = 2000, n_val: int = 200, n_test: int = 500, **kwargs
    ) -> None:
        # its own fields first: the shared constructor checks n_train against the length
        self.length = check_int("length", length, 1)
        super().__init__(n_train=n_train, n_val=n_val, n_test=n_test, **kwargs)

    @property
    def in_features(self) -> int:
        return 1

    @property
    def out_features(self) -> int:
        return 2

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        bits = torch.randint(0, 2, (n, length), generator=generator)  # (B, N)
        return {"x": bits.unsqueeze(-1).float(), "y": majority_labels(bits)}
