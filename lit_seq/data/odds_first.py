"""`odds_first`: a string's odd-indexed symbols, then its even-indexed ones (Delétang 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.util.checks import check_int


def odds_first_targets(tokens: Tensor) -> Tensor:
    """The symbols at odd indices (0-based: 1, 3, 5, ...), then those at even ones: (B, N) ->
    (B, N). Example: [0, 0, 1, 1, 0, 1, 0, 1] -> [0, 1, 1, 1] + [0, 1, 0, 0]; [1, 1, 0] ->
    [1] + [1, 0].
    """
    return torch.cat([tokens[:, 1::2], tokens[:, 0::2]], dim=1)


class OddsFirstData(SyntheticDataModule):
    """Transduction: s_0 s_1 .. s_{N-1} -> s_1 s_3 s_5 .. s_0 s_2 s_4 .., on N empty positions.

    The context-sensitive task of Delétang et al. 2023
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/cs/odds_first.py): symbols
    uniform over `vocab` (2 in the paper), one-hot; the output is the same symbols, those at
    odd 0-based indices first, each half in order. That is the order their code computes
    (``[:, 1::2]`` then ``[:, ::2]``); their docstring's example lists the halves the other
    way round. Worked example: 00110101 -> 0111 then 0100 -> 01110100. Batch keys: `x`
    (B, N, vocab) float one-hot, `y` (B, N) long, `mask` (B, N) bool (every position is
    scored). Length k x N: k x N symbols in and out.
    Delétang trains with the uniform curriculum (`curriculum: true`, every length 1..N).

    Args:
        length: symbols per training string (N; the longest one with the curriculum).
        vocab: symbols in the alphabet.
        n_train: training strings.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "odds_first"  # its key in TASKS, configs/<name>/ and every record
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
        y = odds_first_targets(tokens)
        x = F.one_hot(tokens, num_classes=self.vocab).float()  # (B, N, vocab)
        return {"x": x, "y": y, "mask": torch.ones_like(y, dtype=torch.bool)}
