"""`binary_addition`: add two little-endian binary numbers (Delétang et al. 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.counter_random import Random
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
    plus = torch.where(is_plus.any(dim=1), is_plus.int().argmax(dim=1), N).unsqueeze(1)  # (B, 1)
    t = torch.arange(N + 1, device=tokens.device).unsqueeze(0)  # (1, N + 1) bit positions
    padded = torch.cat([tokens, tokens.new_zeros(B, 1)], dim=1)  # (B, N + 1)
    a = torch.where(t < plus, padded, 0)  # (B, N + 1) the first number's bit t
    at = plus + 1 + t  # where the second number's bit t sits (past the end: none)
    b = torch.where(at < N, padded.gather(1, at.clamp(max=N)), 0)
    # Schoolbook addition without a loop: the carry into bit t is the carry out of the last
    # bit below t that does not pass a carry on (a == b): 1 if both are 1, 0 if both are 0.
    passes = a != b
    last = torch.where(passes, -1, t).cummax(dim=1).values  # (B, N + 1) last stop <= t
    carry_out = torch.where(last >= 0, a.gather(1, last.clamp(min=0)), 0)  # out of bit t
    carry_in = torch.cat([carry_out.new_zeros(B, 1), carry_out[:, :-1]], dim=1)
    total = (a + b + carry_in) % 2  # (B, N + 1) little-endian sum bits
    # the sum's length: past its highest one bit ("0", one symbol, for a zero sum)
    ones = total == 1
    highest = N - ones.flip(dims=[1]).int().argmax(dim=1)  # (B,) index of the top one bit
    size = torch.where(ones.any(dim=1), highest + 1, 1).unsqueeze(1)  # (B, 1)
    targets = torch.where(t < size, total, torch.where(t == size, END, 0))
    return targets, t <= size


def drawn_operands(n: int, length: int, generator: torch.Generator) -> Tensor:
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


def trailing_zeros(words: Tensor) -> Tensor:
    """The trailing zero bits of each 32-bit word (32 for 0): the lowest one bit isolated,
    its exponent read exactly from a float32 (a power of two <= 2^31). Example: 12 -> 2."""
    lowest = (words & -words).float()
    exponent = torch.frexp(lowest).exponent.long() - 1  # 2^e = 0.5 * 2^(e + 1)
    return torch.where(words == 0, 32, exponent)


def sampled_operands(n: int, length: int, rng: Random) -> Tensor:
    """(n, length) inputs with the distribution of `drawn_operands`, without its redraws.

    A number uniform over 1..2^P - 1 has its top one bit at P - 1 - j with probability
    2^-j / (1 - 2^-P) (j = 0..P - 1), then uniform bits below it and zeros above: j is
    G mod P for G geometric (P(G = g) = 2^-(g + 1), the trailing zeros of random words,
    two words a number, so exact but for a 2^-64 chance).
    """
    if length <= 2:
        value = rng.integers("value", 0, 2**length - 1, (n, 1))  # (B, 1)
        return (value >> torch.arange(length, device=rng.device)) & 1  # little-endian bits
    t = torch.arange(length, device=rng.device)  # (L,) positions
    # one draw a row: L bits (a word's top bit), PLUS's index, 2 words for each number's G
    words = rng.words("row", (n, length + 5))  # (B, L + 5)
    bits = words[:, :length] >> 31  # (B, L)
    plus = 1 + ((words[:, length : length + 1] * (length - 2)) >> 32)  # (B, 1) in 1..L-2
    zeros = trailing_zeros(words[:, length + 1 :]).unflatten(1, (2, 2))  # (B, 2, 2 words)
    low, high = zeros.unbind(dim=2)  # (B, 2) each
    geometric = torch.where(low < 32, low, 32 + high)  # (B, 2)
    sizes = torch.cat([plus, length - 1 - plus], dim=1)  # (B, 2) bits of n and of m
    top = sizes - 1 - geometric % sizes  # (B, 2) the index of each number's top one bit
    second = t > plus  # (B, L) in m (else in n, or PLUS)
    index = torch.where(second, t - plus - 1, t)  # (B, L) the bit's index in its number
    top_here = top.gather(1, second.long())  # (B, L) its number's top bit
    number_bits = torch.where(index < top_here, bits, (index == top_here).long())
    return torch.where(t == plus, PLUS, number_bits)


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
        """The fixed splits: `drawn_operands`' redraws on the host (their digits as ever)."""
        return self._examples(drawn_operands(n, length, generator))

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        """Fresh batches: the same distribution drawn on ``rng``'s device, no redraws."""
        return self._examples(sampled_operands(n, length, rng))

    def _examples(self, tokens: Tensor) -> dict[str, Tensor]:
        y, mask = binary_addition_targets(tokens)
        x = F.one_hot(tokens, num_classes=3).float()  # (B, N, 3)
        return {"x": x, "y": y, "mask": mask}
