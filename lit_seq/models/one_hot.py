"""The one-hot input read as it is, without an embedding layer (Delétang et al. 2023's RNN/LSTM).

Their recurrent models read the task's one-hot symbols directly, widened by one symbol:
the empty symbol that fills the appended output positions is the last one
(experiments/utils.py ``make_model_with_empty_targets``: ``input_size + 1`` one-hot
columns). A head built with ``input_embedding=False`` uses :class:`OneHotInput` where it
would use its ``nn.Linear`` embedding, and this empty symbol where it would use a learned
empty token; the backbone then reads ``one_hot_width(in_features)`` features per step.

Worked example, 2 symbols: the input [[1, 0], [0, 1]] becomes [[1, 0, 0], [0, 1, 0]], and
the empty symbol is [0, 0, 1].
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def one_hot_width(in_features: int) -> int:
    """Features per step the backbone reads from :class:`OneHotInput`: one more symbol."""
    return in_features + 1


class OneHotInput(nn.Module):
    """(B, T, in_features) -> (B, T, in_features + 1): the input with a zero column appended.

    Nothing is learned: the backbone's own input weights are the only map from symbols.

    Args:
        in_features: the one-hot vocabulary V of the input.
    """

    def __init__(self, in_features: int) -> None:
        super().__init__()
        self.width = one_hot_width(in_features)
        empty = F.one_hot(torch.tensor(in_features), self.width).float()  # (V + 1,)
        # a constant, not a parameter: rebuilt with the module, never saved in checkpoints
        self.register_buffer("empty_symbol", empty.view(1, 1, -1), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, V) -> (B, T, V + 1)."""
        return F.pad(x, (0, 1))
