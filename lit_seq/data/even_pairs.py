"""`even_pairs`: the parity of the number of unequal neighbouring bits (01 or 10; 1 = odd),
Delétang et al. 2023's regular task."""

from torch import Tensor

from lit_seq.data.bit_string import BitStringClassData


def even_pairs_labels(bits: Tensor) -> Tensor:
    """How many neighbouring pairs differ (01 or 10), mod 2: (B, N) -> (B,).

    Example: [0, 1, 1, 1, 0, 1, 0] -> pairs 01 11 11 10 01 10 -> 4 unequal -> 0;
    [0, 1, 1] -> 01 11 -> 1 unequal -> 1. (It is 1 exactly when the first and last bits
    differ; a single bit has no pair -> 0.)
    """
    return (bits[:, 1:] != bits[:, :-1]).sum(dim=1) % 2


class EvenPairsData(BitStringClassData):
    """Sequence classification: the parity of the number of 01 and 10 pairs in random bits.

    The regular task of Delétang et al. 2023 (google-deepmind/neural_networks_chomsky_hierarchy,
    tasks/regular/even_pairs.py): bits uniform in {0, 1}, one-hot; class 1 when the count of
    unequal neighbouring pairs is odd. Worked example: 0111010 -> 01 11 11 10 01 10 -> 4
    unequal pairs (even) -> class 0, and 011 -> 1 unequal pair -> class 1. Batch keys: `x`
    (B, N, 2) float one-hot bits, `y` (B,) long. Length k x N is k x N random bits.
    Delétang trains with the uniform curriculum (`curriculum: true`, every length 1..N).

    Args:
        length: bits per training sequence (N; the longest one with the curriculum).
        n_train: training sequences.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "even_pairs"  # its key in TASKS, configs/<name>/ and every record
    labels = staticmethod(even_pairs_labels)
