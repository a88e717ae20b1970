"""`binary_addition`: add two little-endian binary numbers (Delétang et al. 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.util.checks import check_int

PLUS = 2  # the input token between the two numbers (inputs are 0, 1 and PLUS)
END = 2  # the output symbol after the sum (outputs are 0, 1 and END)


def binary_addition_targets(tokens: Tensor) -> tuple[Tensor, Tensor]:
    """The sum, little-endian without trailing zeros, END, zeros: (B, N) -> targets and mask,
    both (B, N + 1).

    `tokens` is a little-endian number, PLUS, another one; with no PLUS it is one number,
    which is its own sum (Delétang's inputs of length <= 2). A zero sum is written "0". The
    mask holds the positions up to and with END (those Delétang's accuracy counts). Example:
    [0, 0, 1, PLUS, 0, 1, 1, 0, 1] = 4 + 22 = 26 = 01011 little-endian -> targets [0, 1, 0,
    1, 1, END, 0, 0, 0, 0], mask on the first 6.
    """
    B, N = tokens.shape
    is_plus = tokens == PLUS
    plus = torch.where(is_plus.any(dim=1), is_plus.int().argmax(dim=1), N)  # (B,) N: none
    total = tokens.new_zeros(B, N + 1)  # (B, N + 1) little-endian sum bits
    carry = tokens.new_zeros(B)
    # Schoolbook addition, one bit position per step, vectorised over the batch.
    for t in range(N):
        a = torch.where(t < plus, tokens[:, t], 0)
        at = plus + 1 + t  # (B,) where the second number's bit t sits
        b = torch.where(at < N, tokens.gather(1, at.clamp(max=N - 1).unsqueeze(1))[:, 0], 0)
        bit_sum = a + b + carry
        total[:, t], carry = bit_sum % 2, bit_sum // 2
    total[:, N] = carry
    # the sum's length: past its highest one bit ("0", one symbol, for a zero sum)
    ones = total == 1
    highest = N - ones.flip(dims=[1]).int().argmax(dim=1)  # (B,) index of the top one bit
    size = torch.where(ones.any(dim=1), highest + 1, 1).unsqueeze(1)  # (B, 1)
    i = torch.arange(N + 1).unsqueeze(0)  # (1, N + 1)
    targets = torch.where(i < size, total, torch.where(i == size, END, 0))
    return targets, i <= size


def _numbers(n: int, length: int, generator: torch.Generator) -> Tensor:
    """(n, length) inputs as Delétang samples them (see :class:`BinaryAdditionData`)."""
    positions = torch.arange(length)
    if length <= 2:
        value = torch.randint(0, 2**length - 1, (n, 1), generator=generator)  # (B, 1)
        return (value >> positions) & 1  # little-endian bits
    plus = torch.randint(1, length - 1, (n, 1), generator=generator)  # (B, 1): L bits of n
    bits = torch.randint(0, 2, (n, length), generator=generator)
    # Both numbers are >= 1: redraw every row with a zero one. Whole rows are redrawn, so
    # the rows kept are uniform over the pairs of non-zero numbers.
    while True:
        zero_n = (bits * (positions < plus)).sum(dim=1) == 0
        zero_m = (bits * (positions > plus)).sum(dim=1) == 0
        redo = zero_n | zero_m
        if not redo.any():
            break
        bits[redo] = torch.randint(0, 2, (int(redo.sum()), length), generator=generator)
    return torch.where(positions == plus, PLUS, bits)


class BinaryAdditionData(SyntheticDataModule):
    """Transduction: n PLUS m in little-endian binary -> n + m, on N + 1 empty positions.

    The context-sensitive task of Delétang et al. 2023
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/cs/binary_addition.py): an
    input of length N >= 3 is n in L bits (L uniform in 1..N-2), PLUS, m in the other N-1-L
    bits, both little-endian and uniform over 1..2^bits - 1 (so a number may end in zeros);
    an input of length N <= 2 is one number uniform over 0..2^N - 2 in N bits, no PLUS (their
    sampler's edge case, kept). Inputs are one-hot over 0, 1, PLUS. The output (N + 1
    positions) is the sum little-endian without trailing zeros, END, then zeros; only the
    positions up to END are scored (`mask`), all of them are trained on, as theirs. Worked
    example: 001+01101 (4 + 22) -> 26 -> output 01011 END 0000. Batch keys: `x` (B, N, 3)
    float one-hot, `y` (B, N + 1) long, `mask` (B, N + 1) bool. Length k x N: k x N tokens
    in, k x N + 1 out. Delétang trains with the uniform curriculum (`curriculum: true`).

    Args:
        length: tokens per training input (N; the longest one with the curriculum).
        n_train: training inputs.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "binary_addition"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "transduction"

    def __init__(self, length: int = 20, n_train: int = 5000, **kwargs) -> None:
        self.length = check_int("length", length, 1)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return 3  # bits 0 and 1, PLUS

    @property
    def out_features(self) -> int:
        return 3  # bits 0 and 1, END

    def output_length(self, length: int) -> int:
        return length + 1  # the sum has at most `length` bits, then END

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        tokens = _numbers(n, length, generator)
        y, mask = binary_addition_targets(tokens)
        x = F.one_hot(tokens, num_classes=3).float()  # (B, N, 3)
        return {"x": x, "y": y, "mask": mask}
