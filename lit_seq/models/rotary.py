"""Rotary position embedding (RoPE, Su et al. 2021): queries and keys turned by position.

Each head's dh dimensions form dh/2 pairs (x_2i, x_2i+1); at position p pair i is rotated
by the angle p * theta_i, theta_i = 10000^(-2i/dh) (the sinusoidal table's frequencies).
Rotations compose, so for a query at i and a key at j

    (R_i q) . (R_j k) = q . R_(j-i) k,

a function of the offset j - i only: the scores are relative although each vector is
turned by its absolute position. Nothing is added to the input and nothing is learned;
there is no table, so any position works (no ``max_len`` limit).

Worked example, dh = 2 (theta_0 = 1): position 1 turns (1, 0) into (cos 1, sin 1)
~ (0.540, 0.841); position 0 leaves it as is.

Encoder, causal backbone and decoder self-attention rotate their queries and keys; a cached
decoder rotates each new key once, before it joins the cache, and each query at its own
position. Cross-attention uses no positions (source and target positions do not share an
axis), as in every mode here.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .attention import PositionalEncoding

ROPE_BASE = 10000.0


class RotaryPositionalEncoding(PositionalEncoding):
    """RoPE on every head's queries and keys (``pos_mode="rotary"``).

    Args:
        d_model: model width d.
        n_heads: attention heads H; the head width dh = d / H must be even (pairs).
    """

    in_attention = True

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        if d_model % n_heads != 0 or (d_model // n_heads) % 2 != 0:
            allowed = [
                h for h in range(1, d_model + 1) if d_model % h == 0 and d_model // h % 2 == 0
            ]
            raise ValueError(
                f"pos_mode='rotary' needs an even head width d_model/n_heads, got "
                f"d_model={d_model} and n_heads={n_heads}; allowed n_heads for "
                f"d_model={d_model}: {allowed}"
            )
        dh = d_model // n_heads
        inv_freq = ROPE_BASE ** (-torch.arange(0, dh, 2, dtype=torch.float32) / dh)  # (dh/2,)
        # Not persistent: a pure function of the arguments.
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def rotate(self, x: Tensor, positions: Tensor) -> Tensor:
        """Turn queries or keys (B, H, L, dh) at ``positions`` (L,) -> (B, H, L, dh)."""
        angles = positions.to(self.inv_freq.dtype)[:, None] * self.inv_freq  # (L, dh/2)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        pairs = x.unflatten(-1, (-1, 2))  # (B, H, L, dh/2, 2)
        x1, x2 = pairs[..., 0], pairs[..., 1]
        turned = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
        return turned.flatten(-2)  # (B, H, L, dh)
