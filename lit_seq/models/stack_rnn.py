"""stack_rnn: Joulin & Mikolov's (2015) Stack-RNN as Delétang et al. 2023 built it (their
models/stack_rnn.py ``StackRNNCore`` over haiku's ``VanillaRNN``): (B, T, in) -> (B, T, d).

Per step, with n stacks of S cells of C (``memory.push_pop`` has the update's worked
example: a push then a pop leaves the top as it was)::

    h_t = relu(W_ih [x_t, s_{t-1}[:, 0]] + b_ih + W_hh h_{t-1} + b_hh)   # reads every top
    v_t = push(h_t)  (n C);   a_t = softmax(actions(h_t))  (3 n: push, pop, no-op)
    s_t = push_pop(s_{t-1}, a_t, v_t);   s_0 = 0;   output h_t

Their quirk, kept: the softmax runs over all 3 n logits together, then splits them by stack
(``jnn.softmax`` before the reshape), so with n > 1 one stack's three weights need not sum
to 1; with their one stack it is the usual one.

Parameters, one ``nn.Linear`` per haiku ``Linear`` (``w`` is (in, out), ``weight`` (out, in)):
``layers.0.controller.input_to_hidden`` = ``stack_rnn_core/~/vanilla_rnn/linear`` (in + n C
-> d), ``...hidden_to_hidden`` = ``.../linear_1`` (d -> d), ``layers.0.push`` =
``stack_rnn_core/linear`` (d -> n C), ``layers.0.actions`` = ``stack_rnn_core/linear_1``
(d -> 3 n). No initialisation of its own: torch's, or haiku's with ``init: haiku``.

Sizes, and where each default comes from: ``stack_size`` 30 and ``n_stacks`` 1 are their
core's defaults; ``stack_cell_size`` has none there: 8 is the cell size their example.py
gives the tape (``memory_cell_size``); the controller's width is ``d_model`` (their
example.py: 256). The paper's appendix could not be read here to confirm them.

Causal whatever ``causal`` says (a forward recurrence: trailing padding never reaches a real
position). One layer is theirs; ``n_layers`` > 1 stacks layers as ``nn.RNN`` does
(``memory.run_layers``), ``dropout`` between them. The step form is the only form: a loop
over T of a few batched products, no per-example Python.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from lit_seq.util.checks import check_int

from .dropout import Dropout
from .memory import Controller, fused_linear, push_pop, run_layers

ACTIONS = ("push", "pop", "noop")  # the order of their action logits


class StackRNNCore(nn.Module):
    """One layer: a controller and its stacks, (B, T, in) -> (B, T, d).

    Args:
        input_size: features per step.
        d_model: the controller's width d.
        stack_cell_size: C, the width of a stack cell.
        stack_size: S, the cells of each stack.
        n_stacks: n, stacks read and written side by side.
        nonlinearity: the controller's, "relu" (theirs) or "tanh".
    """

    def __init__(
        self,
        input_size: int,
        d_model: int,
        stack_cell_size: int = 8,
        stack_size: int = 30,
        n_stacks: int = 1,
        nonlinearity: str = "relu",
    ) -> None:
        super().__init__()
        self.n, self.S, self.C = n_stacks, stack_size, stack_cell_size
        self.controller = Controller(input_size, n_stacks * stack_cell_size, d_model, nonlinearity)
        self.push = nn.Linear(d_model, n_stacks * stack_cell_size)
        self.actions = nn.Linear(d_model, n_stacks * len(ACTIONS))

    def forward(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        n, C = self.n, self.C
        projected = self.controller.project(x)  # (B, T, d)
        weight = self.controller.recurrent_weight()
        bias_out, weight_out = fused_linear(self.push, self.actions)  # push values, then logits
        h = x.new_zeros(B, weight.shape[1])
        stack = x.new_zeros(B, n, self.S, C)
        outputs = []
        for t in range(T):
            h = self.controller.step(projected[:, t], stack[:, :, 0].reshape(B, n * C), h, weight)
            outputs.append(h)
            if t == T - 1:  # the last update is never read
                break
            value, logits = torch.addmm(bias_out, h, weight_out).split([n * C, 3 * n], dim=-1)
            actions = logits.softmax(dim=-1).view(B, n, len(ACTIONS))  # over all 3 n: theirs
            stack = push_pop(stack, actions, value.view(B, n, C))
        return torch.stack(outputs, dim=1)  # (B, T, d)


class StackRNNBackbone(nn.Module):
    """Delétang et al.'s Stack-RNN: ``n_layers`` :class:`StackRNNCore` (theirs: 1).

    Args:
        d_model: the controller's width d.
        n_layers: stacked layers, each its own controller and stacks (theirs: 1).
        dropout: dropout between stacked layers (none with one layer, as ``nn.RNN``).
        causal: accepted for the shared interface; the model is causal either way.
        input_size: width of the input (None: d_model); the one-hot input's without an
            embedding.
        nonlinearity: the controller's activation; "relu" is haiku's VanillaRNN, theirs.
        stack_cell_size: width C of a stack cell (8: see the module docstring).
        stack_size: cells S of each stack (their default, 30).
        n_stacks: stacks n (their default, 1).
    """

    arch = "stack_rnn"  # its key in BACKBONES

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 1,
        dropout: float = 0.0,
        causal: bool = False,
        input_size: int | None = None,
        nonlinearity: str = "relu",
        stack_cell_size: int = 8,
        stack_size: int = 30,
        n_stacks: int = 1,
    ) -> None:
        super().__init__()
        check_int("n_layers", n_layers, 1)
        for name, value in (("stack_cell_size", stack_cell_size), ("stack_size", stack_size)):
            check_int(name, value, 1)
        check_int("n_stacks", n_stacks, 1)
        self.causal = True  # a forward recurrence, whatever the flag says
        sizes = dict(stack_cell_size=stack_cell_size, stack_size=stack_size, n_stacks=n_stacks)
        widths = [d_model if input_size is None else input_size] + [d_model] * (n_layers - 1)
        self.layers = nn.ModuleList(
            StackRNNCore(width, d_model, nonlinearity=nonlinearity, **sizes) for width in widths
        )
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """(B, T, in) -> (B, T, d). ``padding_mask`` is not needed: padding trails and the
        model is causal, so it never reaches a real position."""
        return run_layers(self.layers, self.drop, x)
