"""K members' data in lockstep: batch i of the population is every member's batch i.

Each member keeps its own loader (its own data, drawn from its seed, and its own seeded,
resumable batch order, ``lit_seq.data.loaders``); this hands Lightning one loader whose
batches are the members' batches stacked along a new first dimension, ``(K, B, ...)``.
Fresh training batches of a task that draws on the device (``lit_seq.data.fresh``) are
drawn for all K members in one call per step instead (:class:`DrawnTogether`), each
member's equal to the one its own loader would draw.
"""

from __future__ import annotations

import lightning as L
import torch
from torch import Tensor
from torch.utils.data import DataLoader, default_convert

from lit_seq.data.fresh import FreshBatches, fresh_loader
from lit_seq.data.loaders import GroupedTensorDicts, TensorDictDataset


class _EpochFanOut:
    """What Lightning calls ``set_epoch`` on at every epoch: passes it to every member."""

    def __init__(self, loaders: list[DataLoader]) -> None:
        self.loaders = loaders

    def set_epoch(self, epoch: int) -> None:
        for loader in self.loaders:
            loader.sampler.set_epoch(epoch)


class StackedLoader:
    """Iterates ``loaders`` together and stacks their batches (dicts of tensors).

    Args:
        loaders: one per member, all of the same length with batches of the same shapes
            (the members of a population share their task and batch size).
    """

    def __init__(self, loaders: list[DataLoader]) -> None:
        lengths = {len(loader) for loader in loaders}
        if len(lengths) != 1:
            raise ValueError(f"member loaders must have one length, got {sorted(lengths)}")
        self.loaders = loaders
        # what Lightning looks for on a loader: set_epoch on its sampler, no batch sampler
        self.sampler = _EpochFanOut(loaders)
        self.batch_sampler = None

    def __len__(self) -> int:
        return len(self.loaders[0])

    def __iter__(self):
        if all(_indexes_its_dataset(loader) for loader in self.loaders):
            # what each loader's iterator does: its sampler's indices, one index of its
            # dataset; without a DataLoader iterator's machinery per batch, K times a step
            for indices in zip(*(loader.sampler for loader in self.loaders), strict=True):
                batches = [lo.dataset[i] for lo, i in zip(self.loaders, indices, strict=True)]
                yield stack_batches(batches)
            return
        for batches in zip(*self.loaders, strict=True):
            yield stack_batches(list(batches))

    def state_dict(self) -> dict:
        """Every member's position (Lightning saves it with each checkpoint)."""
        return {"members": [loader.state_dict() for loader in self.loaders]}

    def load_state_dict(self, state: dict) -> None:
        for loader, member in zip(self.loaders, state["members"], strict=True):
            loader.load_state_dict(member)


def _indexes_its_dataset(loader: DataLoader) -> bool:
    """Whether ``loader``'s batches are ``loader.dataset[indices]`` for each ``indices`` its
    sampler gives, as they are (``lit_seq.data.loaders.batch_loader``): no batching or
    conversion of its own (a dict of tensors passes ``default_convert`` as it is), no
    workers."""
    return (
        isinstance(loader, DataLoader)
        and isinstance(loader.dataset, TensorDictDataset | GroupedTensorDicts)
        and loader.batch_size is None
        and loader.collate_fn is default_convert
        and loader.num_workers == 0
        and not loader.pin_memory
    )


class DrawnTogether:
    """The members' fresh training loaders as one: each step's K batches drawn in one call
    on the training device (:meth:`FreshBatches.for_members`), no stacking, no copy.

    Its position is the members' (they step together); it saves one per member, as
    :class:`StackedLoader` does, so that a member's checkpoint holds its own.

    Args:
        loaders: one fresh training loader per member (``fresh_loader``), of one task whose
            batches are drawn on the device.
    """

    def __init__(self, loaders: list[DataLoader]) -> None:
        first = loaders[0]
        seeds = [loader.dataset.seed for loader in loaders]
        self.members = len(loaders)
        self.loader = fresh_loader(first.dataset.for_members(seeds), per_epoch=len(first))
        self.sampler = self.loader.sampler  # Lightning's set_epoch goes here
        self.batch_sampler = None

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        return iter(self.loader)

    def state_dict(self) -> dict:
        return {"members": [self.loader.state_dict()] * self.members}

    def load_state_dict(self, state: dict) -> None:
        positions = state["members"]
        if any(position != positions[0] for position in positions):
            raise ValueError(f"members' loader positions must agree, got {positions}")
        self.loader.load_state_dict(positions[0])


def drawn_together(loaders: list[DataLoader]) -> bool:
    """Whether the members' training loaders are fresh batches drawn on the device."""
    return all(
        isinstance(loader.dataset, FreshBatches) and loader.dataset.on_device for loader in loaders
    )


def stack_batches(batches: list[dict[str, Tensor]]) -> dict[str, Tensor]:
    """name -> (K, ...): the members' batches stacked; ValueError if their shapes differ."""
    out = {}
    for name in batches[0]:
        shapes = {tuple(b[name].shape) for b in batches}
        if len(shapes) != 1:
            raise ValueError(f"batch key {name!r}: members' shapes differ: {sorted(shapes)}")
        out[name] = torch.stack([b[name] for b in batches])
    return out


def member_batch(batch: dict[str, Tensor], k: int) -> dict[str, Tensor]:
    """Member ``k``'s batch out of a stacked one."""
    return {name: tensor[k] for name, tensor in batch.items()}


class PopulationData(L.LightningDataModule):
    """The members' data modules as one: their loaders in lockstep."""

    def __init__(self, members: list[L.LightningDataModule]) -> None:
        super().__init__()
        self.members = members
        self.train_loader: StackedLoader | DrawnTogether | None = None

    def setup(self, stage: str) -> None:
        for dm in self.members:
            dm.trainer = self.trainer  # where the data lives (on a GPU, on the device)
            dm.setup(stage)

    def train_dataloader(self) -> StackedLoader | DrawnTogether:
        loaders = [dm.train_dataloader() for dm in self.members]
        together = drawn_together(loaders)
        self.train_loader = DrawnTogether(loaders) if together else StackedLoader(loaders)
        return self.train_loader

    def val_dataloader(self) -> StackedLoader:
        return StackedLoader([dm.val_dataloader() for dm in self.members])

    def test_dataloader(self) -> list[StackedLoader]:
        """One loader per test set: every member's set of that length, in lockstep."""
        sets = [dm.test_dataloader() for dm in self.members]
        return [StackedLoader(list(loaders)) for loaders in zip(*sets, strict=True)]
