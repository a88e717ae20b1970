"""Whether a forward runs for K stacked members at once (under ``torch.func.vmap``).

A population (``lit_seq.population``) computes its members' forwards as one vmapped call.
vmap refuses the fused recurrences (``aten::rnn_tanh``, ``aten::lstm``: no batching rule),
so inside :func:`stacked_members` recurrent backbones run the same recurrence unrolled
(``unrolled.py``), as batched matrix products over the K members, one pass for all
(``stacked_recurrence.py``). The CPU flash attention has no batching rule either (vmap would
loop over the members): inside a stacked call attention runs
:class:`MembersAsBatchAttention`, one kernel call over the members' batches. A head's
linear layers (:class:`MembersLinear`) run one batched product, cheaper than vmap's rule.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# A plain module flag, not a ContextVar: torch.compile reads (and guards on) a global, and
# cannot trace ContextVar.get; no two fits train in threads of one process.
_STACKED = False


@contextlib.contextmanager
def stacked_members():
    """While the block runs, forwards take their vmap-able path."""
    global _STACKED
    before, _STACKED = _STACKED, True
    try:
        yield
    finally:
        _STACKED = before


def in_stacked_call() -> bool:
    """Whether the caller runs inside :func:`stacked_members`."""
    return _STACKED


def members_first(t: Tensor, dim: int | None, members: int) -> Tensor:
    """A vmap rule's argument with its members on dim 0: moved there, or (one tensor for
    all, ``dim`` None) expanded to ``members``."""
    return t.movedim(dim, 0) if dim is not None else t.expand(members, *t.shape)


def members_linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """(K, N, d_in) @ (K, d_out, d_in)^T (+ (K, d_out)) -> (K, N, d_out): every member's
    ``F.linear`` in one ``baddbmm`` (``bmm`` without a bias)."""
    if bias is None:
        return torch.bmm(x, weight.transpose(1, 2))
    return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))


def recomputed_grads(fn, saved: tuple, needs: tuple, grad: Tensor) -> tuple:
    """The backward of these Functions outside vmap: ``fn(*saved)`` recomputed on detached
    inputs and differentiated; one gradient per input, None where ``needs`` says none."""
    with torch.enable_grad():
        inputs = [
            None if t is None else t.detach().requires_grad_(need)
            for t, need in zip(saved, needs, strict=True)
        ]
        wanted = [t for t, need in zip(inputs, needs, strict=True) if need]
        found = iter(torch.autograd.grad(fn(*inputs), wanted, grad))
    return tuple(next(found) if need else None for need in needs)


class MembersAsBatchAttention(torch.autograd.Function):
    """``F.scaled_dot_product_attention`` whose vmap rule folds the members into the batch.

    vmap has no batching rule for the CPU flash kernel and falls back to a loop over the K
    members (K kernel calls a layer, forward and backward). This rule reshapes the members'
    (K, B, H, T, dh) inputs to (K * B, H, T, dh) and makes one kernel call, the same kernel a
    solo run calls on its (B, H, T, dh): rows never mix, so each member's attention is its
    solo run's, and autograd records that call's own backward. No dropout: a population has
    none. Outside vmap it is plain attention (its backward recomputes the forward).
    """

    @staticmethod
    def forward(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, is_causal: bool) -> Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        q, k, v, mask, is_causal = inputs
        ctx.save_for_backward(q, k, v, mask)
        ctx.is_causal = is_causal

    @staticmethod
    def backward(ctx, grad: Tensor):
        def attention(q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=ctx.is_causal)

        return *recomputed_grads(attention, ctx.saved_tensors, ctx.needs_input_grad[:4], grad), None

    @staticmethod
    def vmap(info, in_dims, q, k, v, mask, is_causal):
        members = info.batch_size
        q, k, v = (
            members_first(t, d, members) for t, d in zip((q, k, v), in_dims[:3], strict=True)
        )
        batch = q.shape[1]
        folded = [t.reshape(members * batch, *t.shape[2:]) for t in (q, k, v)]
        # a mask with a batch dimension, the members' own or one for all, goes (K * B, ..);
        # one without ((T, S), (1, H, T, S)) broadcasts over the folded batch as it is
        if mask is not None and (in_dims[3] is not None or (mask.dim() == 4 and len(mask) > 1)):
            mask = members_first(mask, in_dims[3], members)  # (K, [B|1, ..] T, S)
            mask = mask.reshape(members, *[1] * (5 - mask.dim()), *mask.shape[1:])
            mask = mask.expand(members, batch, *mask.shape[2:])
            mask = mask.reshape(members * batch, *mask.shape[2:])
        # on the unbatched tensors: autograd records the kernel itself (and its backward)
        y = F.scaled_dot_product_attention(*folded, attn_mask=mask, is_causal=is_causal)
        return y.reshape(members, batch, *y.shape[1:]), 0


class MembersAsBatchLinear(torch.autograd.Function):
    """``F.linear`` whose vmap rule is one batched product over the members' weights.

    vmap's rule for ``F.linear`` with batched weights runs several ops (a batched matmul,
    a scaling, an add); this one runs one ``baddbmm`` on the members' (K, N, d_in) inputs
    (``bmm`` without a bias): each member's own products and sums, the numbers vmap's rule
    gives, at half its cost for a head's small layers. Outside vmap it is ``F.linear``.
    """

    @staticmethod
    def forward(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        return F.linear(x, weight, bias)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad: Tensor):
        return recomputed_grads(F.linear, ctx.saved_tensors, ctx.needs_input_grad, grad)

    @staticmethod
    def vmap(info, in_dims, x: Tensor, weight: Tensor, bias: Tensor | None):
        members = info.batch_size
        x, weight = (
            members_first(x, in_dims[0], members),
            members_first(weight, in_dims[1], members),
        )
        bias = None if bias is None else members_first(bias, in_dims[2], members)
        y = members_linear(x.reshape(members, -1, x.shape[-1]), weight, bias)  # (K, N, d_out)
        return y.view(*x.shape[:-1], y.shape[-1]), 0


class MembersLinear(nn.Linear):
    """``nn.Linear`` (same parameters, same state dict) whose members compute in one batched
    product inside a population's stacked call (:class:`MembersAsBatchLinear`)."""

    def forward(self, x: Tensor) -> Tensor:
        if in_stacked_call():
            return MembersAsBatchLinear.apply(x, self.weight, self.bias)
        return super().forward(x)
