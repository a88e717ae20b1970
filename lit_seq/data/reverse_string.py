"""`reverse_string`: write a random string backwards (Delétang et al. 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.util.checks import check_int


def reverse_string_targets(tokens: Tensor) -> Tensor:
    """The string reversed: (B, N) -> (B, N). Example: [0, 1, 1, 0, 1, 0] -> [0, 1, 0, 1, 1, 0]."""
    return tokens.flip(dims=[1])


class ReverseStringData(SyntheticDataModule):
    """Transduction: s_1 .. s_N -> s_N .. s_1, written on N empty positions after the input.

    The deterministic context-free task of Delétang et al. 2023
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/dcf/reverse_string.py):
    symbols uniform over `vocab` (2 in the paper), one-hot; the output is the input
    reversed, as long as the input. Worked example: 011010 -> 010110. Batch keys: `x`
    (B, N, vocab) float one-hot, `y` (B, N) long, `mask` (B, N) bool (every position is
    scored). Length k x N: k x N symbols in, k x N out.
    Delétang trains with the uniform curriculum (`curriculum: true`, every length 1..N).

    Args:
        length: symbols per training string (N; the longest one with the curriculum).
        vocab: symbols in the alphabet.
        n_train: training strings.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "reverse_string"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "transduction"

    def __init__(self, length: int = 20, vocab: int = 2, n_train: int = 5000, **kwargs) -> None:
        self.length = check_int("length", length, 1)
        self.vocab = check_int("vocab", vocab, 2)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return self.vocab

    @property
    def out_features(self) -> int:
        return self.vocab

    def output_length(self, length: int) -> int:
        return length

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        tokens = torch.randint(0, self.vocab, (n, length), generator=generator)  # (B, N)
        y = reverse_string_targets(tokens)
        x = F.one_hot(tokens, num_classes=self.vocab).float()  # (B, N, vocab)
        return {"x": x, "y": y, "mask": torch.ones_like(y, dtype=torch.bool)}
