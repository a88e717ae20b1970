"""`binary_multiplication`: multiply two little-endian binary numbers (Delétang et al. 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule

# Their multiplication draws its inputs exactly as their addition does (the same lengths and
# numbers, the separator the same token 2): binary_addition's two draws, host and device.
from lit_seq.data.binary_addition import (
    PLUS,
    binary_addition_targets,
    drawn_operands,
    sampled_operands,
)
from lit_seq.data.counter_random import Random
from lit_seq.util.checks import check_int

TIMES = PLUS  # the input token between the two numbers (inputs are 0, 1 and TIMES)
END = 2  # the output symbol after the product (outputs are 0, 1 and END)


def _diagonal_sums(a: Tensor, b: Tensor) -> Tensor:
    """c_k = sum over i + j = k of a_i b_j: (B, N) twice -> (B, 2N - 1), no loop.

    The outer product's row i shifted right by i: padding each row to 2N and reading the
    flat (N, 2N) block as (N, 2N - 1) rows moves entry (i, j) to column i + j."""
    B, N = a.shape
    outer = a.unsqueeze(2) * b.unsqueeze(1)  # (B, N, N)
    skewed = F.pad(outer, (0, N)).flatten(1)[:, : N * (2 * N - 1)]  # (B, N (2N - 1))
    return skewed.unflatten(1, (N, 2 * N - 1)).sum(dim=1)


def binary_multiplication_targets(tokens: Tensor) -> tuple[Tensor, Tensor]:
    """The product, little-endian without trailing zeros, END, zeros: (B, N) -> targets and
    mask, both (B, N).

    `tokens` is a little-endian number, TIMES, another one (L and N - 1 - L bits, so the
    product has at most N - 1 bits). With no TIMES (Delétang's inputs of length <= 2) the
    output is theirs, N - 1 zeros then END, whatever the bits. The mask holds the positions
    up to and with END (those Delétang's accuracy counts). Example (their docstring's): [0,
    0, 1, TIMES, 0, 1, 1, 0, 1] = 4 * 22 = 88 = 0001101 little-endian -> targets [0, 0, 0, 1,
    1, 0, 1, END, 0], mask on the first 8; [1, 0] -> [0, END].

    No loop over positions: the schoolbook column sums c_k (`_diagonal_sums`), carried
    halfway until every digit is 0, 1 or 2 (a round keeps c_k mod 2 and passes c_k // 2 up;
    its largest digit M becomes at most 1 + M // 2), are then the sum of two binary numbers,
    which `binary_addition_targets` adds.
    """
    B, N = tokens.shape
    is_times = tokens == TIMES
    has_times = is_times.any(dim=1, keepdim=True)  # (B, 1)
    cut = torch.where(has_times, is_times.int().argmax(dim=1, keepdim=True), N)  # (B, 1)
    t = torch.arange(N, device=tokens.device).unsqueeze(0)  # (1, N) bit positions
    a = torch.where(t < cut, tokens, 0)  # (B, N) the first number's bit t
    at = cut + 1 + t  # where the second number's bit t sits (past the end: none)
    b = torch.where(at < N, tokens.gather(1, at.clamp(max=N - 1)), 0)
    digits = _diagonal_sums(a, b)[:, :N]  # (B, N): the product is below 2^(N - 1)
    largest = N  # a bound on every column sum
    while largest > 2:
        carry = F.pad(digits // 2, (1, 0))[:, :N]  # (B, N) each column's carry, one place up
        digits, largest = digits % 2 + carry, 1 + largest // 2
    low = digits.clamp(max=1)  # digits = low + high, both binary
    pair = torch.cat([low, torch.full_like(cut, PLUS), digits - low], dim=1)  # (B, 2N + 1)
    targets, mask = (part[:, :N] for part in binary_addition_targets(pair))
    # no TIMES: their fixed output, N - 1 zeros and END, every position scored
    targets = torch.where(has_times, targets, torch.where(t == N - 1, END, 0))
    return targets, mask | ~has_times


class BinaryMultiplicationData(SyntheticDataModule):
    """Transduction: n TIMES m in little-endian binary -> n * m, on N empty positions.

    The context-sensitive task of Delétang et al. 2023
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/cs/binary_multiplication.py):
    the inputs are binary_addition's (n in L bits, L uniform in 1..N-2, TIMES, m in the other
    N-1-L bits, both uniform over 1..2^bits - 1; for N <= 2 one number uniform over 0..2^N - 2
    and no TIMES). Inputs are one-hot over 0, 1, TIMES. The output (N positions) is the
    product little-endian without trailing zeros, END, then zeros; for N <= 2 it is N - 1
    zeros then END whatever the input (their edge case, kept). Only the positions up to END
    are scored (`mask`), all of them are trained on, as theirs. Worked example: 001*01101
    (4 * 22) -> 88 -> output 0001101 END 0. Batch keys: `x` (B, N, 3) float one-hot, `y`
    (B, N) long, `mask` (B, N) bool. Length k x N: k x N tokens in and out. Delétang trains
    with the uniform curriculum (`curriculum: true`).

    Args:
        length: tokens per training input (N; the longest one with the curriculum).
        n_train: training inputs.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "binary_multiplication"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "transduction"

    def __init__(self, length: int = 20, n_train: int = 5000, **kwargs) -> None:
        self.length = check_int("length", length, 1)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return 3  # bits 0 and 1, TIMES

    @property
    def out_features(self) -> int:
        return 3  # bits 0 and 1, END

    def output_length(self, length: int) -> int:
        return length  # the product has at most `length - 1` bits, then END

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        """The fixed splits: binary_addition's draw with its redraws, on the host."""
        return self._examples(drawn_operands(n, length, generator))

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        """Fresh batches: the same distribution drawn on ``rng``'s device, no redraws."""
        return self._examples(sampled_operands(n, length, rng))

    def _examples(self, tokens: Tensor) -> dict[str, Tensor]:
        y, mask = binary_multiplication_targets(tokens)
        x = F.one_hot(tokens, num_classes=3).float()  # (B, N, 3)
        return {"x": x, "y": y, "mask": mask}
