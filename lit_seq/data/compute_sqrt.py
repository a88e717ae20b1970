"""`compute_sqrt`: the integer square root of a big-endian binary number (Delétang 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.binary_addition import trailing_zeros
from lit_seq.data.counter_random import Random
from lit_seq.util.checks import check_int


def _subtract(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """a - b mod 2^W for little-endian bits (B, W), and whether it borrowed past the top
    (a < b), with no loop: the borrow into bit t is the borrow out of the last bit below t
    where a and b differ (a 0 under a 1 borrows; a 1 over a 0 does not)."""
    t = torch.arange(a.shape[1], device=a.device)
    last = torch.where(a != b, t, -1).cummax(dim=1).values  # (B, W) last difference <= t
    borrow_out = torch.where(last >= 0, b.gather(1, last.clamp(min=0)), 0)  # out of bit t
    borrow_in = F.pad(borrow_out[:, :-1], (1, 0))
    return a ^ b ^ borrow_in, borrow_out[:, -1] == 1


def compute_sqrt_targets(tokens: Tensor) -> Tensor:
    """floor(sqrt(n)) in ceil(N / 2) big-endian bits of the big-endian bits n: (B, N) ->
    (B, ceil(N / 2)).

    The schoolbook (digit-by-digit) square root, one step per output bit, vectorised over
    the batch: bring down the next two bits of n into the remainder r (r = 4 r + pair), try
    the next root bit (r >= 4 root + 1?), and subtract where it fits. Both registers stay
    below 2^(ceil(N / 2) + 2). Examples: 100101 = 37 -> 6 -> 110 (their docstring writes
    101, which is 5; their code gives 110); 111 = 7 -> 2 -> 10; 0110 = 6 -> 2 -> 10; 1 -> 1.
    """
    B, N = tokens.shape
    h = (N + 1) // 2  # the root's bits
    pairs = F.pad(tokens, (2 * h - N, 0)).unflatten(1, (h, 2))  # (B, h, 2) big-endian pairs
    width = h + 2
    remainder = tokens.new_zeros(B, width)  # little-endian registers
    root = tokens.new_zeros(B, width)
    one = torch.ones_like(root[:, :1])
    for i in range(h):
        remainder = torch.cat([pairs[:, i].flip(dims=[1]), remainder[:, :-2]], dim=1)
        trial = torch.cat([one, 0 * one, root[:, :-2]], dim=1)  # 4 root + 1
        difference, short = _subtract(remainder, trial)  # short: remainder < trial
        remainder = torch.where(short.unsqueeze(1), remainder, difference)
        root = torch.cat([(~short).long().unsqueeze(1), root[:, :-1]], dim=1)  # 2 root + bit
    return root[:, :h].flip(dims=[1])


def _numbers(n: int, length: int, generator: torch.Generator) -> Tensor:
    """(n, length) big-endian numbers uniform over 1..2^length - 1, as Delétang's: uniform
    bits, every all-zero row redrawn whole (so the rows kept are uniform over the rest)."""
    bits = torch.randint(0, 2, (n, length), generator=generator)
    while True:
        zero = bits.sum(dim=1) == 0
        if not zero.any():
            return bits
        bits[zero] = torch.randint(0, 2, (int(zero.sum()), length), generator=generator)


def _sampled_numbers(n: int, length: int, rng: Random) -> Tensor:
    """(n, length) numbers with the distribution of `_numbers`, without its redraws.

    A number uniform over 1..2^L - 1 has j leading zeros with probability 2^-(j + 1) /
    (1 - 2^-L) (j = 0..L - 1), then a one and uniform bits: j is G mod L for G geometric
    (P(G = g) = 2^-(g + 1), the trailing zeros of random words, two words a number, so
    exact but for a 2^-64 chance), as binary_addition draws its numbers.
    """
    words = rng.words("row", (n, length + 2))  # (B, L + 2): L bits, 2 words for G
    bits = words[:, :length] >> 31  # a word's top bit
    low, high = trailing_zeros(words[:, length:]).unbind(dim=1)  # (B,) each
    lead = (torch.where(low < 32, low, 32 + high) % length).unsqueeze(1)  # (B, 1)
    t = torch.arange(length, device=rng.device)
    return torch.where(t < lead, 0, torch.where(t == lead, 1, bits))


class ComputeSqrtData(SyntheticDataModule):
    """Transduction: a big-endian binary number -> its integer square root, in ceil(N / 2) bits.

    The context-sensitive task of Delétang et al. 2023
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/cs/compute_sqrt.py): the input
    is a number uniform over 1..2^N - 1 in N big-endian bits (leading zeros kept), one-hot;
    the output is floor(sqrt(n)) in ceil(N / 2) big-endian bits (leading zeros kept), every
    position scored (`mask` all True). Worked example: 100101 = 37 -> 6 -> 110 (their
    docstring's example, whose 101 their code does not give); at N = 1 the input is always
    1 -> 1. Batch keys: `x` (B, N, 2) float one-hot, `y`
    (B, ceil(N / 2)) long, `mask` of `y`'s shape. Length k x N: k x N bits in, ceil(k x N /
    2) out. Delétang trains with the uniform curriculum (`curriculum: true`).

    Args:
        length: bits per training number (N; the longest one with the curriculum).
        n_train: training numbers.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "compute_sqrt"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "transduction"

    def __init__(self, length: int = 20, n_train: int = 5000, **kwargs) -> None:
        self.length = check_int("length", length, 1)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return 2  # bits

    @property
    def out_features(self) -> int:
        return 2  # bits

    def output_length(self, length: int) -> int:
        return (length + 1) // 2  # the root of an N-bit number has ceil(N / 2) bits

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        """The fixed splits: `_numbers`' redraws on the host."""
        return self._examples(_numbers(n, length, generator))

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        """Fresh batches: the same distribution drawn on ``rng``'s device, no redraws."""
        return self._examples(_sampled_numbers(n, length, rng))

    def _examples(self, bits: Tensor) -> dict[str, Tensor]:
        y = compute_sqrt_targets(bits)  # (B, ceil(N / 2))
        x = F.one_hot(bits, num_classes=2).float()  # (B, N, 2)
        return {"x": x, "y": y, "mask": torch.ones_like(y, dtype=torch.bool)}
