"""The first-order linear recurrence ``h_t = a_t * h_{t-1} + b_t`` over a whole sequence.

The scan under the ``linear_rnn`` backbone (element-wise, any trailing shape): every
input-dependent quantity is computed for all T positions at once by the caller, so only this
cheap multiply-add runs position by position. It is written with plain tensor ops, so
``torch.func.vmap`` (populations) and ``torch.compile`` take it as it is; autograd derives its
backward. (``mamba`` has its own, ``selective_scan``: a Function with a hand-written backward,
which pays off there on a (B, T, 2d, N) state. The same treatment here, an autograd Function
with a reverse-scan backward, was measured no faster for linear_rnn's (B, T, d) state:
train steps within noise, 4-17 ms at 64 x 10-64 x 16-64, one thread, load 6; measured again
for issue 57 with mamba's in-place ``_scan``: the scan alone 1.4x faster at 64 x 64 x 32
(fwd + bwd 2.09 -> 1.52 ms), the backbone's training step not (64 x 64 x 32: 9.4 vs 9.5 ms;
64 x 10 x 32: 2.43 vs 2.51, min of 25 interleaved rounds, load 8), so not kept.)

Why a loop over T and not a parallel (associative, log-depth) scan: on this project's CPU the
Hillis-Steele doubling scan was measured 1.7-10x slower, forward and backward, than this loop
(32 x 64 x 128 x 16: 78 ms vs 775 ms; 32 x 256 x 64: 15 ms vs 51 ms; one thread): it does
log2(T) full passes over the (B, T, ...) tensors where the loop does one, and a CPU has no
spare parallelism to buy back the extra work.

Why not in chunks with a parallel form inside each (as flash-linear-attention's chunk
kernels and Mamba-2's SSD do; issue 57): the transition is element-wise, so a chunk of L
positions' parallel form is an (L, L) matrix of decay products per channel (signs and
log-magnitudes, stable), applied by broadcast multiplies: no matrix product runs it (that
needs a decay shared by a head's channels, as Mamba-2's scalar one is), and it is L times
the loop's arithmetic. Measured (fwd + bwd, one thread, CPU ms, load 6-7, both equal to
the loop in float64 to 1e-14): 64 x 64 x 32: the loop 2.05; that matrix form in chunks of
4 / 8 / 16 / 32: 9.3 / 15 / 32 / 68; the chunks scanned side by side (L steps) and then
their carries (T / L steps, as fla's chunked HGRN does): 3.1-3.7 for L 4-32; 64 x 10 x 32:
the loop 0.35, the two 2.2 and 1.1 at L 4. A GPU, where each of T steps is a kernel
launch, may rank them the other way (not measured: no GPU here).

Worked example: a = [0.5, -1, 2], b = [1, 1, 1] -> h = [1, -1 + 1, 2 * 0 + 1] = [1, 0, 1].
"""

from __future__ import annotations

import torch
from torch import Tensor


def linear_scan(a: Tensor, b: Tensor) -> Tensor:
    """h (B, T, ...) with ``h_t = a_t * h_{t-1} + b_t`` from ``h_{-1} = 0``, along dim 1.

    Args:
        a: (B, T, ...) the transition of each step (broadcast against b).
        b: (B, T, ...) the input of each step.
    """
    h = torch.zeros_like(b[:, 0])
    states = []
    # unbind, not a[:, t]: the backward of T slices builds T full-size zero tensors
    for a_t, b_t in zip(a.expand_as(b).unbind(1), b.unbind(1), strict=True):
        h = a_t * h + b_t
        states.append(h)
    return torch.stack(states, dim=1)
