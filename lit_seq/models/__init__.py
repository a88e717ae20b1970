"""Plain ``nn.Module`` networks (no Lightning here): backbones, heads, seq2seq models.

Registries map an ``arch`` name to a constructor; the builders pass each
constructor only the arguments it takes, so one set of options (the CLI's, as one
``BackboneOptions``) builds any architecture.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable

from torch import nn

from lit_seq.util.checks import check_choice

from .alibi import ALiBiBias, alibi_slopes
from .attention import AttentionPositions, MultiHeadAttention, PositionalEncoding, causal_mask
from .heads import AppendedOutputHead, PerStepHead, SequenceClassifier
from .linear_attention import LinearAttentionBackbone
from .linear_rnn import EIGENVALUES, LinearRNNBackbone
from .mamba import MambaBackbone
from .options import BackboneOptions
from .plugin import BackboneFactory, PluginBackbone
from .positional import (
    POS_MODES,
    LearnablePositionalEncoding,
    NoPositionalEncoding,
    SinusoidalPositionalEncoding,
    build_positional,
    position_limit,
)
from .randomized import RandomizedPositionalEncoding
from .readout import READOUTS, Readout
from .recurrent import CELLS, NONLINEARITIES, RecurrentBackbone
from .relative_bias import RelativePositionBias, relative_bucket
from .rotary import RotaryPositionalEncoding
from .seq2seq import RecurrentSeq2Seq, TransformerSeq2Seq
from .transformer import NORMS, DecoderBlock, EncoderBlock, FeedForward, TransformerBackbone

BACKBONES: dict[str, Callable[..., nn.Module]] = {
    "transformer": TransformerBackbone,
    "rnn": functools.partial(RecurrentBackbone, cell="rnn"),
    "lstm": functools.partial(RecurrentBackbone, cell="lstm"),
    "mamba": MambaBackbone,
    "linear_rnn": LinearRNNBackbone,
    "linear_attention": LinearAttentionBackbone,
}
# the sequence mixers (issue 40): a parallel and a step form each; none is a SEQ2SEQ arch
MIXERS = ("mamba", "linear_rnn", "linear_attention")

SEQ2SEQ: dict[str, Callable[..., nn.Module]] = {
    "transformer": TransformerSeq2Seq,
    "rnn": functools.partial(RecurrentSeq2Seq, cell="rnn"),
    "lstm": functools.partial(RecurrentSeq2Seq, cell="lstm"),
}


def build_backbone(
    arch: str,
    options: BackboneOptions,
    *,
    causal: bool,
    max_len: int,
    input_size: int | None = None,
) -> nn.Module:
    """Build the (B, T, d) -> (B, T, d) backbone named ``arch`` (a key of ``BACKBONES``).

    ``max_len`` is the longest sequence it reads (sizes the transformer's positional table).
    ``input_size`` (rnn/lstm only; None: d) is the width of its input when a head feeds it
    the one-hot input itself. The transformer ignores ``options.bidirectional``,
    ``forget_bias`` and ``nonlinearity`` (the lstm ``nonlinearity`` too); rnn/lstm ignore
    ``n_heads``, ``d_ff``, ``pos_mode``, ``pos_range``, ``residual``, ``norm``,
    ``embed_scale`` and ``max_len`` (so those are not validated for them).
    """
    check_choice("arch", arch, BACKBONES)
    o = options
    kwargs = dict(d_model=o.d_model, n_layers=o.n_layers, dropout=o.dropout, causal=causal)
    if arch == "transformer":
        kwargs.update(n_heads=o.n_heads, d_ff=o.d_ff, pos_mode=o.pos_mode, residual=o.residual)
        kwargs.update(max_len=max_len, pos_range=o.pos_range)
        kwargs.update(norm=o.norm, embed_scale=o.embed_scale)
    elif arch in MIXERS:
        takes = inspect.signature(BACKBONES[arch]).parameters
        kwargs.update(
            {k: v for k, v in dataclasses.asdict(o).items() if k in takes.keys() - kwargs}
        )
    else:
        kwargs.update(bidirectional=o.bidirectional)
        kwargs.update(input_size=input_size, forget_bias=o.forget_bias)
        if arch == "rnn":
            kwargs.update(nonlinearity=o.nonlinearity)
    return BACKBONES[arch](**kwargs)


def build_seq2seq(
    arch: str,
    options: BackboneOptions,
    *,
    vocab_size: int,
    max_len: int,
    share_embeddings: bool = True,
    pad_id: int = 0,
) -> nn.Module:
    """Build the encoder-decoder named ``arch`` (a key of ``SEQ2SEQ``).

    ``max_len`` is the longest source, and the longest target including BOS. Both ignore
    ``options.bidirectional``; rnn/lstm ignore ``n_heads``, ``d_ff``, ``pos_mode``,
    ``pos_range``, ``residual`` and ``max_len``.
    """
    check_choice("arch", arch, SEQ2SEQ)
    o = options
    kwargs = dict(vocab_size=vocab_size, d_model=o.d_model, n_layers=o.n_layers, dropout=o.dropout)
    kwargs.update(share_embeddings=share_embeddings, pad_id=pad_id)
    if arch == "transformer":
        kwargs.update(n_heads=o.n_heads, d_ff=o.d_ff, pos_mode=o.pos_mode, residual=o.residual)
        kwargs.update(max_len=max_len, pos_range=o.pos_range)
    return SEQ2SEQ[arch](**kwargs)


def count_parameters(module: nn.Module) -> int:
    """Number of trainable parameters (tied weights counted once)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


__all__ = [
    "BACKBONES",
    "CELLS",
    "NONLINEARITIES",
    "EIGENVALUES",
    "MIXERS",
    "NORMS",
    "POS_MODES",
    "READOUTS",
    "SEQ2SEQ",
    "ALiBiBias",
    "AppendedOutputHead",
    "AttentionPositions",
    "BackboneFactory",
    "BackboneOptions",
    "DecoderBlock",
    "EncoderBlock",
    "FeedForward",
    "LearnablePositionalEncoding",
    "LinearAttentionBackbone",
    "LinearRNNBackbone",
    "MambaBackbone",
    "MultiHeadAttention",
    "NoPositionalEncoding",
    "PerStepHead",
    "PluginBackbone",
    "PositionalEncoding",
    "RandomizedPositionalEncoding",
    "Readout",
    "RecurrentBackbone",
    "RecurrentSeq2Seq",
    "RelativePositionBias",
    "RotaryPositionalEncoding",
    "SequenceClassifier",
    "SinusoidalPositionalEncoding",
    "TransformerBackbone",
    "TransformerSeq2Seq",
    "alibi_slopes",
    "build_backbone",
    "build_positional",
    "build_seq2seq",
    "causal_mask",
    "count_parameters",
    "position_limit",
    "relative_bucket",
]
