"""Positional encodings: attention is order-blind, so position must enter somewhere.

``POS_MODES`` names every encoding, and ``build_positional`` builds one. Position enters
in one of three places (the contract is ``attention.PositionalEncoding``):

- added to the input: ``sinusoidal``, ``learnable`` (here) and ``randomized``
  (``randomized.py``: sinusoidal vectors at randomly spread positions);
- turning queries and keys: ``rotary`` (``rotary.py``);
- biasing the attention scores: ``alibi`` (``alibi.py``) and ``relative`` (T5 buckets,
  ``relative_bias.py``);
- nowhere: ``none``, the no-position ablation (a bag of tokens unless the model is causal).

Lengths: ``learnable`` reads at most ``max_len`` positions (one trained row each) and
``randomized`` draws its positions from [0, pos_range) (``max_len`` unless given); both
refuse longer sequences, naming that limit. The others read any length (``position_limit`` says which is which): the
sinusoidal table computes the rows past its end on demand, the same numbers a longer table
holds.

Sinusoidal table, PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same).
Worked example, d=4: the two frequencies are 1 and 1/100, so
pos 0 -> [sin 0, cos 0, sin 0, cos 0] = [0, 1, 0, 1] and
pos 1 -> [sin 1, cos 1, sin 0.01, cos 0.01] ~ [0.841, 0.540, 0.010, 1.000].

Delétang et al. 2023's table (models/positional_encodings.py ``sinusoid_position_encoding``,
``causal=True``) holds the same numbers in another layout and order: every sine, then every
cosine (``sincos_layout="concatenated"``: pos 1 -> [sin 1, sin 0.01, cos 1, cos 0.01]), and
position t of a length-T input is T - t, so the last token is always at 1 (``pos_from_end``:
a length-3 input reads the rows of 3, 2, 1).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from lit_seq.util.checks import check_choice

from .alibi import ALiBiBias
from .attention import PositionalEncoding
from .randomized import RandomizedPositionalEncoding
from .relative_bias import RelativePositionBias
from .rotary import RotaryPositionalEncoding

POS_MODES = ("sinusoidal", "learnable", "none", "rotary", "alibi", "relative", "randomized")

# Per-component std of the learnable table at init: 1/sqrt(2) is the RMS of a sinusoidal
# row, so both tables start with rows of norm sqrt(d/2), the scale of the token embeddings.
LEARNABLE_INIT_STD = 2**-0.5


def _check_length(length: int, max_len: int) -> None:
    # names the encoding and its limit: lit_seq.evaluate shows this message as it is
    if length > max_len:
        raise ValueError(
            f"sequence length {length} exceeds pos_mode='learnable''s table of max_len="
            f"{max_len} trained positions; raise max_len to at least {length} (before "
            "training: a trained table cannot grow)"
        )


def _table_rows(x: Tensor, table: Tensor, offset: int, positions: Tensor | None) -> Tensor:
    """Rows of ``table`` (L, d) for the T positions of x (B, T, d): offset.. or ``positions``."""
    if positions is None:
        end = offset + x.shape[1]
        _check_length(end, table.shape[0])
        return table[offset:end]  # (T, d), a view: the common case stays a slice
    _check_length(int(positions.max()) + 1, table.shape[0])
    return table[positions]  # (T, d)


SINCOS_LAYOUTS = ("interleaved", "concatenated")  # where a row's sines and cosines sit


def sinusoidal_rows(positions: Tensor, d_model: int, layout: str = "interleaved") -> Tensor:
    """The sinusoidal vectors of ``positions`` (L,) -> (L, d), float32 on their device.

    A pure function of each position: the table's row p and a row computed later for p are
    the same numbers (bit for bit), so a table can be extended on demand. ``layout``
    "concatenated" is Delétang et al. 2023's table: the sines of every frequency, then the
    cosines, computed as theirs in float64 (numpy's) and rounded to float32.
    """
    if check_choice("sincos_layout", layout, SINCOS_LAYOUTS) == "concatenated":
        inv_freq = 10000.0 ** -(  # their 1 / 10000^(2i/d), in float64
            torch.arange(0, d_model, 2, device=positions.device, dtype=torch.float64) / d_model
        )
        angles = positions.to(torch.float64)[:, None] * inv_freq  # (L, ceil(d/2))
        # odd d has one cosine column fewer, as the interleaved table
        return torch.cat([angles.sin(), angles.cos()[:, : d_model // 2]], dim=1).float()
    inv_freq = torch.exp(  # 1 / 10000^(2i/d) for the even dimensions 2i
        torch.arange(0, d_model, 2, device=positions.device) * (-math.log(10000.0) / d_model)
    )
    angles = positions.to(torch.float32)[:, None] * inv_freq  # (L, ceil(d/2))
    pe = torch.zeros(len(positions), d_model, device=positions.device)
    pe[:, 0::2] = angles.sin()
    pe[:, 1::2] = angles.cos()[:, : d_model // 2]  # odd d has one cosine column fewer
    return pe


def private_generator() -> torch.Generator:
    """A CPU generator seeded by ONE draw from the global RNG.

    A table drawn from it consumes the same amount of global randomness whatever its size,
    so every parameter built after it starts the same whatever ``max_len`` is (the CLI
    links ``max_len`` from the data's longest test length, which moves with gen_factors).
    """
    seed = int(torch.randint(0, 2**62, (1,)))
    return torch.Generator().manual_seed(seed)


class SinusoidalPositionalEncoding(PositionalEncoding):
    """Fixed sine/cosine vectors added to the input (Vaswani et al., 2017); any length.

    Positions below ``max_len`` are read from a precomputed table, later ones computed when
    asked for (``sinusoidal_rows``: the same numbers a longer table would hold), so a model
    trained on short sequences is evaluated on any longer ones.

    Args:
        d_model: model width d.
        max_len: positions precomputed (a cache: longer inputs work, a little slower).
        from_end: position t of a length-T input is T - t (T, T-1, ..., 1: Delétang et al.
            2023's), not t; it reads a whole sequence (no ``offset``, no ``positions``).
        layout: "interleaved" or "concatenated" (``SINCOS_LAYOUTS``, ``sinusoidal_rows``).
    """

    def __init__(
        self, d_model: int, max_len: int = 512, from_end: bool = False, layout: str = "interleaved"
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.from_end = from_end
        self.layout = check_choice("sincos_layout", layout, SINCOS_LAYOUTS)
        # Not persistent: a pure function of the arguments, so it stays out of checkpoints
        # (and a checkpoint loads whatever max_len the model is built with).
        self.register_buffer(
            "pe", sinusoidal_rows(torch.arange(max_len), d_model, layout), persistent=False
        )

    def forward(self, x: Tensor, offset: int = 0, *, positions: Tensor | None = None) -> Tensor:
        """Add the vectors: (B, T, d) -> (B, T, d), positions ``offset`` .. ``offset + T - 1``
        (``from_end``: T .. 1).

        A non-zero ``offset`` is for incremental decoding, where x holds only the newest
        positions of a longer sequence; ``positions`` (T,) long picks any rows instead.
        """
        if self.from_end:
            if offset or positions is not None:
                raise ValueError("from_end positions count from a whole sequence's end: no offset")
            T = x.shape[1]
            if self.max_len > T:  # rows T .. 1 of the table, no host sync
                return x + self.pe[1 : T + 1].flip(0).to(x.dtype)  # (T, d)
            positions = torch.arange(T, 0, -1, device=x.device)  # (T,): past the table
        if positions is None:
            if offset + x.shape[1] <= self.max_len:
                return x + self.pe[offset : offset + x.shape[1]].to(x.dtype)  # (T, d), a view
            positions = torch.arange(offset, offset + x.shape[1], device=x.device)
        if int(positions.max()) < self.max_len:
            return x + self.pe[positions].to(x.dtype)
        return x + sinusoidal_rows(positions, self.d_model, self.layout).to(x.dtype)  # past it


class LearnablePositionalEncoding(PositionalEncoding):
    """One trained vector per position, added to the input (as in BERT / GPT-2).

    Init: N(0, 1/2) per component, so a row has norm ~ sqrt(d/2) like a sinusoidal row and
    like the tokens it is added to (``Linear(1, 32)`` gives ~3-5, a scaled seq2seq embedding
    sqrt(d)). GPT-2's std 0.02 would start the model as ``none`` (rows of norm ~0.1 beside
    tokens of norm ~4) and leave every learnable-vs-sinusoidal comparison unfair. The
    table comes from ``private_generator`` row by row, so row i is the same for every
    ``max_len`` and so is every parameter built after it.

    Args:
        d_model: model width d.
        max_len: number of trained positions, the encoding's hard limit: longer inputs
            raise ValueError naming it. Positions never seen in training keep their random
            init.
    """

    def __init__(self, d_model: int, max_len: int = 512) -> None:
        super().__init__()
        self.max_len = max_len
        if torch.empty(0).is_meta:  # built for its size alone (lit_seq.fit.size_limit): no draw
            self.pe = nn.Parameter(torch.empty(max_len, d_model))
            return
        g = private_generator()
        # One call per row: a single randn(L, d) may draw differently for different L.
        rows = [torch.randn(d_model, generator=g) for _ in range(max_len)]
        self.pe = nn.Parameter(torch.stack(rows) * LEARNABLE_INIT_STD)  # (L, d)

    def forward(self, x: Tensor, offset: int = 0, *, positions: Tensor | None = None) -> Tensor:
        """Add the learned table: (B, T, d) -> (B, T, d), positions from ``offset`` on
        (or the rows ``positions`` (T,) long)."""
        return x + _table_rows(x, self.pe, offset, positions=positions)


class NoPositionalEncoding(PositionalEncoding):
    """The no-position ablation: returns its input; takes ``offset`` like the others."""


def position_limit(network: nn.Module) -> int | None:
    """The longest sequence ``network``'s positional encodings read, None for any length.

    Only a learnable table (its trained rows, ``max_len``) and randomized positions (their
    range [0, pos_range)) have a limit; sinusoidal, rotary, alibi, relative and none read any
    length.
    """
    limits = [m.max_len for m in network.modules() if isinstance(m, LearnablePositionalEncoding)]
    limits += [
        m.pos_range for m in network.modules() if isinstance(m, RandomizedPositionalEncoding)
    ]
    return min(limits, default=None)


def _randomized(d_model: int, max_len: int, pos_range: int | None) -> PositionalEncoding:
    """Sinusoidal vectors at positions drawn from [0, pos_range) (None: [0, max_len))."""
    return RandomizedPositionalEncoding(SinusoidalPositionalEncoding(d_model, max_len), pos_range)


def _rotary(d_model: int, n_heads: int) -> PositionalEncoding:
    return RotaryPositionalEncoding(d_model, n_heads)


def _alibi(n_heads: int, causal: bool) -> PositionalEncoding:
    return ALiBiBias(n_heads, causal=causal)


def _relative(d_model: int, n_heads: int, causal: bool) -> PositionalEncoding:
    return RelativePositionBias(n_heads, causal=causal, d_model=d_model)


# pos_mode -> its constructor, whose arguments are the options that encoding reads (as a
# backbone's __init__ names its options, NNCH's per-encoding parameters): only the randomized
# encoding names pos_range, so it is the only one that receives it
ENCODINGS: dict[str, Callable[..., PositionalEncoding]] = {
    "sinusoidal": SinusoidalPositionalEncoding,
    "learnable": LearnablePositionalEncoding,
    "none": NoPositionalEncoding,
    "rotary": _rotary,
    "alibi": _alibi,
    "relative": _relative,
    "randomized": _randomized,
}


def encoding_reads(pos_mode: str) -> frozenset[str]:
    """The options the encoding ``pos_mode`` reads: its constructor's arguments."""
    check_choice("pos_mode", pos_mode, POS_MODES)
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    params = inspect.signature(ENCODINGS[pos_mode]).parameters.values()
    return frozenset(p.name for p in params if p.kind in named)  # none: nn.Module's *args


def build_positional(
    pos_mode: str,
    d_model: int,
    max_len: int,
    n_heads: int = 1,
    causal: bool = False,
    pos_range: int | None = None,
    pos_from_end: bool = False,
    sincos_layout: str = "interleaved",
) -> PositionalEncoding:
    """Return the positional encoding named by ``pos_mode`` (one of ``POS_MODES``), given
    the options it reads (:func:`encoding_reads`) of those offered here.

    Args:
        pos_mode: the encoding.
        d_model: model width d.
        max_len: longest sequence: the learnable table's size and the range randomized
            draws positions from (hard limits), the sinusoidal table's precomputed rows (a
            cache); rotary, alibi, relative and none take none.
        n_heads: attention heads H (rotary turns each head's dh = d/H dimensions; alibi and
            relative give each head its own bias).
        causal: the attention it serves is causal (alibi / relative then only look left).
        pos_range: randomized only: draw positions from [0, pos_range) instead of [0,
            max_len), a range that does not move with the data (>= max_len); no other
            encoding receives it.
        pos_from_end: sinusoidal only: count the positions from the end (T, ..., 1).
        sincos_layout: sinusoidal only: "interleaved" or "concatenated" (``SINCOS_LAYOUTS``).
            The other encodings ignore both, as they ignore ``pos_range``: a config of
            Delétang's table keeps them when a grid sweeps ``pos_mode`` (their other
            encodings have no table).

    "none" gives ``NoPositionalEncoding()``, which leaves everything as is.
    """
    offered = dict(d_model=d_model, max_len=max_len, n_heads=n_heads, causal=causal)
    offered["pos_range"] = pos_range
    reads = encoding_reads(pos_mode)
    offered.update(from_end=pos_from_end, layout=sincos_layout)
    return ENCODINGS[pos_mode](**{k: v for k, v in offered.items() if k in reads})
