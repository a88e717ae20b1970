"""Recurrent backbones: ``nn.RNN`` (tanh or ReLU) or ``nn.LSTM``, one class, the cell a flag.

``RNNBackbone`` and ``LSTMBackbone`` are it with the cell fixed: each ``__init__`` names only
the options its cell reads (``nonlinearity``; ``forget_bias``, ``single_bias``), which is
how the builders and the option checks know what an arch reads (``models.options``).

The torch modules (not a Python loop over time) are used so that cuDNN's fused
kernels run on GPU. Scoring an ``nn.RNN`` on the CPU under ``torch.inference_mode`` writes
each step in place instead (``inference_recurrence.py``: ATen's CPU loop allocates and
concatenates every step's state, a third of the pass). Inside ``stacking.stacked_members()`` the same recurrence runs as a loop of
matrix products instead, which ``torch.func.vmap`` can batch over K models (packed runs).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from lit_seq.models.inference_recurrence import rnn_inference, uses_inference_recurrence
from lit_seq.models.stacked_recurrence import members_unrolled
from lit_seq.models.stacking import in_stacked_call
from lit_seq.util.checks import check_choice

CELLS = ("rnn", "lstm")
NONLINEARITIES = ("tanh", "relu")  # nn.RNN's


def make_rnn(
    cell: str,
    d_model: int,
    n_layers: int,
    dropout: float,
    bidirectional: bool = False,
    input_size: int | None = None,
    forget_bias: float = 0.0,
    nonlinearity: str = "tanh",
    single_bias: bool = False,
) -> nn.RNNBase:
    """Build a batch-first ``nn.RNN`` / ``nn.LSTM`` with hidden size ``d_model``.

    Dropout between layers only exists when there is more than one layer (torch
    warns otherwise), so it is dropped for ``n_layers == 1``. ``input_size`` (None:
    ``d_model``) is the width of the first layer's input. ``forget_bias`` is added to the
    LSTM forget gate's bias of every layer at initialisation, or with ``single_bias`` held
    by a frozen ``bias_hh`` (see ``RecurrentBackbone``); ``nonlinearity`` is the RNN's
    activation.
    """
    check_choice("cell", cell, CELLS)
    check_choice("nonlinearity", nonlinearity, NONLINEARITIES)
    if forget_bias and cell != "lstm":
        raise ValueError(f"forget_bias={forget_bias!r} only applies to cell='lstm', not {cell!r}")
    if single_bias and cell != "lstm":
        raise ValueError(f"single_bias={single_bias!r} only applies to cell='lstm', not {cell!r}")
    if nonlinearity != "tanh" and cell != "rnn":
        raise ValueError(f"nonlinearity={nonlinearity!r} only applies to cell='rnn', not {cell!r}")
    kwargs = dict(
        input_size=d_model if input_size is None else input_size,
        hidden_size=d_model,
        num_layers=n_layers,
        batch_first=True,
        dropout=dropout if n_layers > 1 else 0.0,
        bidirectional=bidirectional,
    )
    if cell == "rnn":
        return nn.RNN(nonlinearity=nonlinearity, **kwargs)
    lstm = nn.LSTM(**kwargs)
    lstm.forget_bias = forget_bias  # what an initialisation drawn again keeps (haiku_init)
    forget = slice(d_model, 2 * d_model)  # gates i, f, g, o: f is the second quarter
    with torch.no_grad():
        for name, bias in lstm.named_parameters():
            if single_bias and name.startswith("bias_hh"):  # a constant: the forget offset
                bias.zero_()[forget] = forget_bias
                bias.requires_grad_(False)
            elif name.startswith("bias_ih") and not single_bias:
                bias[forget] += forget_bias
    return lstm


class RecurrentBackbone(nn.Module):
    """Stacked RNN / LSTM: (B, T, input_size) -> (B, T, d); input_size is d unless given.

    A unidirectional recurrence only reads the past, so it is causal whatever the
    ``causal`` flag says; the flag exists so that every backbone shares one
    interface, and it forbids ``bidirectional``.

    Args:
        d_model: input and hidden width d.
        n_layers: stacked recurrent layers.
        cell: "rnn" or "lstm".
        dropout: dropout between stacked layers (ignored when n_layers == 1).
        bidirectional: add a backward pass; its (B, T, 2d) output is projected back to d.
        causal: promise that output t depends on inputs <= t only (forbids bidirectional).
        input_size: width of the input x (None: d_model); a head that feeds the one-hot
            input without an embedding gives its width.
        forget_bias: lstm only: added to the forget gate's bias (``bias_ih``) at
            initialisation. Haiku's LSTM (Delétang et al. 2023) computes sigmoid(f + 1) with
            its bias starting at 0: the same network at the start, but torch's LSTM trains
            two biases (``bias_ih``, ``bias_hh``) where haiku's has one, so each gate's
            effective bias moves twice as far per Adam step; ``single_bias`` trains one.
        single_bias: lstm only: train ``bias_ih`` alone; ``bias_hh`` is frozen
            (``requires_grad`` False), holding ``forget_bias`` on the forget gate and 0
            elsewhere: haiku's one bias and its constant sigmoid(f + forget_bias), with
            torch's fused kernel still in use. False: both biases trained (torch's LSTM).
        nonlinearity: rnn only: "tanh" or "relu", h_t = relu(W_ih x_t + b_ih + W_hh h_{t-1}
            + b_hh): haiku's VanillaRNN (Delétang et al. 2023).
    """

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 1,
        cell: str = "lstm",
        dropout: float = 0.0,
        bidirectional: bool = False,
        causal: bool = False,
        input_size: int | None = None,
        forget_bias: float = 0.0,
        nonlinearity: str = "tanh",
        single_bias: bool = False,
    ) -> None:
        super().__init__()
        if bidirectional and causal:
            raise ValueError("bidirectional=True reads the future; not allowed with causal=True")
        self.cell = self.arch = cell  # arch: its key in BACKBONES
        self.causal = causal
        self.bidirectional = bidirectional
        self.rnn = make_rnn(
            cell,
            d_model,
            n_layers,
            dropout=dropout,
            bidirectional=bidirectional,
            input_size=input_size,
            forget_bias=forget_bias,
            nonlinearity=nonlinearity,
            single_bias=single_bias,
        )
        self.proj = nn.Linear(2 * d_model, d_model) if bidirectional else nn.Identity()

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """Run the recurrence.

        Args:
            x: (B, T, input_size).
            padding_mask: (B, T) bool, True at padding, which must trail the real
                tokens. A forward-only recurrence never reads trailing padding before
                a real step, so the mask only matters for the backward direction: there
                the sequence is packed so each backward pass starts at its last real token.

        Returns:
            (B, T, d); outputs at padded positions are meaningless.
        """
        if self.bidirectional and padding_mask is not None:
            T = x.shape[1]
            lengths = (~padding_mask).sum(dim=1).clamp(min=1).cpu()  # pack wants CPU lengths
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, _ = self.rnn(packed)
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)  # (B, T, 2d)
        elif in_stacked_call() and not self.bidirectional:  # the same recurrence, for vmap
            out = members_unrolled(self.rnn, x)
        elif uses_inference_recurrence(self.rnn, x):  # scoring on the CPU: in place
            out = rnn_inference(self.rnn, x)
        else:
            out, _ = self.rnn(x)  # (B, T, d) or (B, T, 2d)
        return self.proj(out)


class RNNBackbone(RecurrentBackbone):
    """:class:`RecurrentBackbone` with ``cell="rnn"``: the options an ``nn.RNN`` reads."""

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 1,
        dropout: float = 0.0,
        bidirectional: bool = False,
        causal: bool = False,
        input_size: int | None = None,
        nonlinearity: str = "tanh",
    ) -> None:
        super().__init__(
            d_model,
            n_layers,
            "rnn",
            dropout,
            bidirectional,
            causal,
            input_size=input_size,
            nonlinearity=nonlinearity,
        )


class LSTMBackbone(RecurrentBackbone):
    """:class:`RecurrentBackbone` with ``cell="lstm"``: the options an ``nn.LSTM`` reads."""

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 1,
        dropout: float = 0.0,
        bidirectional: bool = False,
        causal: bool = False,
        input_size: int | None = None,
        forget_bias: float = 0.0,
        single_bias: bool = False,
    ) -> None:
        super().__init__(
            d_model,
            n_layers,
            "lstm",
            dropout,
            bidirectional,
            causal,
            input_size=input_size,
            forget_bias=forget_bias,
            single_bias=single_bias,
        )
