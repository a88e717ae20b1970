"""`solve_equation`: the value of x in a bracketed equation mod 5 such as ((3-x)+(-2))=4
(Delétang et al. 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.counter_random import Random
from lit_seq.data.modular_arithmetic_brackets import (
    BRACKETS,
    bracket_expressions,
    expression_values,
    modular_arithmetic_brackets_labels,
)
from lit_seq.util.checks import check_int

# This task's alphabet, as offsets from the modulus (Delétang's, which has no '*'): residues
# 0 .. modulus - 1, then + - ( ) x =, one-hot over modulus + 6.
EQUATION = {"+": 0, "-": 1, "(": 2, ")": 3, "x": 4, "=": 5}
N_SYMBOLS = 6


def solve_equation_labels(tokens: Tensor, modulus: int = 5) -> Tensor:
    """The value of x that solves each equation mod `modulus`: (B, N) -> (B,).

    An equation is an expression holding x once (EQUATION's tokens), '=' and a residue v.
    Without '*' the expression is a + c x with c = +1 or -1, so x = c (v - a) mod `modulus`.
    A row with no '=' (Delétang's inputs of length < 3, all token 0) has label 0. Examples
    (mod 5): ((3-x)+(-2))=4 -> 1 - x = 4 -> x = 2, in tokens [7, 7, 3, 6, 9, 8, 5, 7, 6, 2,
    8, 8, 10, 4] -> 2; x=3 -> 3; -x=1 -> 4.
    """
    a, c = expression_values(tokens, modulus, EQUATION)  # (B,) each
    equals = tokens == modulus + EQUATION["="]
    at = equals.int().argmax(dim=1, keepdim=True)  # (B, 1) the first '='
    value = tokens.gather(1, (at + 1).clamp(max=tokens.shape[1] - 1))[:, 0]
    return torch.where(equals.any(dim=1), c * (value - a) % modulus, 0)


def equations(n: int, length: int, modulus: int, rng: Random) -> tuple[Tensor, Tensor]:
    """(n, length) equations as Delétang draws them, for length >= 3 (EQUATION's tokens),
    and their solutions (n,): the residues x replaced (`solve_equation_labels` of them).

    Theirs: an expression of length - 2 tokens from the brackets task's recursion with + and
    - only (`bracket_expressions`, ``mult=False``: with * an x times 0 would have many
    solutions), a position uniform over it, moved on (cyclically) to the first residue at or
    after it, that residue replaced by x, then '=' and the expression's value.
    """
    size = length - 2
    expression = bracket_expressions(n, size, modulus, False, rng)  # (B, L - 2)
    value = modular_arithmetic_brackets_labels(expression, modulus)  # (B,)
    p = torch.arange(size, device=expression.device)
    start = rng.integers("x_position", 0, size, (n, 1))  # (B, 1)
    # the residue reached first going right from `start`, wrapping round at the end
    ahead = torch.where(expression < modulus, (p - start) % size, size)  # (B, L - 2)
    at = (start + ahead.min(dim=1, keepdim=True).values) % size  # (B, 1)
    # BRACKETS -> EQUATION: '(' and ')' one lower (there is no '*' to skip), x in place
    tokens = torch.where(expression > modulus + BRACKETS["*"], expression - 1, expression)
    tokens = torch.where(p == at, modulus + EQUATION["x"], tokens)
    equals = torch.full_like(at, modulus + EQUATION["="])
    return torch.cat([tokens, equals, value[:, None]], dim=1), expression.gather(1, at)[:, 0]


class SolveEquationData(SyntheticDataModule):
    """Sequence classification: the value of x in a random bracketed linear equation mod 5.

    Delétang et al. 2023's deterministic context-free task
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/dcf/solve_equation.py): for
    N >= 3, an expression of N - 2 tokens drawn as modular_arithmetic_brackets draws them
    but with + and - only, one residue replaced by x (see `equations`: not uniform over the
    residues, as theirs), then '=' and the expression's value; the label is the residue x
    replaced (the only solution: x's coefficient is +1 or -1). For N < 3 every input is
    N zeros (residue 0) with label 0, their edge case, kept. Alphabet (another than the
    brackets task's, as theirs): residue r is token r, then + - ( ) x = are modulus + 0 .. 5,
    one-hot over modulus + 6. Worked example (mod 5): ((3-x)+(-2))=4 -> tokens [7, 7, 3, 6,
    9, 8, 5, 7, 6, 2, 8, 8, 10, 4] -> 1 - x = 4 -> class 2; at N = 3: x=3 -> [9, 10, 3] ->
    class 3. Batch keys: `x` (B, N, modulus + 6) float one-hot, `y` (B,) long. Length k x N:
    equations of k x N tokens. Delétang trains with the uniform curriculum (`curriculum:
    true`, lengths 1..N, the lengths 1 and 2 included).

    Args:
        length: tokens per training equation (N; the longest one with the curriculum).
        modulus: the modulus; the number of classes and of residue tokens.
        n_train: training equations.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "solve_equation"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "classification"

    def __init__(self, length: int = 20, modulus: int = 5, n_train: int = 5000, **kwargs) -> None:
        self.length = check_int("length", length, 1)
        self.modulus = check_int("modulus", modulus, 2)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return self.modulus + N_SYMBOLS

    @property
    def out_features(self) -> int:
        return self.modulus

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        if length < 3:  # theirs: no room for x, '=' and a value: zeros, label 0
            tokens = torch.zeros(rng.members * n, length, dtype=torch.long, device=rng.device)
            y = tokens[:, 0]
        else:  # the labels are the residues x replaced (no second parse)
            tokens, y = equations(n, length, self.modulus, rng)  # (B, N), (B,)
        x = F.one_hot(tokens, num_classes=self.in_features).float()  # (B, N, modulus + 6)
        return {"x": x, "y": y}
