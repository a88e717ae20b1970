"""Positional encodings: attention is order-blind, so position is added to the input.

Sinusoidal table, PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same).
Worked example, d=4: the two frequencies are 1 and 1/100, so
pos 0 -> [sin 0, cos 0, sin 0, cos 0] = [0, 1, 0, 1] and
pos 1 -> [sin 1, cos 1, sin 0.01, cos 0.01] ~ [0.841, 0.540, 0.010, 1.000].
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from lit_seq.checks import check_choice

POS_MODES = ("sinusoidal", "learnable", "none")


def _check_length(length: int, max_len: int) -> None:
    if length > max_len:
        raise ValueError(
            f"sequence length {length} exceeds the positional table max_len={max_len}; "
            f"raise max_len to at least {length}"
        )


class SinusoidalPositionalEncoding(nn.Module):
    """Fixed sine/cosine table added to the input (Vaswani et al., 2017).

    Args:
        d_model: model width d.
        max_len: longest sequence the table covers; longer inputs raise ValueError
            (set it to the longest length-generalisation test length).
    """

    def __init__(self, d_model: int, max_len: int = 512) -> None:
        super().__init__()
        self.max_len = max_len
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]  # (L, 1)
        # 1 / 10000^(2i/d) for the even dimensions 2i.
        inv_freq = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        angles = pos * inv_freq  # (L, ceil(d/2))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = angles.sin()
        pe[:, 1::2] = angles.cos()[:, : d_model // 2]  # odd d has one cosine column fewer
        # Not persistent: it is a pure function of the arguments, so keep it out of checkpoints.
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Add the table: (B, T, d) -> (B, T, d), positions ``offset`` .. ``offset + T - 1``.

        A non-zero ``offset`` is for incremental decoding, where x holds only the newest
        positions of a longer sequence.
        """
        end = offset + x.shape[1]
        _check_length(end, self.max_len)
        return x + self.pe[offset:end].to(x.dtype)


class LearnablePositionalEncoding(nn.Module):
    """One trained vector per position, added to the input (as in BERT / GPT-2).

    Args:
        d_model: model width d.
        max_len: number of trained positions; longer inputs raise ValueError. Positions
            never seen in training stay at their small random init.
    """

    def __init__(self, d_model: int, max_len: int = 512) -> None:
        super().__init__()
        self.max_len = max_len
        self.pe = nn.Parameter(torch.randn(max_len, d_model) * 0.02)  # (L, d)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Add the learned table: (B, T, d) -> (B, T, d), positions from ``offset`` on."""
        end = offset + x.shape[1]
        _check_length(end, self.max_len)
        return x + self.pe[offset:end]


class NoPositionalEncoding(nn.Identity):
    """The no-position ablation: returns its input; takes ``offset`` like the others."""

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """(B, T, d) -> the same tensor."""
        return x


def build_positional(pos_mode: str, d_model: int, max_len: int) -> nn.Module:
    """Return the positional encoding named by ``pos_mode`` (one of ``POS_MODES``).

    "none" gives ``NoPositionalEncoding()``, an ``nn.Identity``: the no-position ablation
    (a bag of tokens unless the model is causal).
    """
    check_choice("pos_mode", pos_mode, POS_MODES)
    if pos_mode == "sinusoidal":
        return SinusoidalPositionalEncoding(d_model, max_len)
    if pos_mode == "learnable":
        return LearnablePositionalEncoding(d_model, max_len)
    return NoPositionalEncoding()
