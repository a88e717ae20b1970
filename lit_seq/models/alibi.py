"""ALiBi (Press et al. 2022): a per-head linear distance penalty on the attention scores.

Head h adds -m_h * |i - j| to the score of query i and key j, and nothing is added to the
input. The slopes are the paper's geometric sequence: for H a power of 2,
m_h = 2^(-8h/H), h = 1..H, e.g. H=4 -> 1/4, 1/16, 1/64, 1/256 and H=8 -> 1/2, 1/4, ..., 1/256.
For other H the paper's recipe takes the slopes of the power of 2 below H and fills the
rest with every other slope of twice that power: H=6 -> 1/4, 1/16, 1/64, 1/256 (from 4)
then 1/2, 1/8 (from 8's 1/2, 1/8, 1/32, 1/128).

Causal attention (the paper's setting): only keys j <= i are seen, so the bias is
-m_h * (i - j). Worked example, H=4, query 3: head 1 adds [-3/4, -2/4, -1/4, 0] to keys 0..3.

Non-causal attention (an encoder) needs a choice, since the paper only treats causal
models, and a symmetric -m|i-j| cannot tell left from right: reflecting the sequence would
reflect the output (Press discusses encoders in the ALiBi repository's issue #5; MosaicBERT,
Portes et al. 2023, uses the symmetric form). Ours keeps the paper's slopes and makes
the two sides differ: head h penalises keys on its left (j < i) with its own slope m_h and
keys on its right (j > i) with the slope of its mirror head, m_(H+1-h). So with H=4, head 1
fades slowly to the right (1/256) and fast to the left (1/4), head 4 the other way round,
and the pair of heads tells the two sides apart. (With H=1, or for the middle head of an
odd H, the two slopes coincide and that head is symmetric.) Worked example, H=2 (slopes
1/16, 1/256), query 2 over keys 0..4: head 1 adds [-2/16, -1/16, 0, -1/256, -2/256].

Used in encoder, causal backbone and decoder self-attention (a cached decoder step biases
its one query at position t over keys 0..t); cross-attention has no bias. There is no
table and nothing is learned, so any length works.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .attention import PositionalEncoding


def alibi_slopes(n_heads: int) -> list[float]:
    """The slopes m_1..m_H of Press et al. (2022), their recipe for any H.

    >>> alibi_slopes(4)
    [0.25, 0.0625, 0.015625, 0.00390625]
    """
    if math.log2(n_heads).is_integer():
        return [2 ** (-8 * h / n_heads) for h in range(1, n_heads + 1)]
    below = 2 ** math.floor(math.log2(n_heads))  # the power of 2 below H
    return alibi_slopes(below) + alibi_slopes(2 * below)[0::2][: n_heads - below]


class ALiBiBias(PositionalEncoding):
    """Linear distance bias per head (``pos_mode="alibi"``).

    Args:
        n_heads: attention heads H, one slope each.
        causal: the attention is causal (keys on the left only); False gives the two-sided
            form described in the module docstring.
    """

    in_attention = True

    def __init__(self, n_heads: int, causal: bool = False) -> None:
        super().__init__()
        self.causal = causal
        left = torch.tensor(alibi_slopes(n_heads))  # (H,)
        right = left if causal else left.flip(0)  # head h's right side: its mirror's slope
        # Not persistent: pure functions of the arguments.
        self.register_buffer("left_slopes", left, persistent=False)
        self.register_buffer("right_slopes", right, persistent=False)

    def score_bias(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """-slope * |i - j| for queries at ``q_pos`` (T,) and keys at ``k_pos`` (S,): (H, T, S)."""
        offset = (k_pos[None, :] - q_pos[:, None]).to(self.left_slopes.dtype)  # (T, S), j - i
        left = -self.left_slopes[:, None, None] * offset.clamp(max=0).abs()  # keys j < i
        right = -self.right_slopes[:, None, None] * offset.clamp(min=0)  # keys j > i
        return left + right  # (H, T, S)
