"""`missing_duplicate_string`: the symbol hidden in a string written twice (Delétang 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.counter_random import Random
from lit_seq.util.checks import check_int

MISSING, PAD = 2, 3  # the input tokens after the bits: the hidden symbol, the odd lengths' pad


def missing_duplicate_string_labels(tokens: Tensor) -> Tensor:
    """The bit under MISSING, read from the other copy: (B, N) -> (B,).

    `tokens` is a bit string s written twice, one symbol replaced by MISSING, then PAD if N
    is odd; the label is the same position's symbol in the other copy. A row with no MISSING
    (Delétang's inputs of length 1, a single 1) has label 1. Examples (their docstring's):
    01100210 -> 0110 twice, the 6th symbol hidden -> 1; 1011213 -> 101 twice, the 5th
    hidden, one PAD -> 0.
    """
    half = (tokens != PAD).sum(dim=1, keepdim=True) // 2  # (B, 1) the length of s
    hidden = tokens == MISSING
    at = hidden.int().argmax(dim=1, keepdim=True)  # (B, 1)
    other = torch.where(at < half, at + half, at - half)
    return torch.where(hidden.any(dim=1), tokens.gather(1, other)[:, 0], 1)


class MissingDuplicateStringData(SyntheticDataModule):
    """Sequence classification: the hidden bit of a duplicated string with one bit missing.

    Delétang et al. 2023's context-sensitive task
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/cs/missing_duplicate_string.py):
    a string s of N // 2 bits uniform in {0, 1}, written twice, the symbol at a position
    uniform over the 2 (N // 2) replaced by MISSING (2), then one PAD (3) if N is odd; the
    class is the hidden bit. N = 1 has no room for a copy: the input is a single 1 and the
    class 1, their edge case, kept. Inputs are one-hot over 0, 1, MISSING, PAD. Worked
    example: 01100210 -> s = 0110 -> class 1; 1011213 -> s = 101 -> class 0. Batch keys: `x`
    (B, N, 4) float one-hot, `y` (B,) long. Length k x N: strings of k x N tokens.
    Delétang trains with the uniform curriculum (`curriculum: true`, every length 1..N).

    Args:
        length: tokens per training input (N; the longest one with the curriculum).
        n_train: training inputs.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "missing_duplicate_string"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "classification"

    def __init__(self, length: int = 20, n_train: int = 5000, **kwargs) -> None:
        self.length = check_int("length", length, 1)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return 4  # bits 0 and 1, MISSING, PAD

    @property
    def out_features(self) -> int:
        return 2  # the hidden bit

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        if length == 1:  # theirs: no string to copy
            tokens = torch.ones(rng.members * n, 1, dtype=torch.long, device=rng.device)
        else:
            half = length // 2
            bits = rng.integers("bits", 0, 2, (n, half))  # (B, N // 2)
            hidden = rng.integers("hidden", 0, 2 * half, (n, 1))  # (B, 1)
            both = torch.cat([bits, bits], dim=1)  # (B, 2 (N // 2))
            both = torch.where(torch.arange(2 * half, device=rng.device) == hidden, MISSING, both)
            tokens = F.pad(both, (0, length % 2), value=PAD)  # (B, N)
        x = F.one_hot(tokens, num_classes=4).float()  # (B, N, 4)
        return {"x": x, "y": missing_duplicate_string_labels(tokens)}
