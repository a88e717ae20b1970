"""`duplicate_string`: write a random string twice (Delétang et al. 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.util.checks import check_int


def duplicate_string_targets(tokens: Tensor) -> Tensor:
    """The string twice, no separator: (B, N) -> (B, 2N).

    Example: [1, 0, 1] -> [1, 0, 1, 1, 0, 1].
    """
    return torch.cat([tokens, tokens], dim=1)


class DuplicateStringData(SyntheticDataModule):
    """Transduction: s_1 .. s_N -> s_1 .. s_N s_1 .. s_N, on 2N empty positions after the input.

    The context-sensitive task of Delétang et al. 2023
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/cs/duplicate_string.py):
    symbols uniform over `vocab` (2 in the paper), one-hot; the output is the input written
    twice, twice as long as the input. Worked example: 101 -> 101101. Batch keys: `x`
    (B, N, vocab) float one-hot, `y` (B, 2N) long, `mask` (B, 2N) bool (every position is
    scored). Length k x N: k x N symbols in, 2k x N out (the model reads 3k x N positions).
    Delétang trains with the uniform curriculum (`curriculum: true`, every length 1..N).

    Args:
        length: symbols per training string (N; the longest one with the curriculum).
        vocab: symbols in the alphabet.
        n_train: training strings.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "duplicate_string"  # its key in TASKS, configs/<name>/ and every record
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
        return 2 * length

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        tokens = torch.randint(0, self.vocab, (n, length), generator=generator)  # (B, N)
        y = duplicate_string_targets(tokens)  # (B, 2N)
        x = F.one_hot(tokens, num_classes=self.vocab).float()  # (B, N, vocab)
        return {"x": x, "y": y, "mask": torch.ones_like(y, dtype=torch.bool)}
