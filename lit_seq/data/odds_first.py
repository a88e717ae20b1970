"""`odds_first`: a string's odd-indexed symbols, then its even-indexed ones (Delétang 2023)."""

import torch
from torch import Tensor

from lit_seq.data.string_transduction import StringTransductionData


def odds_first_targets(tokens: Tensor) -> Tensor:
    """The symbols at odd indices (0-based: 1, 3, 5, ...), then those at even ones: (B, N) ->
    (B, N). Example: [0, 0, 1, 1, 0, 1, 0, 1] -> [0, 1, 1, 1] + [0, 1, 0, 0]; [1, 1, 0] ->
    [1] + [1, 0].
    """
    return torch.cat([tokens[:, 1::2], tokens[:, 0::2]], dim=1)


class OddsFirstData(StringTransductionData):
    """Transduction: s_0 s_1 .. s_{N-1} -> s_1 s_3 s_5 .. s_0 s_2 s_4 .., on N empty positions.

    The context-sensitive task of Delétang et al. 2023
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/cs/odds_first.py): the output
    is the same symbols, those at odd 0-based indices first, each half in order. That is the
    order their code computes (``[:, 1::2]`` then ``[:, ::2]``); their docstring's example
    lists the halves the other way round. Worked example: 00110101 -> 0111 then 0100 ->
    01110100. Length k x N: k x N symbols in and out.
    """

    name = "odds_first"  # its key in TASKS, configs/<name>/ and every record
    targets = staticmethod(odds_first_targets)
