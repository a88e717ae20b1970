"""`modular_arithmetic`: reduce a bracket-free expression of +, -, * modulo 5 (Delétang 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.counter_random import HostRandom, Random
from lit_seq.util.checks import check_int

# Operator tokens follow the residues 0 .. modulus - 1, in Delétang's order (OP_BY_CHARACTER).
PLUS, MINUS, TIMES, BLANK = 0, 1, 2, 3  # offsets from `modulus`: '+', '-', '*', '_'
N_OPERATOR_TOKENS = 4  # '_' is in the alphabet (the input size) but never sampled


def modular_arithmetic_labels(tokens: Tensor, modulus: int) -> Tensor:
    """The value of each expression mod `modulus`, * before + and -: (B, L) -> (B,), L odd.

    Tokens alternate residue, operator, residue, ...; an operator is `modulus` + PLUS /
    MINUS / TIMES. Examples (mod 5, as Delétang's docstring): 1 + 2 * 3 = 7 -> 2;
    1 - 1 - 1 = -1 -> 4; 0 * 1 + 4 * 3 - 2 = 10 -> 0. In tokens: [1, 5, 2, 7, 3] -> 2.
    """
    numbers, ops = tokens[:, 0::2], tokens[:, 1::2] - modulus  # (B, m + 1), (B, m)
    operands = numbers[:, 1:]  # (B, m) the number after each operator
    times = (ops == TIMES).unbind(dim=1)
    signed = torch.where(ops == MINUS, -operands, operands).unbind(dim=1)
    total = torch.zeros_like(numbers[:, 0])  # (B,) the finished additive terms
    term = numbers[:, 0]  # (B,) the signed product being built
    # One step per operator, vectorised over the batch: a scan, as the expression is read.
    for is_times, number, plus_or_minus in zip(times, operands.unbind(dim=1), signed, strict=True):
        total = torch.where(is_times, total, total + term)  # + and - close the running term
        # % is Python's remainder (sign of the divisor), so negative terms land in 0..m-1
        term = torch.where(is_times, term * number, plus_or_minus) % modulus
    return (total + term) % modulus


class ModularArithmeticData(SyntheticDataModule):
    """Sequence classification: the value mod 5 of a random expression such as 1 + 2 * 3.

    Delétang et al. 2023's "modular arithmetic (simple)", exactly as
    google-deepmind/neural_networks_chomsky_hierarchy tasks/regular/modular_arithmetic.py
    (`ModularArithmetic.sample_batch`): residues uniform in {0, .., modulus - 1} at even
    positions, operators uniform over {+, *, -} at odd positions, no brackets; the label is
    the expression's value with the usual precedence (* before + and -, left to right),
    mod `modulus` (5 in the paper). Alphabet (input size modulus + 4, one-hot): residue r is
    token r, then '+', '-', '*', '_' are modulus + 0, 1, 2, 3 ('_', the blank, is never
    sampled). Expressions have odd length: an even length L gives L - 1 tokens, as theirs
    does, so the length-2N test set holds 2N - 1 tokens. Worked example (mod 5):
    1 - 1 - 1 -> tokens [1, 6, 1, 6, 1] -> -1 mod 5 -> class 4. Batch keys: `x`
    (B, L, modulus + 4) float one-hot, `y` (B,) long. Length k x N: expressions of k x N
    tokens (k x N - 1 when even), the same alphabet and classes.
    Delétang trains with the uniform curriculum (`curriculum: true`, lengths 1..N).

    Args:
        length: tokens per training expression (N; minus one when even).
        modulus: the modulus; the number of classes and of residue tokens.
        n_train: training expressions.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "modular_arithmetic"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "classification"

    def __init__(
        self,
        length: int = 15,
        modulus: int = 5,
        n_train: int = 10000,
        **kwargs,
    ) -> None:
        self.length = check_int("length", length, 1)
        self.modulus = check_int("modulus", modulus, 2)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return self.modulus + N_OPERATOR_TOKENS

    @property
    def out_features(self) -> int:
        return self.modulus

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        """The fixed splits: residues, then operators, from ``torch.randint`` (their digits
        as ever)."""
        length -= 1 - length % 2  # expressions have odd length: Delétang's drops one
        host = HostRandom(generator)
        residues = host.integers("residues", 0, self.modulus, (n, length // 2 + 1))
        return self._examples(residues, host.integers("operators", 0, 3, (n, length // 2)))

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        """Fresh batches: residues and operators from one draw, r uniform in 0..3m-1 a
        position (r mod m a residue, r // m an operator: both uniform)."""
        length -= 1 - length % 2
        draws = rng.integers("tokens", 0, 3 * self.modulus, (n, length))  # (B, L)
        return self._examples(draws[:, 0::2] % self.modulus, draws[:, 1::2] // self.modulus)

    def _examples(self, residues: Tensor, choices: Tensor) -> dict[str, Tensor]:
        """The batch of expressions alternating ``residues`` (B, m + 1) and operators
        ``choices`` (B, m) in 0..2, Delétang's draw order + * -."""
        # choice 0, 1, 2 -> PLUS, TIMES, MINUS (offsets 0, 2, 1)
        tokens = residues.new_empty(len(residues), residues.shape[1] + choices.shape[1])
        tokens[:, 0::2], tokens[:, 1::2] = residues, (2 * choices) % 3 + self.modulus
        x = F.one_hot(tokens, num_classes=self.in_features).float()  # (B, L, modulus + 4)
        return {"x": x, "y": modular_arithmetic_labels(tokens, self.modulus)}
