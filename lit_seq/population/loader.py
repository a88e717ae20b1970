"""K members' data in lockstep: batch i of the population is every member's batch i.

Each member keeps its own loader (its own data, drawn from its seed, and its own seeded,
resumable batch order, ``lit_seq.data.loaders``); this hands Lightning one loader whose
batches are the members' batches stacked along a new first dimension, ``(K, B, ...)``.
"""

from __future__ import annotations

import lightning as L
import torch
from torch import Tensor
from torch.utils.data import DataLoader


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
        for batches in zip(*self.loaders, strict=True):
            yield stack_batches(list(batches))

    def state_dict(self) -> dict:
        """Every member's position (Lightning saves it with each checkpoint)."""
        return {"members": [loader.state_dict() for loader in self.loaders]}

    def load_state_dict(self, state: dict) -> None:
        for loader, member in zip(self.loaders, state["members"], strict=True):
            loader.load_state_dict(member)


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
        self.train_loader: StackedLoader | None = None

    def setup(self, stage: str) -> None:
        for dm in self.members:
            dm.trainer = self.trainer  # where the data lives (on a GPU, on the device)
            dm.setup(stage)

    def train_dataloader(self) -> StackedLoader:
        self.train_loader = StackedLoader([dm.train_dataloader() for dm in self.members])
        return self.train_loader

    def val_dataloader(self) -> StackedLoader:
        return StackedLoader([dm.val_dataloader() for dm in self.members])

    def test_dataloader(self) -> list[StackedLoader]:
        """One loader per test set: every member's set of that length, in lockstep."""
        sets = [dm.test_dataloader() for dm in self.members]
        return [StackedLoader(list(loaders)) for loaders in zip(*sets, strict=True)]
