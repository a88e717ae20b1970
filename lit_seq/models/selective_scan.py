"""Mamba's selective scan as one autograd Function, its backward a reverse scan written out.

What it computes, per batch row, position t, inner channel d and state n (h_{-1} = 0)::

    h_t[n, d] = exp(Δ_t[d] A[d, n]) h_{t-1}[n, d] + Δ_t[d] u_t[d] B_t[n]
    y_t[d] = Σ_n C_t[n] h_t[n, d]

and by hand, what autograd would derive, with g_t = dL/dh_t::

    g_t = C_t ⊗ dL/dy_t + exp(Δ_{t+1} A) g_{t+1}               (a reverse scan)
    dL/dC_t = Σ_d h_t dL/dy_t      dL/dB_t = Σ_d g_t Δ_t u_t    dL/d(Δ_t u_t) = Σ_n B_t g_t
    dL/d(Δ_t A) = g_t exp(Δ_t A) h_{t-1}  ->  dL/dΔ_t (Σ_n with A), dL/dA (Σ over b and t)

Why a Function and not autograd over the loop (the previous form: the (B, T, 2d, N)
decay and drive built with broadcast multiplies, ``scan.linear_scan``, an einsum with C):
autograd saved every intermediate and replayed each broadcast multiply's backward as two
more full-size multiplies and a reduction, and the loop's T-way stack / unbind and their
backward copied the state twice more. Here the forward makes three full-size tensors
(decay, drive scanned into h in place, one contraction), saves decay and h, and the
backward makes three more (g, scanned in place, and dL/d(Δ A)), every other gradient a
reduction of these. Measured per training step of ``MambaBackbone`` (fwd + bwd + Adam, one
thread; see ``docs/performance.md`` for the bench rows): 1.5-2x faster than autograd
over the loop.

Layout: position-major (T, B, N, D) inside, so a position's slice is contiguous for the
loops over T and every broadcast (of C, B, Δ u, A) runs along the long inner D axis
(broadcasting along a 16-wide inner N axis was a slow path). ``generate_vmap_rule`` lets
``torch.func.vmap`` (populations) run these same ops batched; the in-place updates are on
tensors that carry every batched input's dimension. ``torch.compile`` traces it as it is.
"""

from __future__ import annotations

import torch
from torch import Tensor


class SelectiveScan(torch.autograd.Function):
    """y (B, T, D) of ``dt`` (B, T, D), ``A`` (D, N), ``B``, ``C`` (B, T, N), ``u`` (B, T, D).

    The forward's outputs are y and, for the backward only (non-differentiable), the decay
    and the states h, both (T, B, N, D).
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(dt: Tensor, A: Tensor, B: Tensor, C: Tensor, u: Tensor) -> tuple[Tensor, ...]:
        dt, B, C, u = (x.transpose(0, 1).contiguous() for x in (dt, B, C, u))  # (T, B, .)
        decay = (dt[:, :, None] * A.t().contiguous()).exp_()  # (T, B, N, D): ZOH
        h = B[..., None] * (dt * u)[:, :, None]  # the drive (Euler), scanned into h
        for t in range(1, h.shape[0]):
            h[t] += decay[t] * h[t - 1]
        y = (C[:, :, None] @ h).squeeze(-2)  # (T, B, D)
        return y.transpose(0, 1), decay, h

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        _, decay, h = output
        ctx.save_for_backward(*inputs, decay, h)
        ctx.mark_non_differentiable(decay, h)
        ctx.set_materialize_grads(False)  # no full-size zero gradients for decay and h

    @staticmethod
    def backward(ctx, grad_y: Tensor | None, *_) -> tuple[Tensor | None, ...]:
        if grad_y is None:  # the loss reads none of y
            return (None,) * 5
        dt, A, B, C, u, decay, h = ctx.saved_tensors
        dt, B, C, u, grad_y = (x.transpose(0, 1).contiguous() for x in (dt, B, C, u, grad_y))
        g = C[..., None] * grad_y[:, :, None]  # (T, B, N, D): the direct part of g
        for t in range(g.shape[0] - 2, -1, -1):
            g[t] += decay[t + 1] * g[t + 1]
        grad_C = (h * grad_y[:, :, None]).sum(-1)  # (T, B, N)
        grad_B = (g * (dt * u)[:, :, None]).sum(-1)
        grad_dtu = (B[:, :, None] @ g).squeeze(-2)  # (T, B, D)
        g_dA = (g[1:] * decay[1:]).mul_(h[:-1])  # zero at t = 0, where h_{-1} = 0
        grad_A = (g_dA * dt[1:, :, None]).sum((0, 1)).t()
        grad_dt = grad_dtu * u
        grad_dt[1:] += g_dA.mul_(A.t()).sum(-2)
        grad_u = grad_dtu * dt
        grad_dt, grad_B, grad_C, grad_u = (
            x.transpose(0, 1) for x in (grad_dt, grad_B, grad_C, grad_u)
        )
        return grad_dt, grad_A, grad_B, grad_C, grad_u


def selective_scan(dt: Tensor, A: Tensor, B: Tensor, C: Tensor, u: Tensor) -> Tensor:
    """y (B, T, D) of the selective recurrence (module docstring) without the skip term.

    Args:
        dt: (B, T, D) positive steps Δ. A: (D, N) negative. B, C: (B, T, N). u: (B, T, D).
    """
    return SelectiveScan.apply(dt, A, B, C, u)[0]
