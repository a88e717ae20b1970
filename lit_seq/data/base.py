"""What every synthetic task shares: an in-memory dataset, a batch loader and the DataModule base.

A task subclasses `SyntheticDataModule`, implements `_generate(n, length, generator)` and
exposes the sizes the CLI links into the model (`in_features`, `out_features`, `max_len`).
Everything here is generated in memory, so the data layer never touches the disk.
"""

from collections.abc import Sequence
from typing import ClassVar

import lightning as L
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

from lit_seq.checks import check_int

# Seeds of the splits are seed * _SPLIT_STRIDE + split index: one generator stream per split.
_SPLIT_STRIDE = 1000


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

    Args:
        n: examples in the dataset.
        batch_size: examples per batch; the last batch may be smaller.
        shuffle: shuffle each epoch (else the natural order, every epoch).
        seed: seed of the shuffle.
    """

    def __init__(self, n: int, batch_size: int, shuffle: bool, seed: int) -> None:
        self.n, self.batch_size, self.shuffle, self.seed = n, batch_size, shuffle, seed
        self.epoch = 0
        self._epoch_given = False  # set_epoch was called since the last pass began
        self._passes = 0
        self._position = (0, 0)  # (epoch, batches handed out) of the running pass
        self._skip = (-1, 0)  # (epoch, batches) already trained, from a checkpoint
        self._generator: torch.Generator | None = None
        self._drawn = (-1, None)  # (epoch, order) last drawn from the generator

    def __len__(self) -> int:
        return -(-self.n // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self._epoch_given = True

    def order(self, epoch: int) -> Tensor:
        """The indices of ``epoch`` in the order they are handed out."""
        if not self.shuffle:
            return torch.arange(self.n)
        drawn_epoch, order = self._drawn
        if self._generator is None or drawn_epoch > epoch:  # only ever drawn forwards
            self._generator = torch.Generator().manual_seed(self.seed)
            drawn_epoch = -1
        while drawn_epoch < epoch:  # a permutation or two per epoch: cheap, even far ahead
            order = torch.randperm(self.n, generator=self._generator)
            if self.n % self.batch_size:
                # the RandomSampler this replaces drew (and dropped) one more as it formed a
                # short last batch: drawn here too, every seed keeps the orders it had
                torch.randperm(self.n, generator=self._generator)
            drawn_epoch += 1
        self._drawn = (epoch, order)
        return order

    def __iter__(self):
        # a generator: this runs at the first batch, after Lightning's set_epoch for the epoch
        if self._passes and not self._epoch_given:
            self.epoch += 1
        self._passes += 1
        self._epoch_given = False
        epoch = self.epoch
        done = self._skip[1] if self._skip[0] == epoch else 0
        self._skip = (-1, 0)
        order = self.order(epoch).tolist()
        for start in range(done * self.batch_size, self.n, self.batch_size):
            done += 1
            self._position = (epoch, done)
            yield order[start : start + self.batch_size]

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


def batch_loader(dataset: Dataset, batch_size: int, shuffle: bool, seed: int) -> DataLoader:
    """A DataLoader that yields whole batches by indexing `dataset` with a list of indices.

    The data lives in memory and one fancy-index builds a batch, so worker processes would only
    add start-up and inter-process copy cost: `num_workers=0`. `batch_size=None` turns off the
    DataLoader's own batching because the sampler (:class:`EpochBatches`) already hands over
    a list of indices. Shuffling draws from a private generator seeded by `seed`: the order is
    reproducible, resumable and the global RNG is left alone. The DataLoader gets its own
    generator too, because each new iterator otherwise draws its worker base seed from the
    global RNG, even with no workers. The last batch may be smaller (`drop_last=False`).
    """
    batches = EpochBatches(len(dataset), batch_size, shuffle, seed)
    own_rng = torch.Generator().manual_seed(seed)
    return ResumableLoader(
        dataset, batch_size=None, sampler=batches, num_workers=0, generator=own_rng
    )


class SyntheticDataModule(L.LightningDataModule):
    """Base of the synthetic tasks: train/val/test splits plus length-generalisation test sets.

    Subclasses set `name`, `task_kind`, the split sizes `n_train`, `n_val`, `n_test`, the properties
    `train_length`, `in_features` and `out_features`, and implement `_generate`. Each split is
    drawn from its own generator (seed * 1000 + split index), so splits are independent draws
    and the global torch RNG is never used.

    Args:
        batch_size: examples per batch in every split.
        seed: seed of the data generation and of the training shuffle order.
        gen_factors: length-generalisation test sets at k x the training length, one per entry
            (integers >= 2, no repeats). Defaults to [2, 4]; [] disables them.
    """

    name: ClassVar[str] = ""  # the task's registry name, carried into every record
    task_kind: ClassVar[str] = ""  # which system trains it: a key of lit_seq.systems.SYSTEMS
    n_train: int
    n_val: int
    n_test: int

    def __init__(
        self, batch_size: int = 64, seed: int = 0, gen_factors: list[int] | None = None
    ) -> None:
        super().__init__()
        gen_factors = [2, 4] if gen_factors is None else list(gen_factors)
        for k in gen_factors:
            check_int("gen_factors entries", k, 2)
        if len(set(gen_factors)) != len(gen_factors):
            # Two equal factors would log two test sets under the same metric prefix.
            raise ValueError(f"gen_factors must not repeat, got {gen_factors}")
        self.batch_size = check_int("batch_size", batch_size, 1)
        self.seed = check_int("seed", seed, 0)
        self.gen_factors = gen_factors
        self.train_set: TensorDictDataset | None = None
        self.val_set: TensorDictDataset | None = None
        self.test_sets: list[TensorDictDataset] = []

    def set_split_sizes(self, n_train: int, n_val: int, n_test: int) -> None:
        """Validate and store the number of examples per split (each test set has n_test)."""
        self.n_train = check_int("n_train", n_train, 1)
        self.n_val = check_int("n_val", n_val, 1)
        self.n_test = check_int("n_test", n_test, 1)

    # ---- what a task provides ------------------------------------------------------------

    @property
    def train_length(self) -> int:
        """Sequence length of the training split (the longest one, for variable lengths)."""
        raise NotImplementedError

    @property
    def in_features(self) -> int:
        """Input size the model needs: channels, or the vocabulary size for token inputs."""
        raise NotImplementedError

    @property
    def out_features(self) -> int:
        """Output size the model needs: classes, 1 per step, or the vocabulary size."""
        raise NotImplementedError

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        """Draw `n` examples of (maximum) sequence length `length` from `generator` only."""
        raise NotImplementedError

    # ---- sizes derived from the arguments, available before setup -----------------------

    @property
    def test_lengths(self) -> list[int]:
        """Sequence length of each test set: the training length, then k x it per gen factor."""
        return [self.train_length] + [k * self.train_length for k in self.gen_factors]

    @property
    def test_prefixes(self) -> list[str]:
        """Metric key prefix of each test set, in `test_dataloader` order."""
        return ["test"] + [f"test_len{n}" for n in self.test_lengths[1:]]

    @property
    def max_len(self) -> int:
        """The longest sequence any split contains (sizes positional tables of the model)."""
        return max(self.test_lengths)

    # ---- Lightning hooks ------------------------------------------------------------------

    def setup(self, stage: str | None = None) -> None:
        """Generate every split once; later calls (fit, then test) reuse them."""
        if self.train_set is not None:
            return
        split_lengths = [self.train_length, self.train_length, *self.test_lengths]
        split_sizes = [self.n_train, self.n_val] + [self.n_test] * len(self.test_lengths)
        splits = []
        for index, (n, length) in enumerate(zip(split_sizes, split_lengths, strict=True)):
            generator = torch.Generator().manual_seed(self.seed * _SPLIT_STRIDE + index)
            splits.append(TensorDictDataset(self._generate(n, length, generator)))
        # On a GPU the whole (small) dataset lives on the device: a batch is then one index
        # on the device, with no host-to-device copy per step.
        device = self._training_device()
        if device.type != "cpu":
            splits = [split.to(device) for split in splits]
        self.train_set, self.val_set, *self.test_sets = splits

    def _training_device(self) -> torch.device:
        trainer = getattr(self, "trainer", None)
        if trainer is None:
            return torch.device("cpu")
        return trainer.strategy.root_device

    def train_dataloader(self) -> DataLoader:
        return batch_loader(self._ready(self.train_set), self.batch_size, True, self.seed)

    def val_dataloader(self) -> DataLoader:
        return batch_loader(self._ready(self.val_set), self.batch_size, False, self.seed)

    def test_dataloader(self) -> list[DataLoader]:
        """One loader per test set, in the order of `test_prefixes`."""
        self._ready(self.train_set)
        return [batch_loader(s, self.batch_size, False, self.seed) for s in self.test_sets]

    def _ready(self, dataset: TensorDictDataset | None) -> TensorDictDataset:
        if dataset is None:
            raise RuntimeError(f"{type(self).__name__}: call setup() before asking for loaders")
        return dataset
