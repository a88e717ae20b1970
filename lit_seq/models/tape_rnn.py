"""tape_rnn: Delétang et al. 2023's Tape-RNN with jumps by the input length (their
models/tape_rnn.py ``TapeInputLengthJumpCore`` over haiku's ``VanillaRNN``).

A circular tape of M cells of C, cell 0 the current one. Per step (``memory.tape_update``
has the moves' worked example)::

    h_t = relu(W_ih [x_t, tape_{t-1}[0]] + b_ih + W_hh h_{t-1} + b_hh)
    v_t = MLP(h_t)  (C: ReLU between its layers, none after: haiku's nets.MLP)
    a_t = softmax(actions(h_t))  (5: stay, left, right, jump left, jump right)
    tape_t = tape_update(tape_{t-1}, a_t, v_t);  tape_0 = 0;  output h_t

A jump moves by the INPUT length L: the task's input, without the empty positions appended
after it for the output (their ``make_model_with_empty_targets`` passes
``input_length=T`` of the input). The heads give it: ``AppendedOutputHead`` and
``SequenceClassifier`` pass ``input_length`` to a backbone whose ``forward`` takes it (the
classifier each sequence's own length under padding). Without it the jump is each
sequence's length in what the backbone reads (its real positions under ``padding_mask``).
Example: a ReverseString input of 8 and its 8 empty positions on a tape of 6 cells jump by
8 (2 mod 6), not by 16.

Parameters, one ``nn.Linear`` per haiku ``Linear``: ``layers.0.controller.input_to_hidden``
= ``tape_input_length_jump_core/~/vanilla_rnn/linear`` (in + C -> d),
``...hidden_to_hidden`` = ``.../linear_1``, ``layers.0.mlp.k`` =
``tape_input_length_jump_core/mlp/~/linear_k``, ``layers.0.actions`` =
``tape_input_length_jump_core/linear`` (d -> 5). One tape (their ``n_tapes`` default).

Sizes and their sources: ``memory_cell_size`` 8 and ``memory_size`` 40 are their
example.py's (their core's own default size is 30), ``mlp_layers_size`` (64, 64) their
core's default; the paper's appendix could not be read here to confirm them. Causal;
``n_layers`` and ``dropout`` as stack_rnn's.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lit_seq.util.checks import check_int

from .dropout import Dropout
from .memory import TAPE_MOVES, Controller, fused_linear, run_layers, tape_index, tape_update

MLP_LAYERS_SIZE = (64, 64)  # their TapeRNNCore's default


class TapeRNNCore(nn.Module):
    """One layer: a controller and its tape, (B, T, in) and L (B,) -> (B, T, d).

    Args:
        input_size: features per step.
        d_model: the controller's width d.
        memory_cell_size: C, the width of a cell.
        memory_size: M, the cells of the tape.
        mlp_layers_size: the hidden widths of the MLP that makes the written value (empty:
            one linear layer).
        nonlinearity: the controller's, "relu" (theirs) or "tanh".
    """

    def __init__(
        self,
        input_size: int,
        d_model: int,
        memory_cell_size: int = 8,
        memory_size: int = 40,
        mlp_layers_size: tuple[int, ...] = (64, 64),
        nonlinearity: str = "relu",
    ) -> None:
        super().__init__()
        self.M, self.C = memory_size, memory_cell_size
        self.controller = Controller(input_size, memory_cell_size, d_model, nonlinearity)
        widths = [d_model, *mlp_layers_size, memory_cell_size]
        self.mlp = nn.ModuleList(
            nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:], strict=True)
        )
        self.actions = nn.Linear(d_model, len(TAPE_MOVES))

    def forward(self, x: Tensor, input_length: Tensor) -> Tensor:
        B, T, _ = x.shape
        projected = self.controller.project(x)  # (B, T, d)
        weight = self.controller.recurrent_weight()
        # the MLP's first layer and the actions read h_t: one product
        bias_first, weight_first = fused_linear(self.mlp[0], self.actions)
        width = self.mlp[0].out_features
        index = tape_index(input_length, self.M)  # (B, 5 M): the moves, fixed for the sequence
        h = x.new_zeros(B, weight.shape[1])
        tape = x.new_zeros(B, self.M, self.C)
        outputs = []
        for t in range(T):
            h = self.controller.step(projected[:, t], tape[:, 0], h, weight)
            outputs.append(h)
            if t == T - 1:  # the last update is never read
                break
            value, logits = torch.addmm(bias_first, h, weight_first).split([width, 5], dim=-1)
            for layer in self.mlp[1:]:  # ReLU between the layers, none after the last
                value = layer(F.relu(value))
            tape = tape_update(tape, logits.softmax(dim=-1), value, index)
        return torch.stack(outputs, dim=1)  # (B, T, d)


class TapeRNNBackbone(nn.Module):
    """Delétang et al.'s Tape-RNN: ``n_layers`` :class:`TapeRNNCore` (theirs: 1).

    Args:
        d_model: the controller's width d.
        n_layers: stacked layers, each its own controller and tape (theirs: 1).
        dropout: dropout between stacked layers (none with one layer, as ``nn.RNN``).
        causal: accepted for the shared interface; the model is causal either way.
        input_size: width of the input (None: d_model); the one-hot input's without an
            embedding.
        nonlinearity: the controller's activation; "relu" is haiku's VanillaRNN, theirs.
        memory_cell_size: width C of a tape cell (their example.py's 8).
        memory_size: cells M of the tape (their example.py's 40).
        mlp_layers_size: hidden widths of the MLP writing the value; None: their default
            (64, 64); empty: one linear layer.
    """

    arch = "tape_rnn"  # its key in BACKBONES

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 1,
        dropout: float = 0.0,
        causal: bool = False,
        input_size: int | None = None,
        nonlinearity: str = "relu",
        memory_cell_size: int = 8,
        memory_size: int = 40,
        mlp_layers_size: list[int] | tuple[int, ...] | None = None,
    ) -> None:
        super().__init__()
        mlp_layers_size = MLP_LAYERS_SIZE if mlp_layers_size is None else tuple(mlp_layers_size)
        check_int("n_layers", n_layers, 1)
        check_int("memory_cell_size", memory_cell_size, 1)
        check_int("memory_size", memory_size, 1)
        for width in mlp_layers_size:
            check_int("mlp_layers_size", width, 1, allowed=">= 1 in every entry")
        self.causal = True  # a forward recurrence, whatever the flag says
        sizes = dict(memory_cell_size=memory_cell_size, memory_size=memory_size)
        sizes["mlp_layers_size"] = mlp_layers_size
        widths = [d_model if input_size is None else input_size] + [d_model] * (n_layers - 1)
        self.layers = nn.ModuleList(
            TapeRNNCore(width, d_model, nonlinearity=nonlinearity, **sizes) for width in widths
        )
        self.drop = Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        padding_mask: Tensor | None = None,
        input_length: int | Tensor | None = None,
    ) -> Tensor:
        """(B, T, in) -> (B, T, d).

        Args:
            x: (B, T, in).
            padding_mask: (B, T) bool, True at (trailing) padding; only read for the jumps'
                default.
            input_length: the jumps' size L: one for all (int) or each sequence's (B,);
                None: each sequence's real length (T without ``padding_mask``).
        """
        B, T, _ = x.shape
        if input_length is None:
            input_length = T if padding_mask is None else (~padding_mask).sum(dim=1)
        if isinstance(input_length, Tensor):
            lengths = input_length.to(device=x.device, dtype=torch.long).expand(B)
        else:
            lengths = torch.full((B,), input_length, dtype=torch.long, device=x.device)
        return run_layers(self.layers, self.drop, x, input_length=lengths)
