"""T5 relative position bias (Raffel et al. 2020): one learned scalar per head and bucket.

The score of query i and key j gets b[h, bucket(j - i)] added, and nothing is added to the
input. Buckets follow T5: with n buckets per side, offsets below n/2 get a bucket each
(exact), larger ones share log-spaced buckets up to ``max_distance``, and everything beyond
falls in the last bucket. Bidirectional attention (an encoder) splits the buckets by sign:
half for keys on the left (j < i) and half, shifted by n/2, for keys on the right. Causal
attention only sees the left, so it uses all buckets there (keys on the right, masked
anyway, share bucket 0).

Worked example, T5's sizes (32 buckets, max_distance 128), bidirectional (16 a side, 8
exact): j - i = -3 -> 3, +3 -> 16 + 3 = 19, -20 -> 8 + floor(8 log(20/8) / log(128/8)) = 10,
-100 -> 15, -1000 -> 15 (the last left bucket). Causal (32 on the left, 16 exact):
-3 -> 3, -20 -> 16 + floor(16 log(20/16) / log(128/16)) = 17, -1000 -> 31, +5 -> 0.

Sizes are T5's and fixed: the table is (32, H) whatever ``max_len`` is, so its init (and
every parameter built after it) does not move with the test lengths. As in T5, the
encoder's self-attention and the decoder's each have their own table, shared by all their
layers; cross-attention has no bias. Init N(0, d^-1/2) per entry, as the Hugging Face T5
port (a bias of the size of the untrained scores, not so small that it starts as ``none``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .attention import PositionalEncoding

NUM_BUCKETS = 32
MAX_DISTANCE = 128


def relative_bucket(
    offset: Tensor,
    *,
    bidirectional: bool,
    num_buckets: int = NUM_BUCKETS,
    max_distance: int = MAX_DISTANCE,
) -> Tensor:
    """T5's bucket of each key-minus-query offset j - i (any shape, long) -> same shape, long."""
    bucket = torch.zeros_like(offset)
    if bidirectional:
        num_buckets //= 2
        bucket = bucket + (offset > 0).long() * num_buckets  # the right side's half
        distance = offset.abs()
    else:
        distance = (-offset).clamp(min=0)  # the left side only; the right shares bucket 0
    max_exact = num_buckets // 2
    # log-spaced buckets from max_exact up to max_distance (clamp(min=1) only avoids log 0
    # where the exact branch is taken anyway)
    log_ratio = torch.log(distance.clamp(min=1).float() / max_exact) / math.log(
        max_distance / max_exact
    )
    large = max_exact + (log_ratio * (num_buckets - max_exact)).long()
    large = large.clamp(max=num_buckets - 1)
    return bucket + torch.where(distance < max_exact, distance, large)


class RelativePositionBias(PositionalEncoding):
    """Learned per-head bias per relative-position bucket (``pos_mode="relative"``).

    Args:
        n_heads: attention heads H, one bias per bucket each.
        causal: the attention is causal (one-sided buckets).
        d_model: model width d; sets the init scale d^-1/2.
    """

    in_attention = True

    def __init__(self, n_heads: int, causal: bool = False, d_model: int = 64) -> None:
        super().__init__()
        self.causal = causal
        # (num_buckets, H): fixed size, so the global RNG is used the same for every max_len
        self.table = nn.Embedding(NUM_BUCKETS, n_heads)
        nn.init.normal_(self.table.weight, std=d_model**-0.5)

    def score_bias(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """b[h, bucket(j - i)] for queries at ``q_pos`` (T,) and keys at ``k_pos`` (S,): (H, T, S)."""
        offset = k_pos[None, :] - q_pos[:, None]  # (T, S)
        buckets = relative_bucket(offset, bidirectional=not self.causal)
        return self.table(buckets).permute(2, 0, 1)  # (T, S, H) -> (H, T, S)
