"""The recurrence of ``nn.RNN`` / ``nn.LSTM`` written out step by step, for ``torch.func.vmap``.

``vmap`` has no batching rule for the fused recurrent kernels (``aten::lstm.input``,
``aten::rnn_tanh.input``, ``aten::rnn_relu.input``), so K recurrent models cannot be run as one by vmapping their
modules. The same recurrence as plain matrix products and pointwise ops can be: under
``vmap`` over K stacked weight sets every product becomes one batched product over the K
models. :func:`unrolled` computes exactly what the module computes (same equations, same
gate order, zero initial state); inside :func:`unrolled_recurrences` every
``RecurrentBackbone`` uses it instead of its module's fused kernel.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .dropout import dropout


def check_unrollable(rnn: nn.RNNBase) -> None:
    """ValueError unless ``rnn`` is what :func:`unrolled` computes: a batch-first,
    forward-only ``nn.RNN`` (tanh, ReLU) or ``nn.LSTM`` without ``proj_size``."""
    if rnn.bidirectional or not rnn.batch_first or getattr(rnn, "proj_size", 0):
        raise ValueError("unrolled() supports batch-first, forward-only RNN/LSTM without proj_size")
    if rnn.mode not in ("RNN_TANH", "RNN_RELU", "LSTM"):
        raise ValueError(f"unrolled() supports RNNs (tanh, ReLU) and LSTMs, not mode {rnn.mode!r}")


def unrolled(rnn: nn.RNNBase, x: Tensor) -> Tensor:
    """``rnn(x)[0]`` for a batch-first, forward-only ``nn.RNN`` (tanh or ReLU) or ``nn.LSTM``.

    Args:
        rnn: the module whose weights (``weight_ih_l{k}`` ...) are used, looked up by name,
            so ``torch.func.functional_call`` can substitute stacked ones.
        x: (B, T, d) input.

    Returns:
        (B, T, hidden) outputs of the top layer, from a zero initial state.
    """
    check_unrollable(rnn)
    lstm = rnn.mode == "LSTM"
    out = x
    for layer in range(rnn.num_layers):
        w_ih, w_hh = getattr(rnn, f"weight_ih_l{layer}"), getattr(rnn, f"weight_hh_l{layer}")
        b_ih = getattr(rnn, f"bias_ih_l{layer}") if rnn.bias else None
        b_hh = getattr(rnn, f"bias_hh_l{layer}") if rnn.bias else None
        # the input projection of every step at once; the state's, step by step
        projected = F.linear(out, w_ih, b_ih)  # (B, T, gates * hidden)
        h = x.new_zeros(x.shape[0], rnn.hidden_size)
        c = x.new_zeros(x.shape[0], rnn.hidden_size) if lstm else None
        states = []
        # unbind, not projected[:, t]: the backward of T slices would build T full-size zero
        # tensors (one per slice); unbind's is one stack
        for step in projected.unbind(1):
            pre = step + F.linear(h, w_hh, b_hh)
            if lstm:
                i, f, g, o = pre.chunk(4, dim=-1)  # torch's gate order
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
            elif rnn.mode == "RNN_RELU":
                h = torch.relu(pre)
            else:
                h = torch.tanh(pre)
            states.append(h)
        out = torch.stack(states, dim=1)
        if rnn.dropout and rnn.training and layer < rnn.num_layers - 1:
            out = dropout(out, rnn.dropout, training=True)  # a dropout stream's masks if open
    return out
