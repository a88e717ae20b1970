"""What the string-to-string tasks share: a uniform random string in, a function of it out."""

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.counter_random import Random
from lit_seq.util.checks import check_int


class StringTransductionData(SyntheticDataModule):
    """Base of Delétang et al. 2023's string transductions (reverse, duplicate, odds first).

    The input is N symbols uniform over `vocab` (2 in the paper), one-hot; the output is
    `targets` of them, `output_factor` x N symbols written on as many empty positions after
    the input. Batch keys: `x` (B, N, vocab) float one-hot, `y` (B, output_factor x N) long,
    `mask` of `y`'s shape, all True (every output position is scored). Delétang trains these
    with the uniform curriculum (`curriculum: true`, every length 1..N). A task sets `name`,
    `targets` and, if its output is longer than its input, `output_factor`.

    Args:
        length: symbols per training string (N; the longest one with the curriculum).
        vocab: symbols in the alphabet.
        n_train: training strings.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    task_kind = "transduction"
    output_factor: ClassVar[int] = 1  # output symbols per input symbol

    def __init__(self, length: int = 20, vocab: int = 2, n_train: int = 5000, **kwargs) -> None:
        self.length = check_int("length", length, 1)
        self.vocab = check_int("vocab", vocab, 2)
        super().__init__(n_train=n_train, **kwargs)

    @staticmethod
    def targets(tokens: Tensor) -> Tensor:
        """The output symbols of the strings ``tokens``: (B, N) -> (B, output_factor x N)."""
        raise NotImplementedError

    @property
    def in_features(self) -> int:
        return self.vocab

    @property
    def out_features(self) -> int:
        return self.vocab

    def output_length(self, length: int) -> int:
        return self.output_factor * length

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        tokens = rng.integers("tokens", 0, self.vocab, (n, length))  # (B, N)
        y = self.targets(tokens)  # (B, output_factor x N)
        x = F.one_hot(tokens, num_classes=self.vocab).float()  # (B, N, vocab)
        return {"x": x, "y": y, "mask": torch.ones_like(y, dtype=torch.bool)}
