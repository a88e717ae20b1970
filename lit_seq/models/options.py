"""``BackboneOptions``: the architecture options every network builder shares, as one value.

A system builds it once from its own typed arguments and hands it to ``build_backbone``,
``PluginBackbone.build`` or ``build_seq2seq``; each builder passes a constructor only the
fields it takes. What the task or the head decides (``causal``, ``max_len``, ``vocab_size``)
is given to the builders separately.
"""

from dataclasses import dataclass


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
        forget_bias: added to the LSTM forget gate's bias at initialisation (lstm only).
        nonlinearity: the RNN's activation, "tanh" or "relu" (rnn only).
        d_state: state size N of each inner channel (mamba only).
        eigenvalues: the range of the transitions, "positive" (0, 1) or "signed" (-1, 1)
            (linear_rnn only).
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
    forget_bias: float
    nonlinearity: str
    d_state: int
    eigenvalues: str
