"""Random integers as a pure function of (seed, step, name, element): drawn on any device,
for K seeds in one call.

A fresh training batch (`lit_seq.data.fresh`) must be rebuilt from (seed, step) alone, drawn
on the device the model trains on, and a population of K members draws K batches at once,
each from its own seed. A ``torch.Generator`` serves none of that: it lives on one device,
holds one stream, and a CUDA one draws other digits than a CPU one. Here every random word
is a hash (murmur3's ``fmix32`` finaliser, run twice with a key between) of the element's
index within its member's tensor, keyed by the member's seed, the step and the name of the
draw ("bits", "actions", ...). The hash is integer arithmetic on int64 tensors kept below
2^32, no product overflowing (the multipliers taken as signed 32-bit numbers), so the same (seed, step) gives the same digits
on a CPU and a GPU, and a seed tensor of shape (K,) gives the K members' draws in one call.

Worked example: ``CounterSeeds([3]).at(7).integers("bits", 0, 2, (4, 5))`` is a (4, 5)
tensor of bits; ``CounterSeeds([3, 9]).at(7)`` gives (8, 5): rows 0..3 are the same bits,
rows 4..7 those of seed 9.

`HostRandom` has the same interface over a ``torch.Generator`` (the draw names ignored):
the fixed splits draw through it, so their digits are those of ``torch.randint`` as before.
"""

import zlib
from collections.abc import Sequence

import torch
from torch import Tensor

MASK32 = 0xFFFFFFFF
GOLDEN = 0x9E3779B9  # 2^32 / golden ratio: keeps a zero word from mixing to zero


def _times(x: Tensor | int, constant: int) -> Tensor | int:
    """``x * constant mod 2^32`` for x in [0, 2^32), in int64 without overflow: a constant
    c >= 2^31 is c - 2^32 mod 2^32, so |product| < 2^63, and ``& MASK32`` of a negative
    int64 (two's complement) is its residue mod 2^32."""
    return (x * (constant - 2**32 if constant >= 2**31 else constant)) & MASK32


def fmix32(x: Tensor) -> Tensor:
    """murmur3's 32-bit finaliser: a bijection of [0, 2^32) whose every output bit depends on
    every input bit. Example: fmix32(1) = 0x514E28B7."""
    x = x ^ (x >> 16)
    x = _times(x, 0x85EBCA6B)
    x = x ^ (x >> 13)
    x = _times(x, 0xC2B2AE35)
    return x ^ (x >> 16)


def _absorb(key: Tensor | int, word: Tensor | int) -> Tensor | int:
    """The key after mixing in one 32-bit word (tensors or Python ints alike)."""
    return fmix32(((key ^ word) + GOLDEN) & MASK32)


def _words_of(*parts: int) -> int:
    """Non-negative ints (each below 2^64) mixed into one 32-bit word, in Python."""
    key = GOLDEN
    for part in parts:
        key = _absorb(_absorb(key, part & MASK32), part >> 32)
    return key


def name_word(name: str) -> int:
    """A draw's name as a 32-bit word (CRC-32: the same in every process)."""
    return zlib.crc32(name.encode())


class CounterSeeds:
    """K members' data seeds, mixed once into a key each on ``device``; ``at(step)`` gives
    that step's :class:`CounterRandom` (so that a step copies nothing to the device).

    Args:
        seeds: the K members' data seeds, ints >= 0 (below 2^63).
        device: where the draws are made.
    """

    def __init__(self, seeds: Sequence[int], device: torch.device | str = "cpu") -> None:
        self.seeds = [int(seed) for seed in seeds]
        if not self.seeds or min(self.seeds) < 0:
            raise ValueError(f"seeds must be one or more ints >= 0, got {self.seeds}")
        self.to(device)

    def to(self, device: torch.device | str) -> "CounterSeeds":
        """The keys drawn on ``device`` from now on (one copy of K ints); returns self."""
        seeds = torch.tensor(self.seeds, dtype=torch.long, device=device)
        keys = _absorb(_absorb(GOLDEN, seeds & MASK32), seeds >> 32).unsqueeze(1)  # (K, 1)
        self.keys, self.second_keys = keys, _absorb(keys, GOLDEN)  # one a hash round
        self.device = keys.device
        return self

    def at(self, step: int) -> "CounterRandom":
        return CounterRandom(self, step)


class CounterRandom:
    """The random words of one training step of K seeds, on their device.

    ``integers(name, low, high, shape)`` draws ``shape`` per member, member after member
    along the first dimension: (K * shape[0], *shape[1:]). The element at flat index i of
    member k's block is a function of (seed k, step, name, i) only. Two draws of one step
    must have different names (the same name gives the same words).

    Args:
        seeds: the members' keys (:class:`CounterSeeds`).
        step: the training step (an int >= 0).
    """

    def __init__(self, seeds: CounterSeeds, step: int) -> None:
        self.seeds, self.step = seeds, int(step)
        self.device, self.members = seeds.device, len(seeds.seeds)

    def words(self, name: str, shape: Sequence[int]) -> Tensor:
        """Uniform 32-bit words in [0, 2^32) as int64: (K * shape[0], *shape[1:])."""
        shape = tuple(shape)
        size = 1
        for n in shape:
            size *= n
        # each round keyed by (seed, step, name): the seeds' part a tensor, the rest an int
        first = _words_of(self.step, name_word(name))
        second = _words_of(first, self.step)
        index = torch.arange(size, dtype=torch.long, device=self.device)  # (size,)
        words = fmix32(index ^ (self.seeds.keys ^ first))  # (K, size)
        words = fmix32(words ^ (self.seeds.second_keys ^ second))
        return words.reshape(self.members * shape[0], *shape[1:])

    def integers(self, name: str, low: int, high: int, shape: Sequence[int]) -> Tensor:
        """Integers uniform in [low, high): (K * shape[0], *shape[1:]), int64.

        A word w maps to low + floor(w * (high - low) / 2^32): off uniform by at most
        (high - low) / 2^32 per value (< 3e-8 for the alphabets here).
        """
        span = high - low
        if not 0 < span <= 2**31:
            raise ValueError(f"integers: high - low must be in 1..2^31, got {low=}, {high=}")
        return low + ((self.words(name, shape) * span) >> 32)


class HostRandom:
    """`CounterRandom`'s interface over a ``torch.Generator`` on the CPU (one member, the
    names ignored): ``integers`` is ``torch.randint`` in the order of the calls."""

    members = 1
    device = torch.device("cpu")

    def __init__(self, generator: torch.Generator) -> None:
        self.generator = generator

    def integers(self, name: str, low: int, high: int, shape: Sequence[int]) -> Tensor:
        return torch.randint(low, high, tuple(shape), generator=self.generator)


Random = CounterRandom | HostRandom  # what a task's draw takes
