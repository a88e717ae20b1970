"""An ``nn.RNN``'s forward pass for scoring on the CPU: every step written in place.

On the CPU, ATen's ``nn.RNN`` is itself a loop over time of one ``addmm`` a step, but each
step allocates a fresh state and the outputs are concatenated at the end; at the range
evaluation's sizes (a batch of 64 to 512, d = 256, T up to 320) that allocation, its page
faults and the final copy take a third of the forward pass (measured: 0.34 vs 0.22 CPU-s
for 512 sequences of 320 steps, relu, d = 256, 1 thread). Scoring needs no graph, so
:func:`rnn_inference` projects every step's input at once into the output buffer and then
turns step t's rows into h_t in place, ``h_t = act(row_t + h_{t-1} W_hh^T)``: the same
products and sums, equal to ``nn.RNN`` to float tolerance (tests/test_inference_recurrence.py).

It is used only under ``torch.inference_mode`` (the range evaluation, ``lit_seq.evaluate``,
the test loop; not the validation inside a fit, which Lightning runs under ``no_grad``) on
the CPU, for a unidirectional ``nn.RNN`` that drops nothing between its layers; cuDNN's
fused kernel keeps the GPU, ``nn.LSTM`` keeps ATen's.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def uses_inference_recurrence(rnn: nn.RNNBase, x: Tensor) -> bool:
    """Whether :func:`rnn_inference` computes ``rnn(x)``'s output here: inference mode, the
    CPU, an ``nn.RNN`` read forward only, with no dropout between layers being drawn, and no
    autocast (its in-place steps would not be cast: bf16-mixed keeps ``nn.RNN``)."""
    drops = rnn.training and rnn.dropout > 0 and rnn.num_layers > 1
    return (
        torch.is_inference_mode_enabled()
        and x.device.type == "cpu"
        and not torch.is_autocast_enabled("cpu")
        and x.dtype == rnn.weight_hh_l0.dtype
        and type(rnn) is nn.RNN
        and not rnn.bidirectional
        and rnn.batch_first
        and not drops
    )


def rnn_inference(rnn: nn.RNN, x: Tensor) -> Tensor:
    """(B, T, input_size) -> (B, T, hidden): ``rnn(x)[0]`` from a zero state, computed in
    place (see the module docstring); only under inference mode.

    The buffer stays batch-first (each step's rows 256 floats apart by T d: the matmul reads
    and writes them at the same rate), so what reads it after (a readout on a slice) needs
    no copy of its own.
    """
    act = torch.relu_ if rnn.nonlinearity == "relu" else torch.tanh_
    B, T, _ = x.shape
    out = x
    for layer in range(rnn.num_layers):
        w_ih = getattr(rnn, f"weight_ih_l{layer}")  # (d, d_in)
        # transposed copies: a matmul reads a contiguous (K, N) weight faster (measured: the
        # (B T, 4) x (4, 256) projection 2.3 ms, not 6, its transposed view's)
        w_hh_t = getattr(rnn, f"weight_hh_l{layer}").t().contiguous()  # (d, d)
        flat = out.reshape(B * T, -1)  # (B T, d_in)
        if rnn.bias:
            bias = getattr(rnn, f"bias_ih_l{layer}") + getattr(rnn, f"bias_hh_l{layer}")
        if rnn.bias and flat.shape[1] < w_ih.shape[0]:
            # a narrow input (one-hot symbols): the biases as one more input column, so the
            # projection writes the buffer once instead of copying the bias in first
            flat = torch.cat([flat, flat.new_ones(B * T, 1)], dim=1)  # (B T, d_in + 1)
            states = torch.mm(flat, torch.cat([w_ih, bias[:, None]], dim=1).t().contiguous())
        elif rnn.bias:
            states = torch.addmm(bias, flat, w_ih.t().contiguous())
        else:
            states = torch.mm(flat, w_ih.t().contiguous())
        out = states.view(B, T, -1)  # step t: x_t W_ih^T + b, becomes h_t below
        steps = out.unbind(1)  # T views (B, d), made once rather than two a step
        h = act(steps[0])  # h_0 = 0: the first step has no state term
        for step in steps[1:]:
            h = act(step.addmm_(h, w_hh_t))
    return out  # (B, T, d)
