"""Whether a forward runs for K stacked members at once (under ``torch.func.vmap``).

A population (``lit_seq.population``) computes its members' forwards as one vmapped call.
vmap refuses the fused recurrences (``aten::rnn_tanh``, ``aten::lstm``: no batching rule),
so inside :func:`stacked_members` recurrent backbones run the same recurrence unrolled
(``unrolled.py``), as batched matrix products over the K members. (The CPU flash attention
has no batching rule either: vmap loops over the members there. Attention computed
explicitly as batched products measured slower still on signal / transformer, K = 9:
1.5-2.2 s against 1.0-1.5 s a step, so attention keeps its kernel.)
"""

from __future__ import annotations

import contextlib
import contextvars

_STACKED = contextvars.ContextVar("lit_seq_stacked_members", default=False)


@contextlib.contextmanager
def stacked_members():
    """While the block runs, forwards take their vmap-able path."""
    token = _STACKED.set(True)
    try:
        yield
    finally:
        _STACKED.reset(token)


def in_stacked_call() -> bool:
    """Whether the caller runs inside :func:`stacked_members`."""
    return _STACKED.get()
