"""Fresh training data at every step, as in Delétang et al. 2023's training loop.

Their loop (experiments/training.py) draws a new batch for every optimizer step, at a length
its curriculum draws uniformly from 1..N; no example is ever seen twice. Here training batch
number ``s`` (counted over the whole fit, not per epoch) is a pure function of (seed, s):

- its length is drawn from a generator seeded by ``s`` alone, uniformly over the task's
  training lengths (``shortest_length .. N`` with the curriculum, else just N). Every seed
  of a grid meets the same length at the same step, so K seeds can take their one-length
  batches together (a population); the lengths are still i.i.d. uniform over the steps;
- its examples are drawn from (seed, s) alone. A task that writes its draw as ``_sample``
  (the nine Delétang tasks) draws them as vectorised torch on the training device from
  counter-based random words (`lit_seq.data.counter_random`): nothing is copied to the
  device per step, a GPU and a CPU draw the same digits, and a population draws its K
  members' batches in one call (:meth:`FreshBatches.for_members`), member k's equal to its
  solo run's. Any other task draws on the host from a ``torch.Generator`` seeded by
  (seed, s), and its batch is moved to the device with the step's.

The device draw replaced the host one for the Delétang tasks (issue 41): the same
distribution and labels, other digits per seed, so fits of those tasks with
``sampling: fresh`` committed before it (docs/results/chomsky_faithful/) drew other
batches than a rerun now does. The lengths per step are unchanged.

So a fit resumed from a checkpoint draws exactly the batches an unbroken fit would: the
loader saves its position as :class:`~lit_seq.data.loaders.EpochBatches` does, and batch
``s`` is rebuilt from ``s``. An "epoch" is only a count of steps here (``per_epoch``).
"""

import hashlib
from collections.abc import Callable, Iterator

import torch
from torch import Tensor
from torch.utils.data import Dataset, Sampler

from lit_seq.data.counter_random import CounterRandom, CounterSeeds
from lit_seq.data.loaders import EpochBatches, ResumableLoader

Draw = Callable[[int, int, torch.Generator], dict[str, Tensor]]
Sample = Callable[[int, int, CounterRandom], dict[str, Tensor]]


def step_generator(stream: str, *keys: int) -> torch.Generator:
    """A generator seeded by ``stream`` and ``keys`` only, apart from every split's stream
    (those are seeded seed * 1000 + split index)."""
    text = " ".join(["lit_seq fresh", stream, *map(str, keys)])
    digest = hashlib.sha256(text.encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


class FreshBatches(Dataset):
    """The training batches of a fit, drawn on demand: ``batches[s]`` is batch number ``s``.

    Example: lengths [1, 2, 3], batch_size 4 -> ``batches[7]`` holds 4 new examples of the
    length that step 7 draws (the same for every seed), and ``batches[7]`` again gives the
    same tensors. ``batches.for_members([0, 5])[7]`` holds (2, 4, ...) tensors: seed 0's
    batch 7, then seed 5's.

    Args:
        draw: ``draw(n, length, generator)`` -> the task's batch tensors, n rows each (the
            task's ``draw`` with ``split="train"``): the host draw.
        batch_size: examples per batch.
        lengths: the training lengths, drawn uniformly (one per batch).
        seed: the data seed.
        sample: ``sample(n, length, rng)`` -> the batch tensors drawn from a
            :class:`CounterRandom` on its device (the task's ``_sample``), or None for a
            task that draws on the host only.
    """

    def __init__(
        self,
        draw: Draw,
        batch_size: int,
        lengths: list[int],
        seed: int,
        sample: Sample | None = None,
    ) -> None:
        if not lengths:
            raise ValueError("lengths must hold at least one training length, got []")
        self._draw, self.batch_size, self.lengths, self.seed = draw, batch_size, lengths, seed
        self._sample = sample
        self.members: list[int] | None = None  # the seeds of a population's batches
        self._seeds = CounterSeeds([seed]) if sample is not None else None

    @property
    def on_device(self) -> bool:
        """Whether batches are drawn on the training device (the task has a ``_sample``)."""
        return self._seeds is not None

    def length_at(self, step: int) -> int:
        """The sequence length of batch ``step``: uniform over ``lengths``, from ``step`` only."""
        if len(self.lengths) == 1:
            return self.lengths[0]
        pick = torch.randint(len(self.lengths), (), generator=step_generator("length", step))
        return self.lengths[int(pick)]

    def __getitem__(self, step: int) -> dict[str, Tensor]:
        length = self.length_at(step)
        if self._seeds is None:
            generator = step_generator("data", self.seed, step)
            return self._draw(self.batch_size, length, generator)
        batch = self._sample(self.batch_size, length, self._seeds.at(step))
        if self.members is None:
            return batch
        shape = (len(self.members), self.batch_size)
        return {name: tensor.unflatten(0, shape) for name, tensor in batch.items()}

    def for_members(self, seeds: list[int]) -> "FreshBatches":
        """These batches for K members of data seeds ``seeds``, drawn in one call per step on
        this device: item ``s`` is every member's batch ``s`` stacked, (K, batch_size, ...)."""
        if self._seeds is None:
            raise ValueError("for_members: this task draws on the host only (it has no _sample)")
        together = FreshBatches(self._draw, self.batch_size, self.lengths, seeds[0], self._sample)
        together.members = list(seeds)
        together._seeds = CounterSeeds(seeds, self._seeds.device)
        return together

    def to(self, device: torch.device | str) -> "FreshBatches":
        """Draw on ``device`` from now on (a host draw is moved with the step's batch)."""
        if self._seeds is not None:
            self._seeds.to(device)
        return self


class FreshSteps(Sampler[int]):
    """The batch numbers a fresh training loader hands out: epoch e is e * per_epoch, ...,
    (e + 1) * per_epoch - 1, resumable mid-epoch.

    It counts through an :class:`EpochBatches` of ``per_epoch`` one-item batches in order,
    which keeps the epoch and the position exactly as a fixed training split's loader does
    (Lightning's ``set_epoch``, ``state_dict``, ``load_state_dict``).

    Args:
        per_epoch: batches in an epoch.
    """

    def __init__(self, per_epoch: int) -> None:
        self.per_epoch = per_epoch
        self.position = EpochBatches(per_epoch, batch_size=1, shuffle=False, seed=0)

    def __len__(self) -> int:
        return self.per_epoch

    def set_epoch(self, epoch: int) -> None:
        self.position.set_epoch(epoch)

    def __iter__(self) -> Iterator[int]:
        for (index,) in self.position:
            # the running epoch, as the position it saves has it
            yield self.position.state_dict()["epoch"] * self.per_epoch + index

    def state_dict(self) -> dict[str, int]:
        return self.position.state_dict()

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.position.load_state_dict(state)


def fresh_loader(batches: FreshBatches, per_epoch: int) -> ResumableLoader:
    """A loader of ``batches`` that Lightning checkpoints and resumes like any training loader.

    ``batch_size=None``: each item of ``batches`` is already a whole batch. No workers: a
    batch is a few tensor operations. Its own generator keeps the global RNG untouched.
    """
    return ResumableLoader(
        batches,
        batch_size=None,
        sampler=FreshSteps(per_epoch),
        num_workers=0,
        generator=torch.Generator().manual_seed(batches.seed),
    )
