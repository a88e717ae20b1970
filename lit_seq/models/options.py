"""``BackboneOptions``: the architecture options every network builder shares, as one value.

A system builds it once from its own typed arguments and hands it to ``build_backbone``,
``PluginBackbone.build`` or ``build_seq2seq``. A backbone, built-in or plug-in, is built one
way (:func:`build_with_options`): its class gets the options its ``__init__`` names, so
the signature is where a backbone declares what it reads, and :func:`options_read` is what
the option checks ask (an option set away from its default that the chosen backbone does
not read is refused). What the task or the head decides (``causal``, ``max_len``,
``input_size``, ``vocab_size``) is given to the builders separately.
"""

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass

from torch import nn


@dataclass(frozen=True)
class BackboneOptions:
    """The backbone options a user chose (``SequenceSystem`` documents and checks each).

    No defaults: the system's ``__init__`` is the one place that declares them.

    Attributes:
        d_model: width of the embeddings and of the hidden state.
        n_layers: transformer blocks, or stacked recurrent layers.
        n_heads: attention heads (transformer only); must divide ``d_model``.
        d_ff: feed-forward width (transformer only); None means ``4 * d_model``.
        dropout: dropout probability inside the network.
        pos_mode: positional encoding (transformer only), a key of ``POS_MODES``.
        pos_range: the range [0, pos_range) randomized positions are drawn from (None: the
            ``max_len`` the builder is given); the other encodings ignore it.
        residual: keep the residual connections (transformer only).
        bidirectional: read the sequence both ways (rnn/lstm backbones only).
        norm: "pre" or "post" LayerNorm in the transformer's blocks (transformer only).
        embed_scale: scale the transformer's input by sqrt(d_model) (transformer only).
        attention_bias: the attention projections have biases (transformer only).
        inner_dropout: dropout also on the attention weights and inside the FFN (transformer
            only).
        ffn_activation: the FFN's nonlinearity, "gelu" or "relu" (transformer only).
        pos_from_end: sinusoidal positions counted from the end, T .. 1 (transformer only).
        sincos_layout: the sinusoidal table's "interleaved" or "concatenated" sines and
            cosines (transformer only).
        forget_bias: added to the LSTM forget gate's bias at initialisation (lstm only).
        nonlinearity: the RNN's activation, "tanh" or "relu" (rnn only).
        single_bias: one trained LSTM bias, ``bias_hh`` frozen holding the forget bias
            (lstm only).
        d_state: state size N of each inner channel (mamba only).
        eigenvalues: the range of the transitions, "positive" (0, 1) or "signed" (-1, 1)
            (linear_rnn only).
        stack_cell_size: width of a stack cell (stack_rnn only).
        stack_size: cells of a stack (stack_rnn), positions of the nondeterministic stack
            (ndstack_rnn).
        n_stacks: stacks side by side (stack_rnn only).
        stack_states: states of the nondeterministic stack (ndstack_rnn only).
        stack_symbols: symbols of the nondeterministic stack (ndstack_rnn only).
        read_states: the controller reads the stack tops' states too (ndstack_rnn only).
        memory_cell_size: width of a tape cell (tape_rnn only).
        memory_size: cells of the tape (tape_rnn only).
        mlp_layers_size: hidden widths of the MLP writing the tape (tape_rnn only); None
            means [64, 64].
    """

    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int | None
    dropout: float
    pos_mode: str
    pos_range: int | None
    residual: bool
    bidirectional: bool
    norm: str
    embed_scale: bool
    attention_bias: bool
    inner_dropout: bool
    ffn_activation: str
    pos_from_end: bool
    sincos_layout: str
    forget_bias: float
    nonlinearity: str
    single_bias: bool
    d_state: int
    eigenvalues: str
    stack_cell_size: int
    stack_size: int
    n_stacks: int
    stack_states: int
    stack_symbols: int
    read_states: bool
    memory_cell_size: int
    memory_size: int
    mlp_layers_size: list[int] | None


OPTIONS = tuple(f.name for f in dataclasses.fields(BackboneOptions))


def options_read(constructor: Callable[..., nn.Module], names: tuple[str, ...] = OPTIONS):
    """The ``names`` that ``constructor``'s ``__init__`` takes, as a frozenset; None when it
    takes ``**kwargs`` (it may read any of them)."""
    params = inspect.signature(constructor).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    return frozenset(name for name in names if name in params)


def build_with_options(
    constructor: Callable[..., nn.Module], options: BackboneOptions, **given: object
) -> nn.Module:
    """``constructor`` called with the fields of ``options`` and the ``given`` keywords (the
    builder's: ``causal``, ``max_len``, ...) that it names, every one if it takes
    ``**kwargs``. Example: an ``LSTMBackbone`` gets ``d_model``, ``n_layers``, ``dropout``,
    ``bidirectional``, ``forget_bias`` and ``causal``, never ``n_heads``."""
    offered = {**dataclasses.asdict(options), **given}
    takes = options_read(constructor, tuple(offered))
    return constructor(**(offered if takes is None else {k: offered[k] for k in takes}))
