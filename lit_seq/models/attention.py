"""Multi-head scaled dot-product attention, the leaf layer of every transformer here.

Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + bias) V, computed independently per head;
the bias is zero unless a positional encoding acts inside attention (``PositionalEncoding``
below is the contract between the two: rotary turns Q and K, alibi / relative add the bias).

Worked example (d_model=2, one head, identity projections, tokens X = I):
Q = K = V = I, scores Q K^T / sqrt(2) = [[0.707, 0], [0, 0.707]], and the row
softmax gives weights [[0.67, 0.33], [0.33, 0.67]]: each token attends mostly to
itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lit_seq.models.dropout import dropout, in_dropout_stream
from lit_seq.models.stacking import MembersAsBatchAttention, in_stacked_call


def causal_mask(T: int, device: torch.device | str | None = None) -> Tensor:
    """Lower-triangular mask: query i may attend to keys j <= i.

    Args:
        T: sequence length.
        device: where to allocate the mask.

    Returns:
        (T, T) bool, True where attention is allowed (the SDPA convention; note that
        ``nn.MultiheadAttention`` uses the opposite one).
    """
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


class PositionalEncoding(nn.Module):
    """What a transformer asks of a positional encoding: the three places position can enter.

    Each encoding (``lit_seq.models.positional.POS_MODES``) overrides the hooks it uses; the
    defaults do nothing, so ``none`` overrides none of them.

    - the input: ``forward(x, offset, positions=...)`` adds one vector per position
      (sinusoidal, learnable, randomized);
    - queries and keys: ``rotate(x, positions)`` turns them by their positions (rotary);
    - the scores: ``score_bias(q_pos, k_pos)`` returns an additive (H, T, S) bias (alibi,
      relative).

    ``positions(T)`` says which position indices a length-T sequence gets: 0 .. T-1, except
    for randomized. ``in_attention`` is True for the last two kinds: only then does a
    transformer hand ``AttentionPositions`` to its attention layers, so the input-only
    encodings keep the attention fast path exactly as it was.
    """

    in_attention: ClassVar[bool] = False

    def positions(self, length: int, offset: int = 0, device: torch.device | None = None) -> Tensor:
        """Position indices of a sequence of ``length`` T starting at ``offset``: (T,) long."""
        return torch.arange(offset, offset + length, device=device)

    def forward(self, x: Tensor, offset: int = 0, *, positions: Tensor | None = None) -> Tensor:
        """Add the encoding to the input: (B, T, d) -> (B, T, d); here, nothing to add."""
        return x

    def rotate(self, x: Tensor, positions: Tensor) -> Tensor:
        """Queries or keys (B, H, L, dh) at ``positions`` (L,) -> the same shape; here, as is."""
        return x

    def score_bias(self, q_pos: Tensor, k_pos: Tensor) -> Tensor | None:
        """Additive score bias (H, T, S) for queries at ``q_pos`` (T,) and keys at ``k_pos`` (S,)."""
        return None


@dataclass
class AttentionPositions:
    """Where one attention call's queries and keys sit, and the encoding that acts on them.

    Built once per forward and shared by every layer, so the bias is computed once.

    Attributes:
        encoding: an encoding with ``in_attention`` (rotary, alibi, relative).
        q_pos: (T,) long positions of the queries.
        k_pos: (S,) long positions of the keys.
    """

    encoding: PositionalEncoding
    q_pos: Tensor
    k_pos: Tensor

    @classmethod
    def of(
        cls, encoding: PositionalEncoding, q_pos: Tensor, k_pos: Tensor | None = None
    ) -> AttentionPositions | None:
        """Positions for ``encoding``, or None when it only acts on the input (self-attention
        when ``k_pos`` is None: keys sit where the queries do)."""
        if not encoding.in_attention:
            return None
        return cls(encoding, q_pos, q_pos if k_pos is None else k_pos)

    @cached_property
    def bias(self) -> Tensor | None:
        """(H, T, S) float bias added to the scaled scores, or None."""
        return self.encoding.score_bias(self.q_pos, self.k_pos)


class KVCache:
    """Keys and values of the positions decoded so far, for one self-attention layer.

    Holds up to ``capacity`` positions, (B, H, capacity, dh) each, allocated at the first
    ``append`` with the shape, dtype and device of the keys it gets (so autocast's dtype
    is kept); ``append`` writes the newest positions' projected keys/values after those
    already held and returns views of all of them, so a step costs one write instead of
    re-projecting the prefix.

    Args:
        capacity: most positions it will hold (the decoding steps).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.k: Tensor | None = None
        self.v: Tensor | None = None
        self.length = 0  # positions held so far

    def check_room(self, n: int) -> int:
        """Raise unless n more positions fit; return the number held so far."""
        if self.length + n > self.capacity:
            raise ValueError(
                f"KV cache holds {self.capacity} positions: cannot append {n} "
                f"to the {self.length} already there"
            )
        return self.length

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Add keys/values (B, H, n, dh) of n new positions; return all so far, (B, H, L, dh)."""
        end = self.check_room(k.shape[2]) + k.shape[2]
        if self.k is None or self.v is None:
            B, H, _, dh = k.shape
            self.k = k.new_empty(B, H, self.capacity, dh)
            self.v = v.new_empty(B, H, self.capacity, v.shape[-1])
        self.k[:, :, self.length : end] = k
        self.v[:, :, self.length : end] = v
        self.length = end
        return self.k[:, :, :end], self.v[:, :, :end]


class MultiHeadAttention(nn.Module):
    """Multi-head attention with padding and causal masks.

    The fast path goes through ``F.scaled_dot_product_attention`` (flash / memory-
    efficient kernels on GPU); asking for the weights switches to an explicit
    softmax so the maps can be returned for visualisation, and so does dropout in
    training under a ``dropout_stream`` (``dropout.py``: the weights are dropped with
    the stream's masks, which SDPA cannot take).

    Args:
        d_model: model width d; split evenly over the heads.
        n_heads: number of heads H; must divide d_model.
        dropout: dropout on the attention weights (training only).
        bias: the query, key, value and output projections have a bias (False: none, as
            Delétang et al. 2023's ``hk.Linear(with_bias=False)``).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        if d_model % n_heads != 0:
            divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
            raise ValueError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}; "
                f"allowed n_heads for d_model={d_model}: {divisors}"
            )
        self.d_model = d_model
        self.n_heads = n_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def _split_heads(self, x: Tensor) -> Tensor:
        B, L, d = x.shape
        return x.view(B, L, self.n_heads, d // self.n_heads).transpose(1, 2)  # (B, H, L, dh)

    @staticmethod
    def _merge_heads(y: Tensor) -> Tensor:
        B, H, L, dh = y.shape
        return y.transpose(1, 2).reshape(B, L, H * dh)  # re-assemble heads: (B, L, d)

    def project_kv(
        self, key_value: Tensor, *, positions: AttentionPositions | None = None
    ) -> tuple[Tensor, Tensor]:
        """Keys and values of ``key_value`` (B, S, d), split into heads: (B, H, S, dh) each.

        What ``attend`` takes, so that incremental decoding projects each position once. With
        ``positions`` the keys are rotated to ``positions.k_pos`` (rotary) before they are
        returned, so a cache holds them ready to use.
        """
        k = self._split_heads(self.k_proj(key_value))
        if positions is not None:
            k = positions.encoding.rotate(k, positions.k_pos)
        return k, self._split_heads(self.v_proj(key_value))

    def attend(
        self,
        query: Tensor,
        k: Tensor,
        v: Tensor,
        *,
        key_padding_mask: Tensor | None = None,
        positions: AttentionPositions | None = None,
    ) -> Tensor:
        """Attend from ``query`` (B, T, d) to keys/values already projected by ``project_kv``.

        Every query sees every key not marked in ``key_padding_mask`` (B, S): no causal
        mask, which is exact for one new query over the cached keys of the positions up
        to and including its own (or for any queries over an encoder's memory). With
        ``positions`` the queries are rotated to ``q_pos`` and the score bias of
        (``q_pos``, ``k_pos``) is added; the keys must already be rotated (``project_kv``).

        Returns:
            (B, T, d), as ``forward`` without weights.
        """
        q = self._split_heads(self.q_proj(query))  # (B, H, T, dh)
        bias = None
        if positions is not None:
            q = positions.encoding.rotate(q, positions.q_pos)
            bias = positions.bias
        allowed = None if key_padding_mask is None else ~key_padding_mask[:, None, None, :]
        mask = allowed if bias is None else _bias_mask(bias, allowed, q.dtype)
        p_drop = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p_drop)
        return self.out_proj(self._merge_heads(y))

    def forward(
        self,
        query: Tensor,
        key_value: Tensor | None = None,
        *,
        key_padding_mask: Tensor | None = None,
        causal: bool = False,
        need_weights: bool = False,
        positions: AttentionPositions | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key_value`` (itself when None).

        Args:
            query: (B, T, d).
            key_value: (B, S, d) for cross-attention, None for self-attention (S = T).
            key_padding_mask: (B, S) bool, True marks padding keys that are ignored.
            causal: hide keys j > i from query i; needs T == S.
            need_weights: also return the attention weights (slower explicit path).
            positions: query/key positions for an encoding that acts inside attention
                (rotary turns q and k, alibi / relative add a score bias); None for the
                input-only encodings and for cross-attention.

        Returns:
            Output (B, T, d) and, if ``need_weights``, per-head weights (B, H, T, S),
            else None.
        """
        kv = query if key_value is None else key_value
        T, S = query.shape[1], kv.shape[1]
        if causal and T != S:
            raise ValueError(f"causal=True needs as many queries as keys, got T={T} and S={S}")
        q = self._split_heads(self.q_proj(query))  # (B, H, T, dh)
        k, v = self.project_kv(kv, positions=positions)  # (B, H, S, dh) each
        bias = None
        if positions is not None:
            q = positions.encoding.rotate(q, positions.q_pos)
            bias = positions.bias  # (H, T, S) or None (rotary)

        # One boolean mask, True = may attend, broadcast over heads: (B, 1, T|1, S).
        allowed = None
        if key_padding_mask is not None:
            allowed = ~key_padding_mask[:, None, None, :]
        p_drop = self.dropout if self.training else 0.0
        # the weights are computed here when asked for, or to drop them with a dropout
        # stream's masks (a system's training step): SDPA draws its own from torch's RNG
        explicit = need_weights or (p_drop > 0.0 and in_dropout_stream())
        if causal and (allowed is not None or explicit or bias is not None):
            tri = causal_mask(T, device=query.device)
            allowed = tri if allowed is None else allowed & tri

        weights = None
        if explicit:
            weights = attention_weights(q, k, bias, allowed)  # (B, H, T, S)
            y = dropout(weights, p_drop, self.training) @ v  # (B, H, T, dh)
        else:
            # Causal without padding or bias uses is_causal so the flash kernel stays eligible.
            is_causal = causal and allowed is None
            mask = allowed if bias is None else _bias_mask(bias, allowed, q.dtype)
            if in_stacked_call() and p_drop == 0.0:  # a population's members: one call
                y = MembersAsBatchAttention.apply(q, k, v, mask, is_causal)
            else:
                y = F.scaled_dot_product_attention(
                    q, k, v, attn_mask=mask, dropout_p=p_drop, is_causal=is_causal
                )  # (B, H, T, dh)
        return self.out_proj(self._merge_heads(y)), weights if need_weights else None


def attention_weights(q: Tensor, k: Tensor, bias: Tensor | None, allowed: Tensor | None) -> Tensor:
    """softmax(q k^T / sqrt(dh) + bias) over the allowed keys: (B, H, T, S).

    ``q`` (B, H, T, dh), ``k`` (B, H, S, dh), ``bias`` (H, T, S) or None, ``allowed`` bool
    broadcastable to (B, H, T, S) or None. A row with no allowed key gets weights 0 (as SDPA
    gives), not NaN; without a mask nothing is masked (no -inf, no check for it).
    """
    scores = (q / math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)  # (B, H, T, S); q is smaller
    if bias is not None:
        scores = scores + bias.to(scores.dtype)
    if allowed is None:
        return scores.softmax(dim=-1)
    weights = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
    return weights.masked_fill(~allowed, 0.0)


def _bias_mask(bias: Tensor, allowed: Tensor | None, dtype: torch.dtype) -> Tensor:
    """SDPA's float mask: the (H, T, S) score bias, -inf where ``allowed`` is False.

    Returns (1, H, T, S), or (B, H, T, S) with a padding mask; in the queries' dtype, as SDPA
    asks (autocast's half precision included).
    """
    mask = bias.to(dtype)[None]  # (1, H, T, S)
    return mask if allowed is None else mask.masked_fill(~allowed, float("-inf"))
