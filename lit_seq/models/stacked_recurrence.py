"""K members' unrolled recurrence as one computation on their stacked weights, under vmap.

A population (``lit_seq.population``) runs each member's unrolled recurrence
(``unrolled.py``) under ``torch.func.vmap``. vmap's rule for ``F.linear`` with batched
weights takes several ops (a matmul, a scaling, an add), and every op of the T steps pays
vmap's dispatch: at echo's sizes (K = 27, d = 32, T = 10) that is a third of a training
step. :class:`MembersRecurrence`'s vmap rule instead runs the same recurrence once on the
physical (K, ...) tensors: each step one ``baddbmm`` over all members (``bmm`` without a
bias) and the same pointwise ops, recorded by autograd as they run. Every member's numbers
are its own products and sums in the same order, bit for bit those of the vmapped
``unrolled`` (tests/test_unrolled_members.py). Outside vmap it computes one member's.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .stacking import members_first, members_linear, recomputed_grads
from .unrolled import check_unrollable


def _layer_weights(rnn: nn.RNNBase) -> list[Tensor]:
    """w_ih, w_hh (and b_ih, b_hh with ``bias``) of every layer, looked up by name, so that
    ``functional_call`` substitutes the members' stacked ones."""
    names = (
        ("weight_ih", "weight_hh", "bias_ih", "bias_hh") if rnn.bias else ("weight_ih", "weight_hh")
    )
    return [getattr(rnn, f"{name}_l{layer}") for layer in range(rnn.num_layers) for name in names]


def _recurrence(mode: str, bias: bool, x: Tensor, weights: list[Tensor]) -> Tensor:
    """(K, B, T, d_in) -> (K, B, T, hidden): ``unrolled`` of K members at once, ``weights``
    stacked (K, ...) in :func:`_layer_weights`' order; zero initial state."""
    per_layer = 4 if bias else 2
    out = x
    for start in range(0, len(weights), per_layer):
        w_ih, w_hh, *biases = weights[start : start + per_layer]
        b_ih, b_hh = biases if bias else (None, None)
        K, B, T, _ = out.shape
        # the input projection of every step at once; the state's, step by step
        projected = members_linear(out.reshape(K, B * T, -1), w_ih, b_ih).view(K, B, T, -1)
        hidden = w_hh.shape[-1]
        h = out.new_zeros(K, B, hidden)
        c = out.new_zeros(K, B, hidden) if mode == "LSTM" else None
        states = []
        for step in projected.unbind(2):  # (K, B, gates * hidden)
            pre = step + members_linear(h, w_hh, b_hh)
            if mode == "LSTM":
                i, f, g, o = pre.chunk(4, dim=-1)  # torch's gate order
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
            elif mode == "RNN_RELU":
                h = torch.relu(pre)
            else:
                h = torch.tanh(pre)
            states.append(h)
        out = torch.stack(states, dim=2)  # (K, B, T, hidden)
    return out


class MembersRecurrence(torch.autograd.Function):
    """``unrolled(rnn, x)`` whose vmap rule computes all members in one pass (see the
    module's docstring). Arguments: ``mode`` and ``bias`` of the ``nn.RNNBase``, the input
    x (B, T, d_in), then :func:`_layer_weights`."""

    @staticmethod
    def forward(mode: str, bias: bool, x: Tensor, *weights: Tensor) -> Tensor:
        one = _recurrence(mode, bias, x.unsqueeze(0), [w.unsqueeze(0) for w in weights])
        return one.squeeze(0)

    @staticmethod
    def setup_context(ctx, inputs, output) -> None:
        ctx.mode, ctx.bias = inputs[:2]
        ctx.save_for_backward(*inputs[2:])

    @staticmethod
    def backward(ctx, grad: Tensor):
        def recurrence(x, *weights):
            return MembersRecurrence.forward(ctx.mode, ctx.bias, x, *weights)

        return (
            None,
            None,
            *recomputed_grads(recurrence, ctx.saved_tensors, ctx.needs_input_grad[2:], grad),
        )

    @staticmethod
    def vmap(info, in_dims, mode: str, bias: bool, x: Tensor, *weights: Tensor):
        members = info.batch_size
        x = members_first(x, in_dims[2], members)
        stacked = [members_first(w, d, members) for w, d in zip(weights, in_dims[3:], strict=True)]
        # on the unbatched tensors: autograd records these ops (and their backward) itself
        return _recurrence(mode, bias, x, stacked), 0


def members_unrolled(rnn: nn.RNNBase, x: Tensor) -> Tensor:
    """``unrolled(rnn, x)`` (batch-first, forward-only, no dropout between layers), as one
    computation over the members when called under a population's vmap."""
    check_unrollable(rnn)
    if rnn.dropout and rnn.training and rnn.num_layers > 1:
        raise ValueError("members_unrolled() runs no dropout between layers; use unrolled()")
    return MembersRecurrence.apply(rnn.mode, rnn.bias, x, *_layer_weights(rnn))
