"""Plain ``nn.Module`` networks (no Lightning here): backbones, heads, seq2seq models.

Registries map an ``arch`` name to a constructor; the builders pass each
constructor only the arguments its ``__init__`` names (``options.build_with_options``), so
one set of options (the CLI's, as one ``BackboneOptions``) builds any architecture, and
:func:`backbone_reads` tells which of them an arch reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from torch import nn

from lit_seq.util.checks import check_choice

from .alibi import ALiBiBias, alibi_slopes
from .attention import AttentionPositions, MultiHeadAttention, PositionalEncoding, causal_mask
from .heads import AppendedOutputHead, PerStepHead, SequenceClassifier
from .linear_attention import LinearAttentionBackbone
from .linear_rnn import EIGENVALUES, LinearRNNBackbone
from .mamba import MambaBackbone
from .ndstack_rnn import NDStackRNNBackbone
from .options import OPTIONS, BackboneOptions, build_with_options, options_read
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
from .recurrent import CELLS, NONLINEARITIES, LSTMBackbone, RecurrentBackbone, RNNBackbone
from .relative_bias import RelativePositionBias, relative_bucket
from .rotary import RotaryPositionalEncoding
from .seq2seq import RecurrentSeq2Seq, TransformerSeq2Seq
from .stack_rnn import StackRNNBackbone
from .tape_rnn import TapeRNNBackbone
from .transformer import NORMS, DecoderBlock, EncoderBlock, FeedForward, TransformerBackbone

BACKBONES: dict[str, Callable[..., nn.Module]] = {
    "transformer": TransformerBackbone,
    "rnn": RNNBackbone,
    "lstm": LSTMBackbone,
    "mamba": MambaBackbone,
    "linear_rnn": LinearRNNBackbone,
    "linear_attention": LinearAttentionBackbone,
    "stack_rnn": StackRNNBackbone,
    "ndstack_rnn": NDStackRNNBackbone,
    "tape_rnn": TapeRNNBackbone,
}
# the sequence mixers (issue 40): a parallel and a step form each; none is a SEQ2SEQ arch
MIXERS = ("mamba", "linear_rnn", "linear_attention")
# Delétang et al. 2023's memory-augmented RNNs (issue 56): a loop over time each, no SEQ2SEQ
MEMORY_RNNS = ("stack_rnn", "ndstack_rnn", "tape_rnn")

SEQ2SEQ: dict[str, Callable[..., nn.Module]] = {
    "transformer": TransformerSeq2Seq,
    "rnn": functools.partial(RecurrentSeq2Seq, cell="rnn"),
    "lstm": functools.partial(RecurrentSeq2Seq, cell="lstm"),
}


def backbone_reads(arch: str) -> frozenset[str]:
    """The ``BackboneOptions`` fields the backbone ``arch`` reads: those its class's
    ``__init__`` names (an lstm: d_model, n_layers, dropout, bidirectional, forget_bias),
    plus ``input_size`` when it can read the one-hot input without an embedding."""
    check_choice("arch", arch, BACKBONES)
    return options_read(BACKBONES[arch], (*OPTIONS, "input_size"))


def build_backbone(
    arch: str,
    options: BackboneOptions,
    *,
    causal: bool,
    max_len: int,
    input_size: int | None = None,
) -> nn.Module:
    """Build the (B, T, d) -> (B, T, d) backbone named ``arch`` (a key of ``BACKBONES``),
    passing its class the options its ``__init__`` names (:func:`backbone_reads`).

    ``max_len`` is the longest sequence it reads (sizes the transformer's positional table).
    ``input_size`` (None: d) is the width of its input when a head feeds it the one-hot
    input itself; an arch that cannot read it (no ``input_size`` argument) is refused.
    """
    check_choice("arch", arch, BACKBONES)
    given: dict = dict(causal=causal, max_len=max_len)
    if input_size is not None:
        if "input_size" not in backbone_reads(arch):
            raise ValueError(f"arch={arch!r} reads no one-hot input (input_size={input_size})")
        given["input_size"] = input_size
    return build_with_options(BACKBONES[arch], options, **given)


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
    "MEMORY_RNNS",
    "MIXERS",
    "NORMS",
    "OPTIONS",
    "POS_MODES",
    "READOUTS",
    "SEQ2SEQ",
    "ALiBiBias",
    "AppendedOutputHead",
    "AttentionPositions",
    "BackboneFactory",
    "BackboneOptions",
    "LSTMBackbone",
    "RNNBackbone",
    "DecoderBlock",
    "EncoderBlock",
    "FeedForward",
    "LearnablePositionalEncoding",
    "LinearAttentionBackbone",
    "LinearRNNBackbone",
    "MambaBackbone",
    "MultiHeadAttention",
    "NDStackRNNBackbone",
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
    "StackRNNBackbone",
    "TapeRNNBackbone",
    "TransformerBackbone",
    "TransformerSeq2Seq",
    "alibi_slopes",
    "backbone_reads",
    "build_backbone",
    "build_positional",
    "build_seq2seq",
    "causal_mask",
    "count_parameters",
    "position_limit",
    "relative_bucket",
]
