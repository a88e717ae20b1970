"""`reverse_string`: write a random string backwards (Delétang et al. 2023)."""

from torch import Tensor

from lit_seq.data.string_transduction import StringTransductionData


def reverse_string_targets(tokens: Tensor) -> Tensor:
    """The string reversed: (B, N) -> (B, N). Example: [0, 1, 1, 0, 1, 0] -> [0, 1, 0, 1, 1, 0]."""
    return tokens.flip(dims=[1])


class ReverseStringData(StringTransductionData):
    """Transduction: s_1 .. s_N -> s_N .. s_1, written on N empty positions after the input.

    The deterministic context-free task of Delétang et al. 2023
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/dcf/reverse_string.py):
    the output is the input reversed, as long as the input. Worked example: 011010 ->
    010110. Length k x N: k x N symbols in, k x N out.
    """

    name = "reverse_string"  # its key in TASKS, configs/<name>/ and every record
    targets = staticmethod(reverse_string_targets)
