"""What Delétang et al. 2023's memory-augmented RNNs share: the controller, the stack, the tape.

Their Stack-RNN, NDStack-RNN and Tape-RNN (models/stack_rnn.py, ndstack_rnn.py, tape_rnn.py
of their code) are one haiku ``VanillaRNN`` controller each, reading the input and what the
memory showed after the last step, and writing the memory from its new output:

    h_t = act(W_ih [x_t, read_{t-1}] + b_ih + W_hh h_{t-1} + b_hh)     (act: their ReLU)
    memory_t = update(memory_{t-1}, actions(h_t), value(h_t));  read_t = read(memory_t)

The output at t is h_t (so the update of the last step is never read, and is skipped).
:class:`Controller` is the VanillaRNN as its two ``nn.Linear`` (``input_to_hidden`` over
[x_t, read], ``hidden_to_hidden``, a bias each: haiku's ``double_bias``), one parameter per
haiku parameter; the input's share of ``input_to_hidden`` is taken for all T at once
(:meth:`Controller.project`), so a step is one product of [read, h] and the nonlinearity.

The memories' updates are pure functions, their worked examples asserted by tests:

- :func:`push_pop` (Joulin & Mikolov's stack): with push, pop, no-op weights a,
  ``s'[0] = a_push v + a_pop s[1] + a_noop s[0]``, ``s'[i] = a_push s[i-1] + a_pop s[i+1] +
  a_noop s[i]``, a zero below the bottom. The stack [1, 2, 3] (top first): a push of 5 gives
  [5, 1, 2] (the bottom cell falls off), then a pop [1, 2, 0]: the top is back as it was.
- :func:`tape_update` (their Tape-RNN with jumps, ``TapeInputLengthJumpCore``): the value is
  written in the current cell 0, then the tape moves circularly (``jnp.roll``): for moves
  d = 0, -1, +1, -L, +L (their stay, left, right, jump left, jump right, L the input
  length) ``tape'[m] = sum_k a_k w[(m - d_k) mod M]``. The tape [1, 2, 3, 4, 5, 6], a 9
  written, L = 8 on M = 6 cells (a jump by 8 is one by 2): stay [9, 2, 3, 4, 5, 6], left
  [2, 3, 4, 5, 6, 9], right [6, 9, 2, 3, 4, 5], jump left [3, 4, 5, 6, 9, 2], jump right
  [5, 6, 9, 2, 3, 4].

:func:`run_layers` stacks such layers as ``nn.RNN`` stacks its own (``n_layers``: each layer
its own controller and memory, reading the outputs of the one below, dropout between
layers only); theirs is one layer.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lit_seq.util.checks import check_choice

from .recurrent import NONLINEARITIES

TAPE_MOVES = ("stay", "left", "right", "jump_left", "jump_right")  # their action order
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"tanh": torch.tanh, "relu": F.relu}


class Controller(nn.Module):
    """haiku's ``VanillaRNN`` reading [x_t, read_{t-1}]: two ``nn.Linear``, a bias each.

    Args:
        input_size: features of x_t.
        read_size: features the memory shows the controller each step.
        d_model: hidden width d.
        nonlinearity: "relu" (haiku's VanillaRNN, theirs) or "tanh".
    """

    def __init__(
        self, input_size: int, read_size: int, d_model: int, nonlinearity: str = "relu"
    ) -> None:
        super().__init__()
        self.act = ACTIVATIONS[check_choice("nonlinearity", nonlinearity, NONLINEARITIES)]
        self.input_size = input_size
        self.input_to_hidden = nn.Linear(input_size + read_size, d_model)
        self.hidden_to_hidden = nn.Linear(d_model, d_model)

    def project(self, x: Tensor) -> Tensor:
        """(B, T, input_size) -> (B, T, d): W_x x_t + b_ih + b_hh at every step at once."""
        weight = self.input_to_hidden.weight[:, : self.input_size]
        bias = self.input_to_hidden.bias + self.hidden_to_hidden.bias
        return F.linear(x, weight, bias)

    def recurrent_weight(self) -> Tensor:
        """(read + d, d): [W_read, W_hh] transposed, what a step multiplies [read, h] by."""
        read = self.input_to_hidden.weight[:, self.input_size :]
        return torch.cat([read, self.hidden_to_hidden.weight], dim=1).t()

    def step(self, projected: Tensor, read: Tensor, h: Tensor, weight: Tensor) -> Tensor:
        """h_t (B, d) from this step's projected input (B, d), read_{t-1} and h_{t-1}."""
        return self.act(torch.addmm(projected, torch.cat([read, h], dim=-1), weight))


def fused_linear(*layers: nn.Linear) -> tuple[Tensor, Tensor]:
    """(bias, weight^T) of ``layers`` reading the same input as one product (their outputs
    side by side, in order): ``torch.addmm(bias, h, weight_t)``."""
    weight = torch.cat([layer.weight for layer in layers])
    return torch.cat([layer.bias for layer in layers]), weight.t()


def push_pop(stack: Tensor, actions: Tensor, value: Tensor) -> Tensor:
    """Joulin & Mikolov's stack update (their ``_update_stack``), every stack at once.

    Args:
        stack: (B, n, S, C): n stacks of S cells of C, the top cell first.
        actions: (B, n, 3): the weights of push, pop and no-op.
        value: (B, n, C): what a push puts on top.

    Returns:
        (B, n, S, C). A push moves every cell down one (the bottom one is lost), a pop up one
        (a zero comes in at the bottom); with S = 1 a pop keeps the cell, as their read of
        cell 1 is clamped to cell 0 (JAX clamps an index past the end).
    """
    push, pop, noop = (actions[..., k, None, None] for k in range(3))  # (B, n, 1, 1) each
    pushed = torch.cat([value.unsqueeze(2), stack[:, :, :-1]], dim=2)  # (B, n, S, C)
    popped = F.pad(stack[:, :, 1:], (0, 0, 0, 1)) if stack.shape[2] > 1 else stack
    return push * pushed + pop * popped + noop * stack


def tape_index(input_length: Tensor, memory_size: int) -> Tensor:
    """(B, 5 * M) long: for each example, the cell of the written tape that each move puts in
    cell m, (m - d_k) mod M, the moves in ``TAPE_MOVES`` order, k major.

    Args:
        input_length: (B,) the input length L of each example (the jumps' size).
        memory_size: cells M of the tape.
    """
    ones = torch.ones_like(input_length)
    moves = torch.stack([0 * ones, -ones, ones, -input_length, input_length], dim=1)  # (B, 5)
    cells = torch.arange(memory_size, device=input_length.device)  # (M,)
    index = torch.remainder(cells - moves[:, :, None], memory_size)  # (B, 5, M)
    return index.flatten(1)


def tape_update(tape: Tensor, actions: Tensor, value: Tensor, index: Tensor) -> Tensor:
    """Write ``value`` in the current cell, then move the tape (their ``_update_memory``).

    Args:
        tape: (B, M, C): M cells of C, cell 0 the current one.
        actions: (B, 5): the weights of the moves, ``TAPE_MOVES`` order.
        value: (B, C): what is written in cell 0.
        index: (B, 5 * M) from :func:`tape_index`.

    Returns:
        (B, M, C): ``sum_k a_k w[(m - d_k) mod M]`` with w the written tape.
    """
    B, M, C = tape.shape
    written = torch.cat([value.unsqueeze(1), tape[:, 1:]], dim=1)  # (B, M, C)
    moved = written.gather(1, index.unsqueeze(-1).expand(-1, -1, C))  # (B, 5 M, C)
    return torch.einsum("bk,bkmc->bmc", actions, moved.view(B, len(TAPE_MOVES), M, C))


def run_layers(layers: nn.ModuleList, drop: nn.Module, x: Tensor, **kwargs) -> Tensor:
    """(B, T, input) -> (B, T, d) through ``layers`` in turn, ``drop`` between two layers (as
    ``nn.RNN``'s dropout: none after the last); ``kwargs`` go to every layer."""
    for k, layer in enumerate(layers):
        x = layer(drop(x) if k else x, **kwargs)
    return x
