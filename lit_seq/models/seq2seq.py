"""Encoder-decoder models over token ids, trained with teacher forcing, decoded greedily.

Both take ``src`` (B, S) and the shifted target ``tgt_in`` (B, T) = [BOS, y_1, ..., y_{T-1}]
and return next-token logits (B, T, V); padding (``pad_id``) trails the real tokens.
Copy example: src [5, 6, 7, pad] with tgt_in [BOS, 5, 6, 7] should predict [5, 6, 7, EOS],
and ``greedy_decode(src, BOS, EOS, 6)`` should return [5, 6, 7, EOS, pad, pad] (or stop early).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence

from .attention import AttentionPositions
from .dropout import Dropout
from .positional import build_positional
from .recurrent import make_rnn
from .transformer import DecoderBlock, DecoderCache, TransformerBackbone, block_stack


def _embeddings(
    vocab_size: int, d_model: int, share: bool
) -> tuple[nn.Embedding, nn.Embedding, nn.Linear]:
    """Source / target embeddings and the output layer, all one matrix when ``share``.

    Init std d^-0.5 so that a tied output layer starts with unit-scale logits.
    """
    src = nn.Embedding(vocab_size, d_model)
    tgt = src if share else nn.Embedding(vocab_size, d_model)
    for emb in [src] if share else [src, tgt]:  # a list: fixed RNG order
        nn.init.normal_(emb.weight, std=d_model**-0.5)
    out = nn.Linear(d_model, vocab_size)
    if share:
        out.weight = tgt.weight  # weight tying (Press & Wolf, 2017)
    return src, tgt, out


def _greedy_loop(
    next_logits: Callable[[Tensor], Tensor],
    src: Tensor,
    *,
    bos_id: int,
    eos_id: int,
    pad_id: int,
    max_new_tokens: int,
) -> Tensor:
    """Batched greedy decoding of ``src`` (B, S); ``next_logits`` maps the tokens so far
    (B, L) to (B, V).

    Returns (B, L') tokens after BOS, L' <= max_new_tokens, pad after each EOS.
    """
    B, device = src.shape[0], src.device
    ys = torch.full((B, 1), bos_id, dtype=torch.long, device=device)  # (B, 1)
    done = torch.zeros(B, dtype=torch.bool, device=device)
    for _ in range(max_new_tokens):
        nxt = next_logits(ys).argmax(dim=-1)  # (B,)
        nxt = nxt.masked_fill(done, pad_id)  # finished sequences only emit padding
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done = done | (nxt == eos_id)
        if bool(done.all()):
            break
    return ys[:, 1:]


class TransformerSeq2Seq(nn.Module):
    """Pre-LN transformer encoder-decoder (Vaswani et al., 2017).

    Args:
        vocab_size: number of token ids V (shared by source and target).
        d_model: model width d.
        n_layers: encoder blocks, and as many decoder blocks.
        n_heads: attention heads; must divide d_model.
        d_ff: FFN hidden width; None means 4 * d_model.
        dropout: dropout probability throughout.
        pos_mode: one of ``POS_MODES``, for encoder and decoder, each with its own module:
            "sinusoidal", "learnable", "randomized" (added to the embeddings), "rotary"
            (queries and keys), "alibi", "relative" (score bias: bidirectional in the
            encoder, causal in the decoder), "none". They act in self-attention only;
            cross-attention uses no positions (source and target positions do not share
            an axis; T5 likewise has no bias there).
        residual: keep the skip connections (False = no-residual ablation).
        max_len: longest source, and longest target incl. BOS.
        pos_range: randomized only: the range [0, pos_range) positions are drawn from, in
            encoder and decoder (None: max_len); the other encodings ignore it.
        share_embeddings: one matrix for source and target embeddings and the output layer.
        pad_id: padding token id; padding is masked out of attention.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        d_ff: int | None = None,
        dropout: float = 0.1,
        pos_mode: str = "sinusoidal",
        residual: bool = True,
        max_len: int = 512,
        share_embeddings: bool = True,
        pad_id: int = 0,
        pos_range: int | None = None,
    ) -> None:
        super().__init__()
        self.pad_id = pad_id
        self.scale = math.sqrt(d_model)  # embeddings * sqrt(d), as in the paper
        self.src_embed, self.tgt_embed, self.output = _embeddings(
            vocab_size, d_model, share_embeddings
        )
        self.encoder = TransformerBackbone(
            d_model=d_model,
            n_layers=n_layers,
            n_heads=n_heads,
            d_ff=d_ff,
            dropout=dropout,
            pos_mode=pos_mode,
            residual=residual,
            causal=False,  # the encoder reads the whole source
            max_len=max_len,
            pos_range=pos_range,
        )
        self.tgt_pos = build_positional(
            pos_mode, d_model, max_len, n_heads=n_heads, causal=True, pos_range=pos_range
        )
        self.drop = Dropout(dropout)
        self.decoder = block_stack(
            DecoderBlock, n_layers, d_model, n_heads, d_ff, dropout, residual
        )
        self.ln_f = nn.LayerNorm(d_model)

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S) -> memory (B, S, d) and source padding mask (B, S), True at pad."""
        src_pad = src == self.pad_id
        return self.encoder(self.src_embed(src) * self.scale, src_pad), src_pad

    def decode(
        self,
        tgt_in: Tensor,
        memory: Tensor,
        src_pad: Tensor | None,
        positions: Tensor | None = None,
    ) -> Tensor:
        """Decoder pass: tgt_in (B, T) over memory (B, S, d) -> logits (B, T, V).

        ``positions`` (T,) long are the target tokens' positions; None means the positional
        module's own for length T (0 .. T-1; randomized: its draw). No target padding mask:
        the causal mask already hides trailing padding from every real position, and it
        keeps the fast causal attention kernel usable.
        """
        h = self.tgt_pos(self.tgt_embed(tgt_in) * self.scale, positions=positions)  # (B, T, d)
        h = self.drop(h)
        in_attention = None
        if self.tgt_pos.in_attention:  # rotary / alibi / relative: positions go inside
            if positions is None:
                positions = self.tgt_pos.positions(tgt_in.shape[1], device=tgt_in.device)
            in_attention = AttentionPositions.of(self.tgt_pos, positions)
        for block in self.decoder:
            h = block(h, memory, memory_padding_mask=src_pad, positions=in_attention)
        return self.output(self.ln_f(h))  # (B, T, V)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced logits: src (B, S), tgt_in (B, T) -> (B, T, V)."""
        memory, src_pad = self.encode(src)
        return self.decode(tgt_in, memory, src_pad)

    def init_cache(
        self, memory: Tensor, src_pad: Tensor | None, capacity: int
    ) -> list[DecoderCache]:
        """Per-layer decoding caches over ``memory`` for up to ``capacity`` target tokens.

        The target positions are chosen here, once for the whole decoding (what matters for
        randomized, whose draw depends on the length): ``decode`` of any prefix with the same
        positions gives the same logits.
        """
        positions = self.tgt_pos.positions(capacity, device=memory.device)  # (capacity,)
        return [
            block.init_cache(memory, src_pad, capacity, positions=positions)
            for block in self.decoder
        ]

    def decode_step(self, tokens: Tensor, caches: list[DecoderCache]) -> Tensor:
        """Incremental decoder pass: the newest tokens (B, 1) -> next-token logits (B, V).

        The token sits at position t = the number already in ``caches`` (which it joins);
        equal to ``decode(prefix, memory, src_pad)[:, -1]`` on the whole prefix.
        """
        t = caches[0].self_kv.check_room(tokens.shape[1])
        now = caches[0].positions[t : t + 1]  # (1,): this step's position
        h = self.drop(self.tgt_pos(self.tgt_embed(tokens) * self.scale, positions=now))  # (B, 1, d)
        encoding = self.tgt_pos if self.tgt_pos.in_attention else None
        for block, cache in zip(self.decoder, caches, strict=True):
            h = block.step(h, cache, encoding)
        return self.output(self.ln_f(h))[:, -1]  # (B, V)

    @torch.no_grad()
    def greedy_decode(self, src: Tensor, bos_id: int, eos_id: int, max_new_tokens: int) -> Tensor:
        """Greedy autoregressive decoding, batched, with cached keys/values; call in eval mode.

        The memory is encoded, and its cross-attention keys/values projected, once; each
        step feeds only the newest token, whose self-attention keys/values join each
        layer's cache. Same tokens as ``greedy_decode_uncached``, without re-running the
        decoder on the whole prefix every step.

        Returns:
            (B, L) long tokens after BOS, L <= max_new_tokens; after a sequence's EOS
            come ``pad_id``s; stops once every sequence has emitted EOS.
        """
        memory, src_pad = self.encode(src)
        caches = self.init_cache(memory, src_pad, max_new_tokens)
        return _greedy_loop(
            lambda ys: self.decode_step(ys[:, -1:], caches),
            src,
            bos_id=bos_id,
            eos_id=eos_id,
            pad_id=self.pad_id,
            max_new_tokens=max_new_tokens,
        )

    @torch.no_grad()
    def greedy_decode_uncached(
        self, src: Tensor, bos_id: int, eos_id: int, max_new_tokens: int
    ) -> Tensor:
        """Reference greedy decoding: re-runs the decoder on the whole prefix each step.

        The positions of the ``max_new_tokens`` steps are chosen once, as ``greedy_decode``
        does, and each prefix takes its first ones.

        Returns: as ``greedy_decode``, which must match it token for token.
        """
        memory, src_pad = self.encode(src)
        positions = self.tgt_pos.positions(max_new_tokens, device=src.device)
        return _greedy_loop(
            lambda ys: self.decode(ys, memory, src_pad, positions=positions[: ys.shape[1]])[:, -1],
            src,
            bos_id=bos_id,
            eos_id=eos_id,
            pad_id=self.pad_id,
            max_new_tokens=max_new_tokens,
        )


class RecurrentSeq2Seq(nn.Module):
    """RNN / LSTM encoder-decoder (Sutskever et al., 2014), no attention.

    The encoder's state at each source's last real token initialises the decoder.

    Args:
        vocab_size: number of token ids V.
        d_model: embedding and hidden width d.
        n_layers: stacked layers in the encoder, and in the decoder.
        cell: "rnn" (tanh) or "lstm".
        dropout: dropout on embeddings, between layers and before the output layer.
        share_embeddings: one matrix for source and target embeddings and the output layer.
        pad_id: padding token id.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 64,
        n_layers: int = 1,
        cell: str = "lstm",
        dropout: float = 0.0,
        share_embeddings: bool = True,
        pad_id: int = 0,
    ) -> None:
        super().__init__()
        self.pad_id = pad_id
        self.src_embed, self.tgt_embed, self.output = _embeddings(
            vocab_size, d_model, share_embeddings
        )
        self.encoder = make_rnn(cell, d_model, n_layers, dropout=dropout)
        self.decoder = make_rnn(cell, d_model, n_layers, dropout=dropout)
        self.drop = Dropout(dropout)

    def encode(self, src: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        """src (B, S) -> final state at each last real token: h (n_layers, B, d), or (h, c)."""
        lengths = (src != self.pad_id).sum(dim=1).clamp(min=1).cpu()
        # Packing makes the returned state the one after each sequence's own last token.
        packed = pack_padded_sequence(
            self.drop(self.src_embed(src)), lengths, batch_first=True, enforce_sorted=False
        )
        _, state = self.encoder(packed)
        return state

    def decode(
        self, tgt_in: Tensor, state: Tensor | tuple[Tensor, Tensor]
    ) -> tuple[Tensor, Tensor | tuple[Tensor, Tensor]]:
        """tgt_in (B, T) from ``state`` -> logits (B, T, V) and the new state."""
        out, state = self.decoder(self.drop(self.tgt_embed(tgt_in)), state)  # (B, T, d)
        return self.output(self.drop(out)), state

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher-forced logits: src (B, S), tgt_in (B, T) -> (B, T, V)."""
        return self.decode(tgt_in, self.encode(src))[0]

    @torch.no_grad()
    def greedy_decode(self, src: Tensor, bos_id: int, eos_id: int, max_new_tokens: int) -> Tensor:
        """Greedy decoding, one token per step carrying the recurrent state.

        Returns: as ``TransformerSeq2Seq.greedy_decode``.
        """
        state = self.encode(src)

        def next_logits(ys: Tensor) -> Tensor:
            nonlocal state
            logits, state = self.decode(ys[:, -1:], state)  # feed only the newest token
            return logits[:, -1]

        return _greedy_loop(
            next_logits,
            src,
            bos_id=bos_id,
            eos_id=eos_id,
            pad_id=self.pad_id,
            max_new_tokens=max_new_tokens,
        )
