"""Loading in-memory splits: a dict-of-tensors dataset, one-length groups of them, and the
seeded, resumable batch order that every split's DataLoader draws from.

One fancy-index per tensor builds a whole batch; the order of the batches is a pure function
of (seed, epoch), so a fit resumed mid-epoch sees the batches an uninterrupted one would.
"""

from collections.abc import Callable, Sequence

import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler


class TensorDictDataset(Dataset):
    """A dict of tensors sharing their first dimension, indexed all at once.

    `dataset[idx]` accepts an int, a list or a LongTensor of indices, so a whole batch is one
    fancy-index per tensor instead of a per-sample collate.

    Args:
        tensors: name -> tensor; every tensor has the same length along dim 0.
    """

    def __init__(self, tensors: dict[str, Tensor]) -> None:
        lengths = {name: len(t) for name, t in tensors.items()}
        if not lengths or len(set(lengths.values())) != 1:
            raise ValueError(f"tensors must be non-empty with equal lengths, got {lengths}")
        self.tensors = tensors
        self._len = next(iter(lengths.values()))

    def to(self, device: torch.device | str) -> "TensorDictDataset":
        """Move every tensor to `device` (in place); returns self."""
        self.tensors = {name: t.to(device) for name, t in self.tensors.items()}
        return self

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, idx: int | Sequence[int] | Tensor) -> dict[str, Tensor]:
        if isinstance(idx, Sequence):
            idx = torch.as_tensor(idx, dtype=torch.long)
        return {name: t[idx] for name, t in self.tensors.items()}


class GroupedTensorDicts(Dataset):
    """Several :class:`TensorDictDataset` s behind one index, e.g. one per sequence length.

    Example ``i`` of the whole is example ``i - offset`` of the group whose index range
    holds it, groups in the order given. A batch must come from one group (their tensors
    need not share any shape beyond dim 0), which :class:`EpochBatches` with ``groups``
    guarantees.

    Args:
        groups: the datasets, in index order.
    """

    def __init__(self, groups: list[TensorDictDataset]) -> None:
        if not groups:
            raise ValueError("groups must hold at least one dataset, got []")
        self.groups = groups
        self.sizes = [len(g) for g in groups]
        self._starts = torch.tensor([0, *self.sizes]).cumsum(0)  # (G + 1,)

    def to(self, device: torch.device | str) -> "GroupedTensorDicts":
        """Move every group to `device` (in place); returns self."""
        self.groups = [g.to(device) for g in self.groups]
        return self

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, idx: int | Sequence[int] | Tensor) -> dict[str, Tensor]:
        idx = torch.as_tensor(idx, dtype=torch.long)
        group = torch.searchsorted(self._starts, idx, right=True) - 1  # group of each index
        first = int(group.min())
        if int(group.max()) != first:
            raise ValueError(f"a batch must come from one group, got groups {group.tolist()}")
        return self.groups[first][idx - self._starts[first]]


class EpochBatches(Sampler[list[int]]):
    """Batches of indices whose order is a pure function of (seed, epoch), resumable mid-epoch.

    Epoch ``e``'s order is drawn after those of epochs ``0..e-1`` from a generator seeded
    with ``seed`` (the orders the seeded ``RandomSampler`` this replaces gave a fit, epoch
    after epoch), so any epoch's order can be rebuilt in a fresh process: a resumed fit must
    not replay epoch 0 from its start, as a re-created ``RandomSampler`` would.
    Lightning calls :meth:`set_epoch` as each epoch starts; without it (a hand-written loop)
    each new pass is the next epoch. :meth:`state_dict` is the running epoch and how many of
    its batches were handed out; after :meth:`load_state_dict` the pass over that epoch skips
    them, so a fit resumed mid-epoch trains on exactly the batches an uninterrupted one would.
    The position is read while a pass is suspended, which is exact because Lightning fetches
    no batch ahead from a loader of known length.

    With ``groups`` (the curriculum's lengths) the indices are consecutive groups of those
    sizes and no batch mixes two: each epoch shuffles within every group, cuts each group
    into batches (its last one may be smaller), then shuffles the order of all the batches.
    Example: groups [3, 2], batch_size 2 -> batches such as [4, 3], [1, 0], [2].

    Args:
        n: examples in the dataset.
        batch_size: examples per batch; the last batch may be smaller.
        shuffle: shuffle each epoch (else the natural order, every epoch).
        seed: seed of the shuffle.
        groups: sizes of consecutive index groups that a batch never mixes (summing to n);
            None: one group, the plain shuffle.
    """

    def __init__(
        self, n: int, batch_size: int, shuffle: bool, seed: int, groups: list[int] | None = None
    ) -> None:
        if groups is not None and sum(groups) != n:
            raise ValueError(f"groups must sum to n={n}, got {groups} (sum {sum(groups)})")
        self.n, self.batch_size, self.shuffle, self.seed = n, batch_size, shuffle, seed
        self.groups = groups
        self.epoch = 0
        self._epoch_given = False  # set_epoch was called since the last pass began
        self._passes = 0
        self._position = (0, 0)  # (epoch, batches handed out) of the running pass
        self._skip = (-1, 0)  # (epoch, batches) already trained, from a checkpoint
        self._generator: torch.Generator | None = None
        self._drawn = (-1, None)  # (epoch, batches) last drawn from the generator

    def __len__(self) -> int:
        if self.groups is None:
            return -(-self.n // self.batch_size)
        return sum(-(-size // self.batch_size) for size in self.groups)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self._epoch_given = True

    def batches(self, epoch: int) -> list[list[int]]:
        """The batches of ``epoch`` (lists of indices) in the order they are handed out."""
        if not self.shuffle:
            return self._in_groups(lambda start, size: torch.arange(start, start + size))
        drawn_epoch, batches = self._drawn
        if self._generator is None or drawn_epoch > epoch:  # only ever drawn forwards
            self._generator = torch.Generator().manual_seed(self.seed)
            drawn_epoch = -1
        while drawn_epoch < epoch:  # a few permutations per epoch: cheap, even far ahead
            batches = self._draw(self._generator)
            drawn_epoch += 1
        self._drawn = (epoch, batches)
        return batches

    def _draw(self, generator: torch.Generator) -> list[list[int]]:
        """One epoch's shuffled batches, drawn from ``generator``."""
        if self.groups is None:
            order = torch.randperm(self.n, generator=generator)
            if self.n % self.batch_size:
                # the RandomSampler this replaces drew (and dropped) one more as it formed a
                # short last batch: drawn here too, every seed keeps the orders it had
                torch.randperm(self.n, generator=generator)
            return self._cut(order)
        # shuffle inside each group and cut it into batches, then shuffle the batch order:
        # the lengths come in random order, each batch stays inside its group
        batches = self._in_groups(
            lambda start, size: start + torch.randperm(size, generator=generator)
        )
        return [batches[i] for i in torch.randperm(len(batches), generator=generator)]

    def _in_groups(self, order_of: Callable[[int, int], Tensor]) -> list[list[int]]:
        """Group after group, its indices ordered by ``order_of(start, size)``, in batches."""
        batches, start = [], 0
        for size in self.groups or [self.n]:
            batches += self._cut(order_of(start, size))
            start += size
        return batches

    def _cut(self, order: Tensor) -> list[list[int]]:
        order = order.tolist()
        return [order[s : s + self.batch_size] for s in range(0, len(order), self.batch_size)]

    def __iter__(self):
        # a generator: this runs at the first batch, after Lightning's set_epoch for the epoch
        if self._passes and not self._epoch_given:
            self.epoch += 1
        self._passes += 1
        self._epoch_given = False
        epoch = self.epoch
        done = self._skip[1] if self._skip[0] == epoch else 0
        self._skip = (-1, 0)
        batches = self.batches(epoch)
        for batch in batches[done:]:
            done += 1
            self._position = (epoch, done)
            yield batch

    def state_dict(self) -> dict[str, int]:
        epoch, batches = self._position if self._passes else (self.epoch, 0)
        return {"epoch": epoch, "batches": batches}

    def load_state_dict(self, state: dict[str, int]) -> None:
        epoch, batches = int(state["epoch"]), int(state["batches"])
        if batches >= len(self):  # the epoch was finished: the next one starts afresh
            epoch, batches = epoch + 1, 0
        self.set_epoch(epoch)
        self._skip = (epoch, batches)


class ResumableLoader(DataLoader):
    """A DataLoader whose position Lightning saves in every checkpoint and restores on resume.

    Lightning does so for any train loader with ``state_dict`` / ``load_state_dict``; the
    position is that of the :class:`EpochBatches` it draws from.
    """

    def state_dict(self) -> dict[str, int]:
        return self.sampler.state_dict()

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.sampler.load_state_dict(state)


def batch_loader(
    dataset: Dataset, batch_size: int, shuffle: bool, seed: int, groups: list[int] | None = None
) -> DataLoader:
    """A DataLoader that yields whole batches by indexing `dataset` with a list of indices.

    The data lives in memory and one fancy-index builds a batch, so worker processes would only
    add start-up and inter-process copy cost: `num_workers=0`. `batch_size=None` turns off the
    DataLoader's own batching because the sampler (:class:`EpochBatches`) already hands over
    a list of indices. Shuffling draws from a private generator seeded by `seed`: the order is
    reproducible, resumable and the global RNG is left alone. The DataLoader gets its own
    generator too, because each new iterator otherwise draws its worker base seed from the
    global RNG, even with no workers. The last batch may be smaller (`drop_last=False`).
    `groups` (sizes of consecutive index groups, e.g. a :class:`GroupedTensorDicts`'s
    ``sizes``) keeps every batch inside one group.
    """
    batches = EpochBatches(len(dataset), batch_size, shuffle=shuffle, seed=seed, groups=groups)
    own_rng = torch.Generator().manual_seed(seed)
    return ResumableLoader(
        dataset, batch_size=None, sampler=batches, num_workers=0, generator=own_rng
    )
