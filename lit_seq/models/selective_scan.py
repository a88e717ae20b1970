"""Mamba's selective scan as one autograd Function, its backward a reverse scan written out.

What it computes, per batch row, position t, inner channel d and state n (h_{-1} = 0)::

    h_t[n, d] = exp(Δ_t[d] A[d, n]) h_{t-1}[n, d] + Δ_t[d] u_t[d] B_t[n]
    y_t[d] = Σ_n C_t[n] h_t[n, d]

and by hand, what autograd would derive, with g_t = dL/dh_t::

    g_t = C_t ⊗ dL/dy_t + exp(Δ_{t+1} A) g_{t+1}               (a reverse scan)
    dL/dC_t = Σ_d h_t dL/dy_t      dL/dB_t = Σ_d g_t Δ_t u_t    dL/d(Δ_t u_t) = Σ_n B_t g_t
    dL/d(Δ_t A) = g_t exp(Δ_t A) h_{t-1}  ->  dL/dΔ_t (Σ_n with A), dL/dA (Σ over b and t)

Why a Function and not autograd over a loop (the previous form: the (B, T, 2d, N) decay and
drive built with broadcast multiplies, ``scan.linear_scan``, an einsum with C): autograd
kept every intermediate and replayed each broadcast multiply's backward as two more
full-size multiplies and a reduction, and the loop's T-way stack / unbind and their
backward copied the state twice more. Here the forward makes the decay and the drive (the
drive scanned into h in place) and one contraction, and keeps decay and h; the backward
makes g (scanned in place) and, in g's memory, dL/d(Δ A); every gradient is a reduction
of these. Measured on ``MambaBackbone``'s training step (fwd + bwd + Adam, one thread; the
bench rows are in ``docs/performance.md``): 1.7-3.2x faster than autograd over the loop
(64 x 10 x 32: 17.8 -> 10.7 ms; 64 x 64 x 32: 140 -> 45 ms; load 4-5).

How, on a CPU (each measured, kept because faster):

- position-major (T, B, N, D) inside: a position's slice is contiguous for the loops over
  T, and every broadcast (of C, B, Δ u, A) runs along the long inner D axis (along a
  16-wide inner N axis it was a slow path);
- chunks of positions, each tensor at most ``CHUNK`` numbers: the full-size temporaries of
  a 64 x 64 x 16 x 64 state (16 MB each) came as fresh pages from the OS on every step
  (17,000 page faults a step, 40% of it in the kernel) and ran at memory speed; chunks
  are reused by the allocator and stay in cache (1,800 faults; the step 2.2x faster).
  The reverse scan carries exp(Δ A) g from one chunk to the one before it;
- exp(Δ A) as 2^(Δ A log2 e), the same number: ``exp2`` runs 2x faster than ``exp`` here;
- no zero gradients built for the saved decay and h (``set_materialize_grads(False)``).

Tried and not kept (issue 57; one thread, load 6-9, each equal in float64 or by design):

- a chunked parallel form (Mamba-2's SSD, flash-linear-attention's chunk kernels): with
  Mamba's decay per (d, n), a chunk's parallel form is an (L, L) matrix of decay products
  per (d, n) channel, applied by broadcast multiplies (a matrix product needs a decay
  shared by a head, Mamba-2's scalar A: another model): L times the loop's arithmetic.
  On this (B, T, 2d N) = 64 x 64 x 1024 state, fwd + bwd by autograd: the loop 36 ms,
  the matrix form in chunks of 4: 490 ms, chunks scanned side by side then their
  carries: 250 ms (``scan.py`` has the same comparison at linear_rnn's size);
- keeping only each chunk's last state and recomputing decay and h in the backward:
  forward 12-17 -> 9-14 ms, fwd + bwd the same within noise (36-65 ms both);
- ``CHUNK`` of 2^16-2^18 numbers: the training step within noise of 2^19.

Where the step's time is (64 x 64 x 32, one layer, fwd + bwd + Adam, CPU ms, min of 15
interleaved rounds, load 7.5): the step 78, the same step with this scan replaced by a
stand-in that reads its inputs 18, an LSTM of that width 6.2. The scan's ~25 passes over a
state 32x an LSTM's are its cost; only a fused kernel that keeps the state in registers
(``mamba_ssm``'s, on a GPU) avoids them.

``generate_vmap_rule`` lets ``torch.func.vmap`` (populations) run these same ops batched;
the in-place updates are on tensors that carry every batched input's dimension.
``torch.compile`` traces it (one graph, the loops unrolled) with the scans out of place
(``_scan``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

LOG2_E = 1 / math.log(2)
CHUNK = 2**19  # numbers in a chunk's (positions, B, N, D) tensor: 2 MB of float32


def _chunks(length: int, per_position: int) -> list[tuple[int, int]]:
    """[start, end) of consecutive positions, each chunk at most CHUNK numbers (>= 1 position)."""
    size = max(1, CHUNK // per_position)
    return [(s, min(s + size, length)) for s in range(0, length, size)]


def _scan(decay: Tensor, x: Tensor, carry: Tensor | None, reverse: bool) -> Tensor:
    """The scan h_t = x_t + decay_t h_{t-1} along dim 0 from h_{-1} = carry (None: 0);
    ``reverse``: h_t = x_t + decay_{t+1} h_{t+1}, the carry (decay h after the chunk) added
    to the last position.

    In place on x (a fresh tensor), eagerly; out of place when compiling, where an in-place
    update of a slice becomes a copy of the whole tensor a position.
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


class SelectiveScan(torch.autograd.Function):
    """y (B, T, D) of ``dt`` (B, T, D), ``A`` (D, N), ``B``, ``C`` (B, T, N), ``u`` (B, T, D).

    The forward's outputs are y and, for the backward only (non-differentiable), each
    chunk's decay and then each chunk's states h, all (positions, B, N, D).
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(dt: Tensor, A: Tensor, B: Tensor, C: Tensor, u: Tensor) -> tuple[Tensor, ...]:
        dt, B, C, u = (x.transpose(0, 1).contiguous() for x in (dt, B, C, u))  # (T, B, .)
        A_log2 = A.t().contiguous() * LOG2_E  # (N, D)
        dtu = dt * u
        decays, states, ys = [], [], []
        for s, e in _chunks(dt.shape[0], A.numel() * dt.shape[1]):
            decay = (dt[s:e, :, None] * A_log2).exp2_()  # ZOH: exp(Δ A)
            drive = B[s:e, :, :, None] * dtu[s:e, :, None]  # Euler
            h = _scan(decay, drive, states[-1][-1] if states else None, reverse=False)
            ys.append((C[s:e, :, None] @ h).squeeze(-2))
            decays.append(decay)
            states.append(h)
        return torch.cat(ys).transpose(0, 1), *decays, *states

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(*inputs, *output[1:])
        ctx.mark_non_differentiable(*output[1:])
        ctx.set_materialize_grads(False)  # no zero gradients built for decay and h

    @staticmethod
    def backward(ctx, grad_y: Tensor | None, *_) -> tuple[Tensor | None, ...]:
        if grad_y is None:  # the loss reads none of y
            return (None,) * 5
        dt, A, B, C, u, *saved = ctx.saved_tensors
        decays, states = saved[: len(saved) // 2], saved[len(saved) // 2 :]
        dt, B, C, u, grad_y = (x.transpose(0, 1).contiguous() for x in (dt, B, C, u, grad_y))
        A_t, dtu = A.t().contiguous(), dt * u
        grad_A, grads, carry = 0, [], None  # carry: exp(Δ A) g at the next chunk's start
        bounds = _chunks(dt.shape[0], A.numel() * dt.shape[1])
        for k in range(len(bounds) - 1, -1, -1):
            (s, e), decay, h = bounds[k], decays[k], states[k]
            g = C[s:e, :, :, None] * grad_y[s:e, :, None]  # the direct part of g
            g = _scan(decay, g, carry, reverse=True)
            grad_C = (h * grad_y[s:e, :, None]).sum(-1)  # (positions, B, N)
            grad_B = (g * dtu[s:e, :, None]).sum(-1)
            grad_dtu = (B[s:e, :, None] @ g).squeeze(-2)  # (positions, B, D)
            g_dA = g.mul_(decay)  # then times h_{t-1}: dL/d(Δ A), in g's memory
            carry = g_dA[0].clone()
            first = states[k - 1][-1:] if k > 0 else torch.zeros_like(h[:1])  # h_{-1} = 0
            g_dA.mul_(torch.cat([first, h[:-1]]))
            grad_A = grad_A + (g_dA * dt[s:e, :, None]).sum((0, 1))
            grad_dt = grad_dtu * u[s:e] + g_dA.mul_(A_t).sum(-2)
            grads.append((grad_dt, grad_B, grad_C, grad_dtu * dt[s:e]))
        grad_dt, grad_B, grad_C, grad_u = (
            torch.cat(chunks[::-1]).transpose(0, 1) for chunks in zip(*grads, strict=True)
        )
        return grad_dt, grad_A.t(), grad_B, grad_C, grad_u


def selective_scan(dt: Tensor, A: Tensor, B: Tensor, C: Tensor, u: Tensor) -> Tensor:
    """y (B, T, D) of the selective recurrence (module docstring) without the skip term.

    Args:
        dt: (B, T, D) positive steps Δ. A: (D, N) negative. B, C: (B, T, N). u: (B, T, D).
    """
    return SelectiveScan.apply(dt, A, B, C, u)[0]
