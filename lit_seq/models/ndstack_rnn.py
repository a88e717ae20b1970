"""ndstack_rnn: DuSell & Chiang's (2020) nondeterministic Stack-RNN as Delétang et al. 2023
built it (their models/ndstack_rnn.py ``NDStackRNNCore`` over haiku's ``VanillaRNN``).

The stack is a weighted graph of nodes (position i, state q, top symbol x), Q states and
Y symbols: ``gamma[i, t]`` (Q, Y, Q, Y) weighs the transitions from the nodes at i to those at
t, ``alpha[t]`` (Q, Y) the stacks' tops after step t. Per step t = 1, 2, ... (their timestep,
one ahead of the position read)::

    h_t = relu(W_ih [x_t, read_{t-1}] + b_ih + W_hh h_{t-1} + b_hh);  read_0 = 0
    push (Q, Y, Q, Y), pop (Q, Y, Q), replace (Q, Y, Q, Y) = split(softmax(actions(h_t)))
    gamma[i, t] = [i = t-1] push + sum_{i<k<t-1} gamma[i, k] gamma[k, t-1] pop
                  + gamma[i, t-1] replace                             (their three einsums)
    alpha[t] = sum_i alpha[i] gamma[i, t];  alpha[0] = one at (q 0, symbol 0)
    read_t = r / (sum(r) + 0.001),  r = alpha[t] summed over states (Y,), or all of it
             (Q Y,) with ``read_states``

one softmax over all (QY)^2 + Q^2 Y + (QY)^2 logits (40 at Q = Y = 2), in that order.

Their code past the stack's size, mirrored here: gamma has ``stack_size`` S columns and alpha
S rows, and step t writes column and row t. For t >= S, JAX drops the ``.at[t].set`` writes
and clamps the read of column t to column S - 1, so from step S on gamma and alpha stay as
step S - 1 left them and every read is the same ``alpha . gamma[:, S - 1]``: the controller
goes on, the stack is frozen (its actions unused). A ReverseString input of 40 and its 40
empty positions take 80 steps: with S = 30 the stack freezes at step 30. Here the columns
are kept as a list (column t appended at step t, never written again), so autograd keeps
no copy of the whole gamma a step, and the frozen read is computed once.

Worked example (:func:`stack_step`, :func:`top_read`), one state, 2 symbols, actions set
by hand: push symbol 1 (read [0, 0.999]), push symbol 0 (read [0.999, 0]), pop: the read is
[0, 0.999] again, symbol 1 back on top.

Parameters, one ``nn.Linear`` per haiku ``Linear``: ``layers.0.controller.input_to_hidden``
= ``nd_stack_rnn_core/~/vanilla_rnn/linear`` (in + Y -> d), ``...hidden_to_hidden`` =
``.../linear_1``, ``layers.0.actions`` = ``nd_stack_rnn_core/linear`` (d -> 40 at Q = Y = 2).

Sizes and their sources: ``stack_size`` 30 and ``read_states`` False are their core's
defaults; their core has no default for the states and symbols: 2 and 2 here (the
smallest nondeterministic stack, the reference fixtures'), not confirmed against the paper's
appendix, which could not be read here. Cost: step t < S is O(B S t Q^3 Y^2) (the pop), a
loop over T of a few batched einsums. Causal; ``n_layers`` and ``dropout`` as stack_rnn's.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from lit_seq.util.checks import check_int

from .dropout import Dropout
from .memory import Controller, run_layers

EPSILON = 1e-3  # their _EPSILON: the read is divided by its sum plus this


def gamma_column(columns: list[Tensor], push: Tensor, pop: Tensor, replace: Tensor) -> Tensor:
    """gamma[:, :, t] for t = len(columns), the columns 0 .. t-1 given (their update, t < S).

    A column is kept as (B, Y, S, Q, Y, Q), ``column[b, y, i, q, x, r] = gamma[b, i, t, q, x,
    r, y]``: the target symbol y first, so that the pops of every position k are one batched
    product over (b, y), the stacked columns' memory as it lies.

    Args:
        columns: t columns gamma[:, :, k] in that layout (column 0 is zero).
        push: (B, Q, Y, Q, Y); pop: (B, Q, Y, Q); replace: (B, Q, Y, Q, Y) (their layouts).

    Returns:
        (B, Y, S, Q, Y, Q): replace + pop + push, their order of the sum. Their pops' mask
        (i < k < t - 1) is implied: the columns 1 .. t-2 are stacked, their rows i < t-2
        alone, as gamma[i, k] is 0 wherever i >= k (column k is only written in its rows
        i < k); leaving out exact zeros changes no sum.
    """
    t = len(columns)
    B, Y, S, Q = columns[0].shape[:4]
    previous = columns[t - 1][:, :, : t - 1]  # gamma[:, :, t-1]: its rows i < t-1, the rest 0
    replaced = torch.einsum("bziqxs,bszry->byiqxr", previous, replace)  # (B, Y, t-1, Q, Y, Q)
    parts = [replaced]
    if t >= 3:  # a pop needs 0 < k < t - 1 (column 0 is zero), hence i < t - 2
        rows = t - 2
        # what popping the node (t-1, s, z) leaves from (k, u, y): (B, Y, t-2, Q, Q)
        inner = torch.einsum("bzkuys,bszr->bykur", previous[:, :, 1:], pop)
        grid = torch.stack([c[:, :, :rows] for c in columns[1 : t - 1]], dim=5)  # gamma[i, k]
        popped = grid.view(B, Y, rows * Q * Y, rows * Q) @ inner.reshape(B, Y, rows * Q, Q)
        parts = [replaced[:, :, :rows] + popped.view(B, Y, rows, Q, Y, Q), replaced[:, :, rows:]]
    # the push lands in row t-1 alone, where the other two terms are exactly 0
    row = push.permute(0, 4, 1, 2, 3).unsqueeze(2)  # (B, Y, 1, Q, Y, Q)
    return torch.cat([*parts, row, row.new_zeros(B, Y, S - t, Q, Y, Q)], dim=2)


def tops(alphas: list[Tensor], column: Tensor) -> Tensor:
    """alpha[t] = sum_i alpha[i] gamma[i, t] (B, Q, Y) over the i < len(alphas) given (B, Q,
    Y) each, with ``column`` gamma[:, :, t] in :func:`gamma_column`'s layout."""
    B, Y, _, Q = column.shape[:4]
    n = len(alphas)
    weights = torch.stack(alphas, dim=1).view(B, n * Q * Y)  # (B, n Q Y)
    return torch.einsum("bn,bynr->bry", weights, column[:, :, :n].reshape(B, Y, n * Q * Y, Q))


def stack_step(
    columns: list[Tensor], alphas: list[Tensor], push: Tensor, pop: Tensor, replace: Tensor
) -> Tensor:
    """Step t = len(columns) < S of the stack: appends gamma[:, :, t] to ``columns`` and
    alpha[t] (B, Q, Y) to ``alphas`` (t entries before, 0 .. t-1), and returns alpha[t]. Their
    sum runs over all S rows; the rows i >= t of both are 0 and left out."""
    column = gamma_column(columns, push, pop, replace)
    alpha = tops(alphas, column)
    columns.append(column)
    alphas.append(alpha)
    return alpha


def top_read(alpha: Tensor, read_states: bool) -> Tensor:
    """The controller's read of the tops alpha (B, Q, Y): (B, Y), or (B, Q Y) with
    ``read_states``, divided by its sum plus ``EPSILON``."""
    read = alpha.flatten(1) if read_states else alpha.sum(dim=1)
    return read / (read.sum(dim=-1, keepdim=True) + EPSILON)


class NDStackRNNCore(nn.Module):
    """One layer: a controller and its nondeterministic stack, (B, T, in) -> (B, T, d).

    Args:
        input_size: features per step.
        d_model: the controller's width d.
        stack_states: Q, the states of the stack's automaton.
        stack_symbols: Y, the symbols it pushes.
        stack_size: S, the positions (timesteps) the stack holds.
        read_states: the controller reads the tops' states too (Q Y values, not Y).
        nonlinearity: the controller's, "relu" (theirs) or "tanh".
    """

    def __init__(
        self,
        input_size: int,
        d_model: int,
        stack_states: int = 2,
        stack_symbols: int = 2,
        stack_size: int = 30,
        read_states: bool = False,
        nonlinearity: str = "relu",
    ) -> None:
        super().__init__()
        self.Q, self.Y, self.S, self.read_states = (
            stack_states,
            stack_symbols,
            stack_size,
            read_states,
        )
        read_size = stack_states * stack_symbols if read_states else stack_symbols
        self.controller = Controller(input_size, read_size, d_model, nonlinearity)
        QY = stack_states * stack_symbols
        self.splits = [QY * QY, stack_states * QY, QY * QY]  # push, pop, replace
        self.actions = nn.Linear(d_model, sum(self.splits))

    def _actions(self, h: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """push, pop, replace of h_t (B, d): one softmax over all their logits."""
        B, Q, Y = h.shape[0], self.Q, self.Y
        push, pop, replace = self.actions(h).softmax(dim=-1).split(self.splits, dim=-1)
        return push.view(B, Q, Y, Q, Y), pop.view(B, Q, Y, Q), replace.view(B, Q, Y, Q, Y)

    def forward(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        Q, Y, S = self.Q, self.Y, self.S
        projected = self.controller.project(x)  # (B, T, d)
        weight = self.controller.recurrent_weight()
        h = x.new_zeros(B, weight.shape[1])
        read = x.new_zeros(B, Q * Y if self.read_states else Y)
        columns = [x.new_zeros(B, Y, S, Q, Y, Q)]  # gamma[:, :, 0]: nothing leads to 0
        first = torch.cat([x.new_ones(1), x.new_zeros(Q * Y - 1)])  # alpha[0]: (q 0, symbol 0)
        alphas = [first.view(1, Q, Y).expand(B, Q, Y)]
        frozen = None  # the read from step S on
        outputs = []
        for t in range(1, T + 1):
            h = self.controller.step(projected[:, t - 1], read, h, weight)
            outputs.append(h)
            if t == T:  # the last update is never read
                break
            if t < S:
                alpha = stack_step(columns, alphas, *self._actions(h))
                read = top_read(alpha, self.read_states)
            else:  # their writes past the end are dropped: the stack as step S - 1 left it
                if frozen is None:  # alphas holds all S rows now, columns[-1] is S - 1
                    frozen = top_read(tops(alphas, columns[-1]), self.read_states)
                read = frozen
        return torch.stack(outputs, dim=1)  # (B, T, d)


class NDStackRNNBackbone(nn.Module):
    """Delétang et al.'s NDStack-RNN: ``n_layers`` :class:`NDStackRNNCore` (theirs: 1).

    Args:
        d_model: the controller's width d.
        n_layers: stacked layers, each its own controller and stack (theirs: 1).
        dropout: dropout between stacked layers (none with one layer, as ``nn.RNN``).
        causal: accepted for the shared interface; the model is causal either way.
        input_size: width of the input (None: d_model); the one-hot input's without an
            embedding.
        nonlinearity: the controller's activation; "relu" is haiku's VanillaRNN, theirs.
        stack_states: states Q of the stack (2: see the module docstring).
        stack_symbols: symbols Y of the stack (2: see the module docstring).
        stack_size: positions S the stack holds; from step S on it is frozen, as theirs
            (their default, 30).
        read_states: the controller reads the tops' states and symbols, not the symbols
            alone (their default, False).
    """

    arch = "ndstack_rnn"  # its key in BACKBONES

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 1,
        dropout: float = 0.0,
        causal: bool = False,
        input_size: int | None = None,
        nonlinearity: str = "relu",
        stack_states: int = 2,
        stack_symbols: int = 2,
        stack_size: int = 30,
        read_states: bool = False,
    ) -> None:
        super().__init__()
        check_int("n_layers", n_layers, 1)
        for name, value in (
            ("stack_states", stack_states),
            ("stack_symbols", stack_symbols),
            ("stack_size", stack_size),
        ):
            check_int(name, value, 1)
        self.causal = True  # a forward recurrence, whatever the flag says
        sizes = dict(stack_states=stack_states, stack_symbols=stack_symbols)
        sizes.update(stack_size=stack_size, read_states=read_states)
        widths = [d_model if input_size is None else input_size] + [d_model] * (n_layers - 1)
        self.layers = nn.ModuleList(
            NDStackRNNCore(width, d_model, nonlinearity=nonlinearity, **sizes) for width in widths
        )
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """(B, T, in) -> (B, T, d). ``padding_mask`` is not needed: padding trails and the
        model is causal, so it never reaches a real position."""
        return run_layers(self.layers, self.drop, x)
