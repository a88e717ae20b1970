"""What the bit-string classification tasks share: uniform random bits in, one class out."""

from typing import ClassVar

import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.counter_random import Random
from lit_seq.util.checks import check_int


class BitStringClassData(SyntheticDataModule):
    """Base of Delétang et al. 2023's regular bit-string tasks (parity check, even pairs).

    The input is N bits uniform in {0, 1}, one-hot; the class (0 or 1) is ``labels`` of them.
    Batch keys: `x` (B, N, 2) float one-hot bits, `y` (B,) long. Length k x N is k x N random
    bits (the label alphabet stays {0, 1}). Delétang trains these with the uniform curriculum
    (`curriculum: true`, every length 1..N). A task sets `name` and `labels`.

    Args:
        length: bits per training sequence (N; the longest one with the curriculum).
        n_train: training sequences.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    task_kind = "classification"
    labels: ClassVar  # (B, N) bits -> (B,) classes; a staticmethod of each task

    def __init__(self, length: int = 20, n_train: int = 5000, **kwargs) -> None:
        self.length = check_int("length", length, 1)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return 2  # one-hot bit

    @property
    def out_features(self) -> int:
        return 2  # the two classes

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        bits = rng.integers("bits", 0, 2, (n, length))  # (B, N)
        x = F.one_hot(bits, num_classes=2).float()  # (B, N, 2)
        return {"x": x, "y": self.labels(bits)}
