"""Counter-based dropout: each mask a function of (seed, step, site, element), not a draw.

``nn.Dropout`` draws its masks from torch's one global random stream, so K members of a
population run as one vmapped call cannot each have their own (vmap's ``randomness`` modes
give every member the same mask, ``"same"``, or masks that depend on where the member sits
in the population and on how many members there are, ``"different"``: neither is a
function of the member's seed). Here a mask is computed, not drawn:

    keep[i] = mix32(i * a + b) >= round(p * 2**16) * 2**16 - 2**31   (signed int32 words)

with ``mix32`` a 32-bit integer hash (Wellons' "lowbias32", a bijection of 32-bit words
whose outputs pass as independent uniform draws), (a, b) a hash of (seed, step, site), a odd,
and ``site`` the number of dropout calls before this one in the forward. p is rounded to a
multiple of 2**-16, so the comparison reads a word's high 16 bits only, which lowbias32's
last step (``x ^= x >> 16``) never changes: the masks skip it. Plain integer tensor arithmetic: it runs on any device,
vmaps (a population's seeds and steps are one batched tensor, so each member computes its
own masks in the same call), and depends on nothing but its inputs, so a run that resumes
at step s draws step s's masks again, and a member gives the same masks in any population.

While :func:`dropout_stream` is open (a system's training step: solo and population alike),
every :class:`Dropout` and the attention weights' dropout use these masks; outside it
(a model used on its own) dropout is torch's. Worked example: ``mix32(1) == 0x688990C0``;
with p = 0.5 the threshold is 0: an element whose word is >= 0 as a signed int32 (below
0x80000000 unsigned) is kept, and scaled by 2.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_M1, _M2 = 0x7FEB352D, 0x846CA68B - (1 << 32)  # lowbias32's multipliers, as signed int32
_SITES = 32  # sites whose (a, b) are made at once


def mix32(x: Tensor) -> Tensor:
    """Wellons' lowbias32 hash of int32 words (shifts made logical by masking): same shape.

    int32 products wrap modulo 2**32 on every torch backend, which is the arithmetic the
    hash is defined in; the result is read as a signed int32, uniform over all 2**32 values.
    """
    return _mix32_(x.clone())


def _mix32_(x: Tensor, rounds: int = 3) -> Tensor:
    """``mix32`` in place on ``x`` (its first ``rounds`` xorshifts), one scratch tensor: a
    mask's words are its largest tensors, and a new tensor per operation costs twice the
    arithmetic (measured on the CPU)."""
    scratch = torch.empty_like(x)
    for shift, multiplier in ((16, _M1), (15, _M2), (16, None))[:rounds]:
        scratch.copy_(x).bitwise_right_shift_(shift).bitwise_and_((1 << (32 - shift)) - 1)
        x.bitwise_xor_(scratch)  # x ^= x >>> shift (logical: the sign bits masked off)
        if multiplier is not None:
            x.mul_(multiplier)
    return x


@functools.lru_cache(maxsize=64)
def _counter(n: int, device: torch.device) -> Tensor:
    """0 .. n-1 as int32 on ``device`` (n: a mask's size; a run meets few of them)."""
    return torch.arange(n, dtype=torch.int32, device=device)


def _int32(value: Tensor | int, device: torch.device | None = None) -> Tensor:
    """A seed or step (an int below 2**64, or an int64 tensor) folded into an int32 tensor:
    its two 32-bit halves, each shifted into int32's range, hashed together."""
    if isinstance(value, Tensor):
        value = value.long()
    halves = [value & 0xFFFFFFFF, (value >> 32) & 0xFFFFFFFF]  # each in [0, 2**32)
    if isinstance(value, Tensor):
        low, high = ((h - 2**31).to(torch.int32) for h in halves)
    else:
        low, high = (torch.tensor(h - 2**31, dtype=torch.int32, device=device) for h in halves)
    return mix32(low ^ mix32(high + 0x632BE5AB))


@dataclass
class DropoutStream:
    """The masks of one forward: its key, from (seed, step), and the sites used so far.

    Attributes:
        make_key: makes the key, () int32 (one per member under vmap): ``mix32`` of the
            seed and the step; called at the first mask, so that a forward without dropout
            (every echo / rnn step, solo or K members) runs none of its ~40 small ops.
        sites: dropout calls so far in this forward; the next call's site.
        tables: each site's (a, b), made for ``_SITES`` sites at a time (a few ops for all,
            not a few per mask: at Delétang's sizes these small ops cost 3% of a step).
    """

    make_key: Callable[[], Tensor]
    sites: int = 0
    tables: list[tuple[Tensor, Tensor]] = field(default_factory=list)
    _key: Tensor | None = None

    @property
    def key(self) -> Tensor:
        if self._key is None:
            self._key = self.make_key()
        return self._key

    def _site_words(self, site: int, device: torch.device) -> tuple[Tensor, Tensor]:
        """(a, b) of ``site``: an odd multiplier a, so that i -> i * a + b is one to one."""
        # // and %, not divmod: in a process that had compiled other graphs first (the whole
        # of tests/test_compile.py), Dynamo failed to trace divmod here; // and % trace
        chunk, row = site // _SITES, site % _SITES
        while len(self.tables) <= chunk:
            start = len(self.tables) * _SITES
            sites = torch.arange(start, start + _SITES, dtype=torch.int32, device=device)
            a = mix32(self.key.to(device) + sites * 0x2545F491) | 1  # int32 products wrap
            self.tables.append((a, mix32(a ^ 0x5BD1E995)))
        a, b = self.tables[chunk]
        return a[row], b[row]

    def keep(self, shape: torch.Size, p: float, device: torch.device) -> Tensor:
        """The next site's mask: ``shape`` bool on ``device``, each element True with
        probability 1 - p (p rounded to a multiple of 2**-16)."""
        a, b = self._site_words(self.sites, device)
        self.sites += 1
        n = torch.Size(shape).numel()
        # compiled: the arange is part of the graph (Dynamo would trace through the cache)
        count = _counter.__wrapped__ if torch.compiler.is_compiling() else _counter
        words = count(n, device) * a
        words += b
        # lowbias32's last xorshift only changes a word's low 16 bits, which a threshold
        # whose low 16 bits are 0 never reads: it is left out (a quarter of the work)
        words = _mix32_(words, rounds=2)  # (n,), uniform signed int32 in their high 16 bits
        threshold = round(p * 2**16) * 2**16 - 2**31  # P(word >= threshold) = 1 - p
        return (words >= threshold).view(shape)


# A plain module variable, not a ContextVar: torch.compile reads (and guards on) a global and
# cannot trace ContextVar.get (as models/stacking.py's flag); no two fits train in threads of
# one process.
_STREAM: DropoutStream | None = None


@contextlib.contextmanager
def dropout_stream(seed: Tensor | int, step: Tensor | int, device: torch.device | None = None):
    """While the block runs, dropout masks are those of (``seed``, ``step``).

    ``seed`` and ``step`` are integers or integer tensors: () for one run, or the
    vmapped members' own (each member's seed and optimizer step) inside a population.
    ``device``: where the key of integer ones is made (the model's: no copy per mask).
    """
    device = seed.device if isinstance(seed, Tensor) else device
    global _STREAM

    def make_key() -> Tensor:
        return mix32(_int32(seed, device) ^ mix32(_int32(step, device) + 0x1B873593))

    before, _STREAM = _STREAM, DropoutStream(make_key)
    try:
        yield
    finally:
        _STREAM = before


def in_dropout_stream() -> bool:
    """Whether dropout masks come from a :func:`dropout_stream` now."""
    return _STREAM is not None


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """``F.dropout(x, p, training)``, its mask the stream's while one is open."""
    if not training or p == 0.0:  # no mask at all: nothing read (a compiled step's too)
        return F.dropout(x, p, training)
    stream = _STREAM
    if stream is None:
        return F.dropout(x, p, training)
    if p == 1.0:  # every element dropped (nn.Dropout's p=1): no mask to draw
        return x * 0.0
    scaled = stream.keep(x.shape, p, x.device).to(x.dtype).mul_(1.0 / (1.0 - p))
    return x * scaled  # as F.dropout: x times the scaled mask


class Dropout(nn.Dropout):
    """``nn.Dropout`` whose masks are the open :func:`dropout_stream`'s (torch's without one)."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)
