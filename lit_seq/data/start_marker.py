"""An optional start-of-sequence marker for the causal tasks: one more input channel.

A causal model without positional encodings (NoPE) can still count positions through its
mask, but position 0 looks like any other: nothing in the input says where the sequence
begins. The marker is a channel that is 1 at position 0 and 0 elsewhere, so that the first
position is told apart and every later one can be found relative to it. Worked example:
x (1, 3, 1) = [[[1], [0], [1]]] -> [[[1, 1], [0, 0], [1, 0]]].
"""

import torch
from torch import Tensor


def add_start_marker(x: Tensor) -> Tensor:
    """(B, N, C) -> (B, N, C + 1): the inputs and a last channel, 1 at position 0 only."""
    marker = torch.zeros_like(x[..., :1])  # (B, N, 1)
    marker[:, 0] = 1
    return torch.cat([x, marker], dim=-1)
