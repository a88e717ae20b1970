"""Pre-LN (or post-LN) transformer blocks and the transformer backbone.

Pre-LN (normalise before each sub-layer, add the residual after) trains stably
without warm-up tricks and matches ``nn.TransformerEncoderLayer(norm_first=True)``:

    x = x + Dropout(Attention(LN1(x)))
    x = x + Dropout(FFN(LN2(x)))

Post-LN (``norm="post"``, Vaswani et al. 2017 and Delétang et al. 2023's encoder) normalises
after the residual sum, as ``nn.TransformerEncoderLayer(norm_first=False)``:

    x = LN1(x + Dropout(Attention(x)))
    x = LN2(x + Dropout(FFN(x)))

LayerNorm convention (no affine): [1, 2, 3, 4] has mean 2.5 and variance 1.25, so
it normalises to [-1.342, -0.447, 0.447, 1.342].

Delétang et al. 2023's encoder (models/transformer.py ``TransformerEncoder``) is the post-LN
block with three more options: bias-free attention projections (``attention_bias=False``),
a ReLU FFN (``ffn_activation="relu"``) and dropout at their three sites only, the input
and each sub-layer's output (``inner_dropout=False``: none on the attention weights, none
inside the FFN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from lit_seq.util.checks import check_choice

from .attention import AttentionPositions, KVCache, MultiHeadAttention, PositionalEncoding
from .dropout import Dropout
from .positional import build_positional

NORMS = ("pre", "post")  # where an encoder block's LayerNorms sit
FFN_ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU}  # the FFN's nonlinearity


class FeedForward(nn.Module):
    """Position-wise MLP: Linear(d, d_ff) -> GELU (or ReLU) -> Dropout -> Linear(d_ff, d)."""

    def __init__(
        self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "gelu"
    ) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.act = FFN_ACTIVATIONS[check_choice("ffn_activation", activation, FFN_ACTIVATIONS)]()
        self.drop = Dropout(dropout)
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, d) -> (B, T, d)."""
        return self.fc2(self.drop(self.act(self.fc1(x))))


class EncoderBlock(nn.Module):
    """Self-attention + FFN block, pre-LN or post-LN.

    Args:
        d_model: model width d.
        n_heads: attention heads H (must divide d_model).
        d_ff: hidden width of the FFN.
        dropout: dropout on attention weights, inside the FFN and on each sub-layer output.
        residual: keep the skip connections; False is the no-residual ablation
            (``x = Dropout(Attention(LN1(x)))``, ``x = Dropout(FFN(LN2(x)))``).
        norm: "pre" (LayerNorm before each sub-layer) or "post" (after each residual sum).
        attention_bias: the query, key, value and output projections have a bias.
        inner_dropout: dropout also on the attention weights and the FFN's hidden layer;
            False: on each sub-layer's output alone.
        ffn_activation: the FFN's nonlinearity, "gelu" or "relu".
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        residual: bool = True,
        norm: str = "pre",
        attention_bias: bool = True,
        inner_dropout: bool = True,
        ffn_activation: str = "gelu",
    ) -> None:
        super().__init__()
        self.residual = residual
        self.post = check_choice("norm", norm, NORMS) == "post"
        inner = dropout if inner_dropout else 0.0  # the attention weights', the FFN's hidden
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, inner, bias=attention_bias)
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = FeedForward(d_model, d_ff, inner, activation=ffn_activation)
        self.drop = Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        *,
        key_padding_mask: Tensor | None = None,
        causal: bool = False,
        need_weights: bool = False,
        positions: AttentionPositions | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """(B, T, d) -> (B, T, d), plus attention weights (B, H, T, T) if asked for.

        ``key_padding_mask`` is (B, T) bool with True at padding; ``positions`` are those of
        an encoding acting inside attention (rotary, alibi, relative), else None.
        """
        a, weights = self.attn(
            x if self.post else self.ln1(x),  # post-LN normalises after the sum instead
            key_padding_mask=key_padding_mask,
            causal=causal,
            need_weights=need_weights,
            positions=positions,
        )
        if self.post:
            x = self.ln1(self._add(x, a))
            return self.ln2(self._add(x, self.ffn(x))), weights
        x = self._add(x, a)
        return self._add(x, self.ffn(self.ln2(x))), weights

    def _add(self, x: Tensor, sub: Tensor) -> Tensor:
        # The residual flag lives here so both sub-layers honour it the same way.
        return x + self.drop(sub) if self.residual else self.drop(sub)


@dataclass
class DecoderCache:
    """One decoder layer's state for incremental (one token per step) decoding.

    Attributes:
        memory_k: cross-attention keys of the encoder memory (B, H, S, dh), projected once.
        memory_v: cross-attention values of the memory, likewise.
        memory_padding_mask: (B, S) bool, True at source padding, or None.
        self_kv: causal self-attention keys/values of the target positions so far.
        positions: (capacity,) long position of every target step (0, 1, ... except for
            randomized, whose draw for the whole target is made once, here).
    """

    memory_k: Tensor
    memory_v: Tensor
    memory_padding_mask: Tensor | None
    self_kv: KVCache
    positions: Tensor


class DecoderBlock(nn.Module):
    """Pre-LN decoder block: causal self-attention, cross-attention to memory, FFN.

    Matches ``nn.TransformerDecoderLayer(norm_first=True)``. The memory is not
    normalised here: the encoder's final LayerNorm already did it.

    Args: as for ``EncoderBlock``.
    """

    def __init__(
        self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1, residual: bool = True
    ) -> None:
        super().__init__()
        self.residual = residual
        self.ln1 = nn.LayerNorm(d_model)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ln3 = nn.LayerNorm(d_model)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.drop = Dropout(dropout)

    def _add(self, x: Tensor, sub: Tensor) -> Tensor:
        return x + self.drop(sub) if self.residual else self.drop(sub)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        *,
        tgt_padding_mask: Tensor | None = None,
        memory_padding_mask: Tensor | None = None,
        positions: AttentionPositions | None = None,
    ) -> Tensor:
        """Decode one layer.

        Args:
            x: decoder stream (B, T, d).
            memory: encoder output (B, S, d).
            tgt_padding_mask: (B, T) bool, True at target padding. Optional: the causal
                mask already hides trailing padding from every real position.
            memory_padding_mask: (B, S) bool, True at source padding.
            positions: target positions for an encoding acting inside self-attention
                (rotary, alibi, relative); cross-attention never uses positions.

        Returns:
            (B, T, d).
        """
        a, _ = self.self_attn(
            self.ln1(x), key_padding_mask=tgt_padding_mask, causal=True, positions=positions
        )
        x = self._add(x, a)
        c, _ = self.cross_attn(self.ln2(x), memory, key_padding_mask=memory_padding_mask)
        x = self._add(x, c)
        return self._add(x, self.ffn(self.ln3(x)))

    def init_cache(
        self,
        memory: Tensor,
        memory_padding_mask: Tensor | None,
        capacity: int,
        positions: Tensor | None = None,
    ) -> DecoderCache:
        """Start incremental decoding over ``memory`` (B, S, d) for up to ``capacity`` steps.

        Projects the memory's cross-attention keys/values once, for every step.
        ``positions`` (capacity,) long are the target steps' positions (default 0, 1, ...).
        """
        memory_k, memory_v = self.cross_attn.project_kv(memory)
        if positions is None:
            positions = torch.arange(capacity, device=memory.device)
        return DecoderCache(
            memory_k=memory_k,
            memory_v=memory_v,
            memory_padding_mask=memory_padding_mask,
            self_kv=KVCache(capacity),
            positions=positions,
        )

    def step(
        self, x: Tensor, cache: DecoderCache, encoding: PositionalEncoding | None = None
    ) -> Tensor:
        """Decode the newest position only: x (B, 1, d) -> (B, 1, d).

        Its self-attention keys/values join ``cache.self_kv``; its query attends to those
        of every position so far (no causal mask needed: none lies in its future) and to
        the cached memory. Same result as ``forward`` on the whole prefix, at the last row.
        With an ``encoding`` acting inside attention, the new key is rotated at its position
        t before it is cached, and the query at t gets the bias over keys 0 .. t.
        """
        if x.shape[1] != 1:
            raise ValueError(f"step decodes one position at a time, got {x.shape[1]}")
        t = cache.self_kv.length
        now, so_far = cache.positions[t : t + 1], cache.positions[: t + 1]  # (1,), (t+1,)
        new_key = seen = None
        if encoding is not None:
            new_key = AttentionPositions.of(encoding, now)  # the new position as a key
            seen = AttentionPositions.of(encoding, now, so_far)  # its query over keys so far
        h = self.ln1(x)
        k, v = cache.self_kv.append(*self.self_attn.project_kv(h, positions=new_key))
        x = self._add(x, self.self_attn.attend(h, k, v, positions=seen))
        c = self.cross_attn.attend(
            self.ln2(x),
            cache.memory_k,
            cache.memory_v,
            key_padding_mask=cache.memory_padding_mask,
        )
        x = self._add(x, c)
        return self._add(x, self.ffn(self.ln3(x)))


def block_stack(
    block: type[nn.Module],
    n_layers: int,
    d_model: int,
    n_heads: int,
    d_ff: int | None,
    dropout: float,
    residual: bool,
    **options,
) -> nn.ModuleList:
    """``n_layers`` blocks of one kind, each built with the shared sizes (``d_ff`` None: 4 x
    ``d_model``) and the kind's own ``options`` (an encoder block's ``norm``, ...): the one stack
    builder of the transformer encoder (``EncoderBlock``) and the seq2seq decoder
    (``DecoderBlock``)."""
    d_ff = 4 * d_model if d_ff is None else d_ff
    return nn.ModuleList(
        block(d_model, n_heads, d_ff, dropout=dropout, residual=residual, **options)
        for _ in range(n_layers)
    )


class TransformerBackbone(nn.Module):
    """Transformer encoder stack, bidirectional or causal: (B, T, d) -> (B, T, d).

    Positional encoding + dropout, ``n_layers`` ``EncoderBlock``s, then a final LayerNorm
    (pre-LN only: a post-LN block's output is normalised already).

    Args:
        d_model: model width d.
        n_layers: number of blocks.
        n_heads: attention heads H; must divide d_model.
        d_ff: FFN hidden width; None means 4 * d_model.
        dropout: dropout probability throughout.
        pos_mode: positional encoding (``POS_MODES``): "sinusoidal", "learnable" or
            "randomized" (Ruoss et al. 2023) added to the input; "rotary" (RoPE) on queries
            and keys; "alibi" or "relative" (T5 buckets) as a score bias, built with this
            backbone's heads and ``causal`` flag and shared by all its blocks; "none".
        residual: keep the skip connections (False = no-residual ablation).
        causal: position t attends only to positions <= t (decoder-only / streaming use).
        max_len: longest sequence a learnable table reads (randomized: the range its
            positions are drawn from, unless pos_range); the other encodings read any length.
        pos_range: randomized only: the range [0, pos_range) its positions are drawn from,
            fixed whatever max_len is (None: max_len); the other encodings ignore it.
        norm: "pre" or "post" LayerNorm in every block (``NORMS``).
        embed_scale: multiply the input by sqrt(d_model) before the positions are added
            (Vaswani et al. 2017; Delétang et al. 2023's encoder).
        attention_bias: the attention's query, key, value and output projections have a
            bias (False: none, as Delétang et al. 2023's).
        inner_dropout: dropout also on the attention weights and inside the FFN (False: on
            the input and each sub-layer's output alone, Delétang et al. 2023's sites).
        ffn_activation: the FFN's nonlinearity (``FFN_ACTIVATIONS``): "gelu" or "relu"
            (Delétang et al. 2023's).
        pos_from_end: sinusoidal only (the other encodings ignore it): position t of a
            length-T input is T - t (T, T-1, ..., 1), as Delétang et al. 2023's table, not t.
        sincos_layout: sinusoidal only (ignored by the others): "interleaved" (sin, cos of
            each frequency side by side) or "concatenated" (every sine, then every cosine:
            theirs).
    """

    arch = "transformer"  # its key in BACKBONES

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        d_ff: int | None = None,
        dropout: float = 0.1,
        pos_mode: str = "sinusoidal",
        residual: bool = True,
        causal: bool = False,
        max_len: int = 512,
        pos_range: int | None = None,
        norm: str = "pre",
        embed_scale: bool = False,
        attention_bias: bool = True,
        inner_dropout: bool = True,
        ffn_activation: str = "gelu",
        pos_from_end: bool = False,
        sincos_layout: str = "interleaved",
    ) -> None:
        super().__init__()
        self.causal = causal
        self.scale = math.sqrt(d_model) if embed_scale else 1.0
        self.pos = build_positional(
            pos_mode,
            d_model,
            max_len,
            n_heads=n_heads,
            causal=causal,
            pos_range=pos_range,
            pos_from_end=pos_from_end,
            sincos_layout=sincos_layout,
        )
        self.drop = Dropout(dropout)
        self.blocks = block_stack(
            EncoderBlock,
            n_layers,
            d_model,
            n_heads,
            d_ff,
            dropout,
            residual,
            norm=norm,
            attention_bias=attention_bias,
            inner_dropout=inner_dropout,
            ffn_activation=ffn_activation,
        )
        self.ln_f = nn.Identity() if norm == "post" else nn.LayerNorm(d_model)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """(B, T, d) -> (B, T, d); ``padding_mask`` (B, T) bool, True at padding."""
        h = self.drop(self.pos(x * self.scale))
        positions = self._attention_positions(x)
        for block in self.blocks:
            h, _ = block(h, key_padding_mask=padding_mask, causal=self.causal, positions=positions)
        return self.ln_f(h)

    def _attention_positions(self, x: Tensor) -> AttentionPositions | None:
        """Positions 0 .. T-1 of x (B, T, d) for an encoding acting inside attention, else None."""
        if not self.pos.in_attention:  # input-only encodings: attention keeps its fast path
            return None
        return AttentionPositions.of(self.pos, self.pos.positions(x.shape[1], device=x.device))

    def attention_maps(self, x: Tensor, padding_mask: Tensor | None = None) -> list[Tensor]:
        """Per-layer attention weights for visualisation (no gradients).

        Call in eval mode, or dropout will perturb the maps of later layers.

        Returns:
            One (B, H, T, T) tensor per layer; each row sums to 1 over the keys.
        """
        maps = []
        with torch.no_grad():
            h = self.drop(self.pos(x * self.scale))
            positions = self._attention_positions(x)
            for block in self.blocks:
                h, w = block(
                    h,
                    key_padding_mask=padding_mask,
                    causal=self.causal,
                    need_weights=True,
                    positions=positions,
                )
                maps.append(w)
        return maps
