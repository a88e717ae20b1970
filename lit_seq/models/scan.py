"""The first-order linear recurrence ``h_t = a_t * h_{t-1} + b_t`` over a whole sequence.

The scan under the ``linear_rnn`` backbone (element-wise, any trailing shape): every
input-dependent quantity is computed for all T positions at once by the caller, so only this
cheap multiply-add runs position by position. It is one autograd Function (``LinearScan``)
whose backward is the reverse scan written out, with g_t = dL/dh_t::

    g_t = dL/dh_t (direct) + a_{t+1} g_{t+1}      dL/db_t = g_t      dL/da_t = g_t h_{t-1}

both scans in place, position-major (``position_scan``, which mamba's selective scan runs too). Measured
against autograd over the loop (its T multiplies and adds, their backward, a T-way stack
and unbind), fwd + bwd of the scan alone, one thread, CPU ms, min of 20 interleaved rounds,
load 7: 64 x 64 x 32: 2.13 -> 1.34; 64 x 20 x 64: 0.85 -> 0.64; 64 x 10 x 32: 0.36 -> 0.30.
``generate_vmap_rule`` lets ``torch.func.vmap`` (populations) run the same ops batched;
``torch.compile`` traces it (``position_scan``'s out-of-place branch).

Why position by position, and not in chunks with a parallel form inside each (as
flash-linear-attention's chunk kernels and Mamba-2's SSD do), nor a log-depth scan: the
transition here is element-wise, so the parallel form of a chunk of L positions is an
(L, L) matrix of decay products per channel, applied by broadcast multiplies (no matrix
product to run it: that needs a decay shared by a head's channels, as Mamba-2's scalar one
is): L times the loop's arithmetic. Measured (fwd + bwd, one thread, CPU ms, load 6-7, all
equal to the loop in float64): 64 x 64 x 32: the loop 2.05; that matrix form in chunks of
4 / 8 / 16 / 32: 9.3 / 15 / 32 / 68; chunks scanned side by side (L steps) then their
carries (T / L steps, as fla's chunked HGRN does): 3.1-3.7 for L 4-32; on mamba's
64 x 64 x 1024 state: the loop 36, those two at L 4: 250 and 490. The Hillis-Steele
doubling scan was 1.7-10x slower too (32 x 64 x 128 x 16: 78 ms vs 775 ms): log2(T) full
passes where the loop does one. A CPU has no spare parallelism to buy back extra work; a
GPU, where T steps are T kernel launches, might differ (not measured here).

Worked example: a = [0.5, -1, 2], b = [1, 1, 1] -> h = [1, -1 + 1, 2 * 0 + 1] = [1, 0, 1].
"""

from __future__ import annotations

import torch
from torch import Tensor


def position_scan(decay: Tensor, x: Tensor, carry: Tensor | None, reverse: bool) -> Tensor:
    """The scan h_t = x_t + decay_t h_{t-1} along dim 0 from h_{-1} = carry (None: 0);
    ``reverse``: h_t = x_t + decay_{t+1} h_{t+1}, the carry (decay h after the chunk) added
    to the last position.

    In place on x (a fresh tensor), eagerly; out of place when compiling, where an in-place
    update of a slice becomes a copy of the whole tensor a position. ``add_`` of a product,
    not ``addcmul_``: vmap (populations) has no batching rule for addcmul_ and falls back to
    a loop over the members.
    """
    T = x.shape[0]
    if torch.compiler.is_compiling():
        out, prev = [], carry
        for t in range(T - 1, -1, -1) if reverse else range(T):
            if reverse:  # prev: decay_{t+1} x_{t+1}, or the carry
                prev = x[t] if prev is None else x[t] + prev
                out.append(prev)
                prev = decay[t] * prev
            else:  # prev: x_{t-1}, or the carry
                prev = x[t] if prev is None else x[t] + decay[t] * prev
                out.append(prev)
        return torch.stack(out[::-1] if reverse else out)
    if reverse:
        if carry is not None:
            x[-1].add_(carry)
        for t in range(T - 2, -1, -1):
            x[t].add_(decay[t + 1] * x[t + 1])
    else:
        if carry is not None:
            x[0].add_(decay[0] * carry)
        for t in range(1, T):
            x[t].add_(decay[t] * x[t - 1])
    return x


class LinearScan(torch.autograd.Function):
    """h (B, T, ...) of ``a`` and ``b`` (B, T, ..., the same shape); the forward's other
    outputs are a and h position-major (T, B, ...), for the backward only."""

    generate_vmap_rule = True

    @staticmethod
    def forward(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        a_t = a.transpose(0, 1).contiguous()  # (T, B, ...)
        # a copy always (contiguous() could return b itself): the scan runs in place on it
        h = position_scan(
            a_t, b.transpose(0, 1).clone(memory_format=torch.contiguous_format), None, False
        )
        return h.transpose(0, 1), a_t, h

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(*output[1:])
        ctx.mark_non_differentiable(*output[1:])
        ctx.set_materialize_grads(False)  # no zero gradients built for a_t and h

    @staticmethod
    def backward(ctx, grad_h: Tensor | None, *_) -> tuple[Tensor | None, Tensor | None]:
        if grad_h is None:  # the loss reads none of h
            return None, None
        a_t, h = ctx.saved_tensors
        g = grad_h.transpose(0, 1).clone(memory_format=torch.contiguous_format)  # (T, B, ...)
        g = position_scan(a_t, g, None, reverse=True)
        grad_a = torch.cat([torch.zeros_like(g[:1]), g[1:] * h[:-1]])  # h_{-1} = 0
        return grad_a.transpose(0, 1), g.transpose(0, 1)


def linear_scan(a: Tensor, b: Tensor) -> Tensor:
    """h (B, T, ...) with ``h_t = a_t * h_{t-1} + b_t`` from ``h_{-1} = 0``, along dim 1.

    Args:
        a: (B, T, ...) the transition of each step (broadcast against b).
        b: (B, T, ...) the input of each step.
    """
    return LinearScan.apply(a.expand_as(b), b)[0]
