"""`duplicate_string`: write a random string twice (Delétang et al. 2023)."""

import torch
from torch import Tensor

from lit_seq.data.string_transduction import StringTransductionData


def duplicate_string_targets(tokens: Tensor) -> Tensor:
    """The string twice, no separator: (B, N) -> (B, 2N).

    Example: [1, 0, 1] -> [1, 0, 1, 1, 0, 1].
    """
    return torch.cat([tokens, tokens], dim=1)


class DuplicateStringData(StringTransductionData):
    """Transduction: s_1 .. s_N -> s_1 .. s_N s_1 .. s_N, on 2N empty positions after the input.

    The context-sensitive task of Delétang et al. 2023
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/cs/duplicate_string.py):
    the output is the input written twice, twice as long as the input. Worked example: 101
    -> 101101. Length k x N: k x N symbols in, 2k x N out (the model reads 3k x N positions).
    """

    name = "duplicate_string"  # its key in TASKS, configs/<name>/ and every record
    targets = staticmethod(duplicate_string_targets)
    output_factor = 2
