"""`parity_check`: is the number of ones in a bit string odd? (Delétang et al. 2023)."""

from torch import Tensor

from lit_seq.data.bit_string import BitStringClassData


def parity_labels(bits: Tensor) -> Tensor:
    """The number of ones mod 2, one label per sequence: (B, N) -> (B,).

    Example: [1, 0, 1, 0, 1, 0, 0] -> 3 ones (odd) -> 1; [0, 1, 1, 1, 1] -> 4 ones -> 0.
    """
    return bits.sum(dim=1) % 2


class ParityCheckData(BitStringClassData):
    """Sequence classification: the parity of the number of ones in random bits.

    The regular-language task of Delétang et al. 2023, "Neural Networks and the Chomsky
    Hierarchy" (google-deepmind/neural_networks_chomsky_hierarchy,
    tasks/regular/parity_check.py): bits uniform in {0, 1}, one-hot encoded; class 1 when the
    count of ones is odd. Worked example: 1010100 -> 3 ones (odd) -> class 1, and
    01111 -> 4 ones (even) -> class 0. Batch keys: `x` (B, N, 2) float one-hot bits,
    `y` (B,) long. Length k x N is simply k x N random bits (the label alphabet stays {0, 1}).
    Delétang trains with the uniform curriculum (`curriculum: true`, every length 1..N).

    Args:
        length: bits per training sequence (N; the longest one with the curriculum).
        n_train: training sequences.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "parity_check"  # its key in TASKS, configs/<name>/ and every record
    labels = staticmethod(parity_labels)
