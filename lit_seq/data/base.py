"""What every synthetic task shares: the DataModule base, its splits and the length curriculum.

The in-memory datasets and the resumable batch order live in `lit_seq.data.loaders` (and are
re-exported here). A task subclasses `SyntheticDataModule`, implements `_sample(n, length, rng)`
(or, drawing on the host only, `_generate(n, length, generator)`) and exposes the sizes the
CLI links into the model (`in_features`, `out_features`, `max_len`). Callers outside a task
draw examples of any length with its public `draw`. Everything here is generated in memory, so the data layer never touches the disk.

With ``curriculum=True`` (Delétang et al. 2023's uniform curriculum) the training split holds
one group of examples per length ``shortest_length .. train_length`` and every training batch is
drawn from one group: each batch has one length, and an epoch covers every length.
"""

import functools
from typing import ClassVar, Literal

import lightning as L
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from lit_seq.data.counter_random import HostRandom, Random
from lit_seq.data.fresh import FreshBatches, fresh_loader
from lit_seq.data.loaders import (  # re-exported: the loader pieces every task shares
    EpochBatches,
    GroupedTensorDicts,
    ResumableLoader,
    TensorDictDataset,
    batch_loader,
)
from lit_seq.util.checks import check_choice, check_int

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

    A task sets `name` and `task_kind`, stores its own arguments (its training length as
    `length`, which `train_length` returns), then hands the arguments every task shares to
    this constructor: ``super().__init__(n_train=n_train, **kwargs)``. The CLI's parser
    (jsonargparse) follows ``**kwargs`` into this ``__init__``, so ``--data.help`` lists the
    shared arguments, documented below, after the task's own. The task's fields come first
    because this constructor checks `n_train` against the lengths they define. A task then
    provides `in_features`, `out_features` and `_sample` (or `_generate`). Each split is drawn from its own generator (seed * 1000 + split index), so
    splits are independent draws and the global torch RNG is never used; `draw` is the one
    way to draw examples, for the splits and for any caller that scores at other lengths.

    The curriculum (Delétang et al. 2023, experiments/curriculum.py ``UniformCurriculum``,
    which draws the length of every training batch uniformly from 1..N): with
    ``curriculum=True`` the training split is `n_train` examples spread evenly over the
    lengths `shortest_length` .. `train_length` (N), drawn length after length from the
    training split's generator, and each training batch is drawn from one length, in random
    order; so every length is seen every epoch, with no padding in any batch. (Delétang draws
    each step's length i.i.d. with a fresh batch; here the lengths are stratified per epoch
    and the data are a fixed set, like every other split; ``sampling="fresh"`` draws them
    as Delétang does.) A task whose shortest valid sequence is longer than 1 says so in
    `shortest_length` (default 1). Validation and test
    sets keep their fixed lengths. Example: N = 4, n_train = 8, batch_size 2 -> 2 examples
    each at lengths 1, 2, 3, 4, one batch per length, the four batches in a seeded random
    order. A task that cannot offer it passes ``curriculum=False`` itself, which also keeps
    the option out of its ``--data.help``.

    Args:
        n_train: training examples; each task declares its own default.
        n_val: validation examples.
        n_test: examples in each test set (the training length's and every gen length's).
        batch_size: examples per batch in every split.
        seed: seed of the data generation and of the training shuffle order. Default:
            the fit's ``--seed_everything`` (0 outside a fit); set apart from it, the data
            change and the initial weights do not (``--init_seed`` sets the weights' seed
            apart; docs/grids.md, "The seed design").
        gen_factors: length-generalisation test sets at k x the training length, one per
            entry (integers >= 2, no repeats). Defaults to [2, 4]; [] disables them.
        curriculum: train on every length from the task's shortest valid one to its
            training length, one length per batch (Delétang et al.'s uniform curriculum:
            n_train spread evenly over the lengths); validation and test keep the training
            length.
        sampling: ``fixed``: the training split is n_train examples drawn once and reshuffled
            every epoch. ``fresh`` (Delétang et al.'s training loop): every training batch is
            new, a pure function of (seed, step), at a length uniform over the training
            lengths (every length up to N with the curriculum), so a resumed fit draws the
            same batches (`lit_seq.data.fresh`; a task with `_sample` draws them on the
            training device); an epoch is then n_train / batch_size steps. Validation and
            test sets stay fixed either way.
    """

    name: ClassVar[str] = ""  # the task's registry name, carried into every record
    task_kind: ClassVar[str] = ""  # which system trains it: a key of lit_seq.systems.SYSTEMS
    length: int  # the training length, set by the task before it calls this constructor
    n_train: int
    n_val: int
    n_test: int

    def __init__(
        self,
        *,
        n_train: int,
        n_val: int = 500,
        n_test: int = 1000,
        batch_size: int = 64,
        seed: int | None = None,
        gen_factors: list[int] | None = None,
        curriculum: bool = False,
        sampling: Literal["fixed", "fresh"] = "fixed",
    ) -> None:
        super().__init__()
        gen_factors = [2, 4] if gen_factors is None else list(gen_factors)
        for k in gen_factors:
            check_int("gen_factors entries", k, 2)
        if len(set(gen_factors)) != len(gen_factors):
            # Two equal factors would log two test sets under the same metric prefix.
            raise ValueError(f"gen_factors must not repeat, got {gen_factors}")
        self.batch_size = check_int("batch_size", batch_size, 1)
        # None follows the run's seed: the fit sets it (lit_seq.fit.seeds.resolve_data_seed)
        self.seed = 0 if seed is None else check_int("seed", seed, 0)
        self.gen_factors = gen_factors
        if not isinstance(curriculum, bool):
            raise ValueError(f"curriculum must be true or false, got {curriculum!r}")
        self.curriculum = curriculum
        self.sampling = check_choice("sampling", sampling, ("fixed", "fresh"))
        # the curriculum needs at least one training example per length
        lengths = len(self.train_lengths)
        allowed = f">= {lengths} (one per curriculum length)" if lengths > 1 else None
        self.n_train = check_int("n_train", n_train, lengths, allowed=allowed)
        self.n_val = check_int("n_val", n_val, 1)
        self.n_test = check_int("n_test", n_test, 1)
        self.train_set: TensorDictDataset | GroupedTensorDicts | FreshBatches | None = None
        self.val_set: TensorDictDataset | None = None
        self.test_sets: list[TensorDictDataset] = []

    # ---- what a task provides ------------------------------------------------------------

    @property
    def train_length(self) -> int:
        """Sequence length of the training split (the longest one, for variable lengths): the
        task's `length`; a task that calls it otherwise overrides this (seq2seq: max_length)."""
        return self.length

    @property
    def in_features(self) -> int:
        """Input size the model needs: channels, or the vocabulary size for token inputs."""
        raise NotImplementedError

    @property
    def out_features(self) -> int:
        """Output size the model needs: classes, 1 per step, or the vocabulary size."""
        raise NotImplementedError

    def output_length(self, length: int) -> int:
        """Positions a model appends after an input of ``length`` to write the task's output
        on (Delétang et al.'s empty tape, ``task_kind`` "transduction"); 0 for the tasks whose
        outputs sit on the input positions or are one label."""
        return 0

    @property
    def shortest_length(self) -> int:
        """The shortest valid sequence: where the curriculum starts (1 unless a task says)."""
        return 1

    def context_floor(self, length: int) -> float | None:
        """The accuracy at ``length`` of answering with a token the input holds, without doing
        the task, where that beats the uniform chance the system records: a task with such a
        floor says so (associative_recall: any value in context); None (here) for the others.
        Fits record it beside ``chance`` (``FitResult.context_floor``)."""
        return None

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        """Draw `n` examples of (maximum) sequence length `length` from `generator` only: by
        default `_sample` through ``torch.randint`` on the generator (`HostRandom`)."""
        return self._sample(n, length, HostRandom(generator))

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        """`n` examples of length `length` drawn from ``rng`` only, as torch on
        ``rng.device``, with no loop over the examples; with a `CounterRandom` of K seeds,
        K x n rows, member after member. A task that writes its draw here (the Delétang
        tasks) draws its fresh training batches on the training device, K members at once
        (`lit_seq.data.fresh`); one that does not overrides `_generate` instead, and its
        fresh batches are drawn on the host."""
        raise NotImplementedError

    @property
    def samples_on_device(self) -> bool:
        """Whether the task writes its draw as `_sample` (its fresh batches then drawn on the
        training device)."""
        return type(self)._sample is not SyntheticDataModule._sample

    def _generate_split(
        self, n: int, length: int, generator: torch.Generator, *, split: str
    ) -> dict[str, Tensor]:
        """`draw`'s examples of ``split``: `_generate`, unless a task keeps its splits apart
        (echo holds sequences out of training so that its training-length test set is unseen)."""
        return self._generate(n, length, generator)

    # ---- what callers use ------------------------------------------------------------------

    def draw(
        self, n: int, length: int, generator: torch.Generator, *, split: str = "test"
    ) -> dict[str, Tensor]:
        """`n` examples of sequence length `length` (the longest, for variable lengths), drawn
        from `generator` only, as the ``split`` set (``train``, ``val`` or ``test``) has them.

        How every split is built, and how a caller scores a model at any other length (a
        length curve, a probe at the longest test length): ``test`` examples are ones a
        task's training split never holds where it keeps its splits apart (echo at its
        training length). Returns the batch tensors by name, as the loaders yield them
        (e.g. ``x`` (n, length, in_features) and ``y``), each with ``n`` rows.
        """
        check_choice("split", split, SPLITS)
        return self._generate_split(n, length, generator, split=split)

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
    def train_batch_size(self) -> int:
        """Examples per training batch: ``batch_size``, at most the whole training set (a
        larger batch_size trains full-batch; the fit says so, and counts samples/s by this)."""
        return min(self.batch_size, self.n_train)

    @property
    def max_len(self) -> int:
        """The longest sequence a model reads (sizes its positional tables): the longest test
        set's, plus the positions appended to write its output (`output_length`)."""
        return max(n + self.output_length(n) for n in self.test_lengths)

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
            if index == 0 and self.sampling == "fresh":
                draw = functools.partial(self.draw, split="train")
                sample = self._sample if self.samples_on_device else None
                lengths, seed = self.train_lengths, self.seed
                splits.append(FreshBatches(draw, self.batch_size, lengths, seed, sample=sample))
            elif index == 0 and self.curriculum:
                splits.append(self._curriculum_split(generator))
            else:
                split = SPLITS[min(index, len(SPLITS) - 1)]
                splits.append(TensorDictDataset(self.draw(n, length, generator, split=split)))
        # On a GPU the whole (small) dataset lives on the device: a batch is then one index
        # on the device, with no host-to-device copy per step (fresh batches: drawn there).
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
        # as the training split: a task that holds sequences out of training (echo) keeps
        # them out of the curriculum's groups too
        return GroupedTensorDicts(
            [
                TensorDictDataset(self.draw(n, length, generator, split="train"))
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
        if isinstance(train_set, FreshBatches):
            return fresh_loader(train_set, per_epoch=-(-self.n_train // self.batch_size))
        groups = train_set.sizes if isinstance(train_set, GroupedTensorDicts) else None
        return batch_loader(
            train_set, self.train_batch_size, shuffle=True, seed=self.seed, groups=groups
        )

    def val_dataloader(self) -> DataLoader:
        val_set = self._ready(self.val_set)
        return batch_loader(val_set, self.batch_size, shuffle=False, seed=self.seed)

    def test_dataloader(self) -> list[DataLoader]:
        """One loader per test set, in the order of `test_prefixes`."""
        self._ready(self.train_set)
        return [
            batch_loader(s, self.batch_size, shuffle=False, seed=self.seed) for s in self.test_sets
        ]

    def _ready(self, dataset: Dataset | None) -> Dataset:
        if dataset is None:
            raise RuntimeError(f"{type(self).__name__}: call setup() before asking for loaders")
        return dataset
