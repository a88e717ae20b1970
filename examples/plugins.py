"""A backbone and a task of your own, used by import path: nothing inside lit_seq is edited.

    python -m lit_seq.fit --config examples/majority_gru.yaml

``GRUBackbone`` is a backbone (``nn.Module``, (B, T, d) -> (B, T, d), a ``causal`` flag, an
optional (B, T) padding mask): ``--model.backbone examples.plugins.GRUBackbone``.
``MajorityData`` is a task (a ``SyntheticDataModule``): ``--data examples.plugins.MajorityData``.
Both work from a config file, the command line and as grid axis values (docs/plugins.md).
"""

import torch
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
        n_val: validation sequences.
        n_test: sequences in each test set.
        batch_size: examples per batch in every split.
        seed: seed of the data generation and of the training shuffle order.
        gen_factors: length-generalisation test sets at k x length. Defaults to [2, 4].
    """

    name = "majority"  # carried into every record
    task_kind = "classification"  # trained by lit_seq.systems.SequenceClassification

    def __init__(
        self,
        length: int = 15,
        n_train: int = 2000,
        n_val: int = 200,
        n_test: int = 500,
        batch_size: int = 64,
        seed: int = 0,
        gen_factors: list[int] | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, seed=seed, gen_factors=gen_factors)
        self.length = check_int("length", length, 1)
        self.set_split_sizes(n_train, n_val, n_test)

    @property
    def train_length(self) -> int:
        return self.length

    @property
    def in_features(self) -> int:
        return 1

    @property
    def out_features(self) -> int:
        return 2

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        bits = torch.randint(0, 2, (n, length), generator=generator)  # (B, N)
        return {"x": bits.unsqueeze(-1).float(), "y": majority_labels(bits)}
