"""What every synthetic task shares: the DataModule base, its splits and the length curriculum.

The in-memory datasets and the resumable batch order live in `lit_seq.data.loaders` (and are
re-exported here). A task subclasses `SyntheticDataModule`, implements `_generate(n, length, generator)` and
exposes the sizes the CLI links into the model (`in_features`, `out_features`, `max_len`).
Everything here is generated in memory, so the data layer never touches the disk.

With ``curriculum=True`` (Delétang et al. 2023's uniform curriculum) the training split holds
one group of examples per length ``shortest_length .. train_length`` and every training batch is
drawn from one group: each batch has one length, and an epoch covers every length.
"""

from typing import ClassVar

import lightning as L
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from lit_seq.data.loaders import (  # re-exported: the loader pieces every task shares
    EpochBatches,
    GroupedTensorDicts,
    ResumableLoader,
    TensorDictDataset,
    batch_loader,
)
from lit_seq.util.checks import check_int

__all__ = [
    "EpochBatches",
    "GroupedTensorDicts",
    "ResumableLoader",
    "SyntheticDataModule",
    "TensorDictDataset",
    "batch_loader",
]

# Seeds of the splits are seed * _SPLIT_STRIDE + split index: one generator stream per split.
_SPLIT_STRIDE = 1000
SPLITS = ("train", "val", "test")  # by split index; every index from 2 on is a test set


class SyntheticDataModule(L.LightningDataModule):
    """Base of the synthetic tasks: train/val/test splits plus length-generalisation test sets.

    Subclasses set `name`, `task_kind`, the split sizes `n_train`, `n_val`, `n_test`, the properties
    `train_length`, `in_features` and `out_features`, and implement `_generate`. Each split is
    drawn from its own generator (seed * 1000 + split index), so splits are independent draws
    and the global torch RNG is never used.

    The curriculum (Delétang et al. 2023, experiments/curriculum.py ``UniformCurriculum``,
    which draws the length of every training batch uniformly from 1..N): with
    ``curriculum=True`` the training split is `n_train` examples spread evenly over the
    lengths `shortest_length` .. `train_length` (N), drawn length after length from the
    training split's generator, and each training batch is drawn from one length, in random
    order; so every length is seen every epoch, with no padding in any batch. (Delétang draws
    each step's length i.i.d. with a fresh batch; here the lengths are stratified per epoch
    and the data are a fixed set, like every other split.) A task whose shortest valid
    sequence is longer than 1 says so in `shortest_length` (default 1). Validation and test
    sets keep their fixed lengths. Example: N = 4, n_train = 8, batch_size 2 -> 2 examples
    each at lengths 1, 2, 3, 4, one batch per length, the four batches in a seeded random
    order. A task offers it by taking a `curriculum` argument and handing it to this
    constructor.

    Args:
        batch_size: examples per batch in every split.
        seed: seed of the data generation and of the training shuffle order.
        gen_factors: length-generalisation test sets at k x the training length, one per entry
            (integers >= 2, no repeats). Defaults to [2, 4]; [] disables them.
        curriculum: train on every length shortest_length..train_length, one length per batch.
    """

    name: ClassVar[str] = ""  # the task's registry name, carried into every record
    task_kind: ClassVar[str] = ""  # which system trains it: a key of lit_seq.systems.SYSTEMS
    n_train: int
    n_val: int
    n_test: int

    def __init__(
        self,
        batch_size: int = 64,
        seed: int = 0,
        gen_factors: list[int] | None = None,
        curriculum: bool = False,
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
        if not isinstance(curriculum, bool):
            raise ValueError(f"curriculum must be true or false, got {curriculum!r}")
        self.curriculum = curriculum
        self.train_set: TensorDictDataset | GroupedTensorDicts | None = None
        self.val_set: TensorDictDataset | None = None
        self.test_sets: list[TensorDictDataset] = []

    def set_split_sizes(self, n_train: int, n_val: int, n_test: int) -> None:
        """Validate and store the number of examples per split (each test set has n_test).

        Call it once the task's own fields are set: the curriculum needs at least one
        training example per length.
        """
        lengths = len(self.train_lengths)
        allowed = f">= {lengths} (one per curriculum length)" if lengths > 1 else None
        self.n_train = check_int("n_train", n_train, lengths, allowed=allowed)
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

    @property
    def shortest_length(self) -> int:
        """The shortest valid sequence: where the curriculum starts (1 unless a task says)."""
        return 1

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        """Draw `n` examples of (maximum) sequence length `length` from `generator` only."""
        raise NotImplementedError

    def _generate_split(
        self, split: str, n: int, length: int, generator: torch.Generator
    ) -> dict[str, Tensor]:
        """The examples of one fixed-length split (``train``, ``val`` or ``test``; every test
        set is ``test``): `_generate`, unless a task keeps its splits apart (echo holds
        sequences out of training so that its training-length test set is unseen)."""
        return self._generate(n, length, generator)

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
    def train_lengths(self) -> list[int]:
        """The lengths of the training split: shortest_length..train_length with the curriculum."""
        if self.curriculum:
            return list(range(self.shortest_length, self.train_length + 1))
        return [self.train_length]

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
            if index == 0 and self.curriculum:
                splits.append(self._curriculum_split(generator))
            else:
                split = SPLITS[min(index, len(SPLITS) - 1)]
                splits.append(TensorDictDataset(self._generate_split(split, n, length, generator)))
        # On a GPU the whole (small) dataset lives on the device: a batch is then one index
        # on the device, with no host-to-device copy per step.
        device = self._training_device()
        if device.type != "cpu":
            splits = [split.to(device) for split in splits]
        self.train_set, self.val_set, *self.test_sets = splits

    def _curriculum_split(self, generator: torch.Generator) -> GroupedTensorDicts:
        """n_train examples spread evenly over `train_lengths`, one group per length."""
        lengths = self.train_lengths
        share, extra = divmod(self.n_train, len(lengths))
        # the first `extra` lengths get one more example, so the groups sum to n_train
        sizes = [share + (i < extra) for i in range(len(lengths))]
        # through _generate_split: a task that holds sequences out of training (echo) keeps
        # them out of the curriculum's groups too
        return GroupedTensorDicts(
            [
                TensorDictDataset(self._generate_split("train", n, length, generator))
                for n, length in zip(sizes, lengths, strict=True)
            ]
        )

    def _training_device(self) -> torch.device:
        trainer = getattr(self, "trainer", None)
        if trainer is None:
            return torch.device("cpu")
        return trainer.strategy.root_device

    def train_dataloader(self) -> DataLoader:
        train_set = self._ready(self.train_set)
        groups = train_set.sizes if isinstance(train_set, GroupedTensorDicts) else None
        return batch_loader(train_set, self.batch_size, True, self.seed, groups=groups)

    def val_dataloader(self) -> DataLoader:
        return batch_loader(self._ready(self.val_set), self.batch_size, False, self.seed)

    def test_dataloader(self) -> list[DataLoader]:
        """One loader per test set, in the order of `test_prefixes`."""
        self._ready(self.train_set)
        return [batch_loader(s, self.batch_size, False, self.seed) for s in self.test_sets]

    def _ready(self, dataset: Dataset | None) -> Dataset:
        if dataset is None:
            raise RuntimeError(f"{type(self).__name__}: call setup() before asking for loaders")
        return dataset
