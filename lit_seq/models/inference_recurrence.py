"""An ``nn.RNN``'s forward pass for scoring on the CPU: every step written in place.

On the CPU, ATen's ``nn.RNN`` is itself a loop over time of one ``addmm`` a step, but each
step allocates a fresh state and the outputs are concatenated at the end; at the range
evaluation's sizes (a batch of 64 to 512, d = 256, T up to 320) that allocation, its page
faults and the final copy take a third of the forward pass (measured: 0.34 vs 0.22 CPU-s
for 512 sequences of 320 steps, relu, d = 256, 1 thread). Scoring needs no graph, so
:func:`rnn_inference` projects every step's input at once into the output buffer and then
turns row t into h_t in place, ``h_t = act(row_t + h_{t-1} W_hh^T)``: the same products and
sums, equal to ``nn.RNN`` to float tolerance (``tests/test_inference_recurrence.py``).

It is used only under ``torch.inference_mode`` (the range evaluation, the test and
validation loops) on the CPU for a unidirectional ``nn.RNN`` that drops nothing between
its layers; cuDNN's fused kernel keeps the GPU, ``nn.LSTM`` keeps ATen's.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def uses_inference_recurrence(rnn: nn.RNNBase, x: Tensor) -> bool:
    """Whether :func:`rnn_inference` computes ``rnn(x)``'s output here: inference mode, the
    CPU, an ``nn.RNN`` read forward only, with no dropout between layers being drawn."""
    drops = rnn.training and rnn.dropout > 0 and rnn.num_layers > 1
    return (
        torch.is_inference_mode_enabled()
        and x.device.type == "cpu"
        and type(rnn) is nn.RNN
        and not rnn.bidirectional
        and rnn.batch_first
        and not drops
    )


def rnn_inference(rnn: nn.RNN, x: Tensor) -> Tensor:
    """(B, T, input_size) -> (B, T, hidden): ``rnn(x)[0]`` from a zero state, computed in
    place in a time-major buffer (see the module docstring); only under inference mode."""
    act = torch.relu_ if rnn.nonlinearity == "relu" else torch.tanh_
    B, T, _ = x.shape
    out = x.transpose(0, 1)  # (T, B, d_in): time-major, so that each step's rows are contiguous
    for layer in range(rnn.num_layers):
        w_ih = getattr(rnn, f"weight_ih_l{layer}")
        w_hh_t = getattr(rnn, f"weight_hh_l{layer}").t()  # (d, d)
        flat = out.reshape(T * B, -1)
        if rnn.bias:  # both biases folded into the input projection, once
            bias = getattr(rnn, f"bias_ih_l{layer}") + getattr(rnn, f"bias_hh_l{layer}")
            states = torch.addmm(bias, flat, w_ih.t())
        else:
            states = torch.mm(flat, w_ih.t())
        states = states.view(T, B, -1)  # row t: x_t W_ih^T + b, becomes h_t below
        act(states[0])  # h_0 = 0: the first step has no state term
        for t in range(1, T):
            act(states[t].addmm_(states[t - 1], w_hh_t))
        out = states
    return out.transpose(0, 1)  # (B, T, d), a view
