"""`bucket_sort`: a random string over 5 symbols, sorted (Delétang et al. 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.string_transduction import StringTransductionData


def bucket_sort_targets(tokens: Tensor, vocab: int = 5) -> Tensor:
    """The symbols in increasing order: (B, N) -> (B, N), symbols in 0 .. vocab - 1.

    A bucket sort, no comparisons: count each symbol; output position i holds the number of
    symbols whose run ends at or before i. Example (their docstring's, vocab 5): [1, 0, 2, 0,
    4, 1, 1, 2] -> [0, 0, 1, 1, 1, 2, 2, 4]; vocab 2: [1, 1, 1, 0, 0, 0, 1] -> [0, 0, 0, 1,
    1, 1, 1].
    """
    ends = F.one_hot(tokens, num_classes=vocab).sum(dim=1).cumsum(dim=1)  # (B, vocab)
    i = torch.arange(tokens.shape[1], device=tokens.device)  # (N,) output positions
    return (ends.unsqueeze(1) <= i[:, None]).sum(dim=2)  # (B, N, vocab) -> (B, N)


class BucketSortData(StringTransductionData):
    """Transduction: a string over 5 symbols -> the same symbols sorted, on N empty positions.

    The context-sensitive task of Delétang et al. 2023
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/cs/bucket_sort.py): N symbols
    uniform over `vocab` (5 in the paper), one-hot; the output is them in increasing order,
    every position scored. Worked example (their docstring's): 10204112 -> 00111224. Length
    k x N: k x N symbols in and out. Delétang trains with the uniform curriculum
    (`curriculum: true`, every length 1..N).

    Args:
        length: symbols per training string (N; the longest one with the curriculum).
        vocab: symbols in the alphabet (theirs: 5).
        n_train: training strings.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "bucket_sort"  # its key in TASKS, configs/<name>/ and every record

    def __init__(self, length: int = 20, vocab: int = 5, n_train: int = 5000, **kwargs) -> None:
        super().__init__(length=length, vocab=vocab, n_train=n_train, **kwargs)

    def targets(self, tokens: Tensor) -> Tensor:
        """The strings sorted (B, N) -> (B, N), over this task's `vocab`."""
        return bucket_sort_targets(tokens, self.vocab)
