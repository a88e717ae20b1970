"""Scoring a trained system outside Lightning's loops: its validation set and a length range.

Both run the system's own ``evaluate`` (the code its test sets use) in eval mode with no
gradients, so a number here means what the same metric means in ``metrics.json``, and
neither touches the loggers, the callbacks or the training record of the Trainer.

The range evaluation scores every length ``step, 2 step, ...`` up to ``max_factor`` times
the training length on fresh sequences of exactly that length (for seq2seq, a split of
longest length L, as its test sets are), drawn from a generator of their own: the curve
of accuracy against length that length-generalisation papers draw. Lengths past the
model's ``max_len`` (the longest test set, which sizes positional tables) are left out.
:func:`past_training_means` condenses a curve into Delétang et al. 2023's score: the mean
of each metric over the evaluated lengths longer than the training length (``range_ood/``).
"""

from __future__ import annotations

import hashlib
import math
from contextlib import nullcontext
from dataclasses import dataclass

import torch
from torch import Tensor
from torchmetrics import MetricCollection

from lit_seq.record import RANGE_OOD
from lit_seq.util.checks import BadInput, check_float, check_int


@dataclass
class RangeEval:
    """The ``range_eval`` section of a config: an accuracy-vs-length curve after testing.

    Args:
        max_factor: Longest length as a multiple of the training length; 0 (the default)
            turns it off. Capped at the model's ``max_len`` (the data's longest test set).
        step: Distance between evaluated lengths (1: every length).
        n: Sequences per length.
    """

    max_factor: float = 0.0
    step: int = 1
    n: int = 200

    def check(self) -> None:
        try:
            check_float("range_eval.max_factor", self.max_factor, 0.0)
            check_int("range_eval.step", self.step, 1)
            check_int("range_eval.n", self.n, 1)
        except ValueError as err:
            raise BadInput(str(err)) from None

    def lengths(self, train_length: int, max_len: int, shortest: int = 1) -> list[int]:
        """The evaluated lengths: the multiples of ``step`` from ``shortest`` (the task's
        shortest valid sequence) up to the cap, ascending."""
        longest = min(math.floor(self.max_factor * train_length), max_len)
        first = -(-max(shortest, 1) // self.step) * self.step  # first multiple >= shortest
        return list(range(first, longest + 1, self.step)) if self.max_factor else []


def _range_generator(seed: int, length: int) -> torch.Generator:
    # a stream apart from every split's (those are seeded seed * 1000 + split index)
    digest = hashlib.sha256(f"lit_seq range_eval {seed} {length}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


def _scored(metrics: MetricCollection) -> bool:
    """False when no position was scored (e.g. echo shorter than its lag)."""
    totals = [m.total for m in metrics.values() if hasattr(m, "total")]
    return not totals or all(float(t) > 0 for t in totals)


@torch.no_grad()
def score(system, tensors: dict[str, Tensor], metrics: MetricCollection, batch_size: int):
    """``metrics`` (unprefixed) of ``system`` over the examples in ``tensors``: name -> value.

    None when nothing was scored.
    """
    was_training = system.training
    system.eval()
    metrics = metrics.to(system.device)
    trainer = getattr(system, "_trainer", None)
    context = trainer.precision_plugin.forward_context() if trainer else nullcontext()
    n = len(next(iter(tensors.values())))
    try:
        with context:
            for start in range(0, n, batch_size):
                batch = {
                    k: v[start : start + batch_size].to(system.device) for k, v in tensors.items()
                }
                if trainer:  # what Lightning does to a batch (e.g. float64 under 64-true)
                    batch = trainer.precision_plugin.convert_input(batch)
                system.evaluate(batch, metrics)
        if not _scored(metrics):
            return None
        return {name: float(value) for name, value in metrics.compute().items()}
    finally:
        system.train(was_training)


def validation_scores(system, datamodule) -> dict[str, float]:
    """``val/<metric>`` of ``system`` as it is now (the tested checkpoint), loss excluded."""
    values = score(
        system,
        datamodule.val_set.tensors,
        system.build_metrics(),
        batch_size=datamodule.batch_size,
    )
    return {f"val/{name}": value for name, value in (values or {}).items()}


def length_curve(system, datamodule, config: RangeEval) -> dict[str, dict[str, float]]:
    """metric -> {length (as text): value} over ``config.lengths``; {} when off."""
    train_length = datamodule.train_length
    curve: dict[str, dict[str, float]] = {}
    shortest = getattr(datamodule, "shortest_length", 1)
    for length in config.lengths(train_length, system.hparams.max_len, shortest):
        generator = _range_generator(datamodule.seed, length)
        # as a test set of that length: a task keeps it apart from training where it can
        tensors = datamodule.draw(config.n, length, generator, split="test")
        metrics = system.test_metrics_for(length, train_length)
        values = score(system, tensors, metrics, batch_size=datamodule.batch_size)
        for name, value in (values or {}).items():
            curve.setdefault(name, {})[str(length)] = round(value, 6)
    return curve


def past_training_means(curve: dict[str, dict[str, float]], train_length: int) -> dict:
    """``range_ood/<metric>``: the mean of each curve over its lengths > ``train_length``.

    Delétang et al. 2023's score (accuracy averaged over the test lengths N+1..L_max),
    restricted to the lengths the range evaluation scored. Every length weighs the same,
    however many positions it has. Worked example: acc {"20": 1.0, "40": 0.6, "60": 0.5}
    with training length 20 -> range_ood/acc 0.55. Metrics with no length past training
    are left out; the loss too (a mean of losses over lengths is no score anyone reports).
    """
    means = {}
    for name, values in curve.items():
        past = [v for length, v in values.items() if int(length) > train_length]
        if past and not name.endswith("loss"):
            means[f"{RANGE_OOD}/{name}"] = round(sum(past) / len(past), 6)
    return means
