"""Scoring a trained system outside Lightning's loops: its validation set, a length range and
(a per-step task) its accuracy by position span.

Both run the system's own ``evaluate`` (the code its test sets use) in eval mode under
``torch.inference_mode`` (``lit_seq.systems.length_score.score``), so a number here means what the same
metric means in ``metrics.json``, and neither touches the loggers, the callbacks or the
training record of the Trainer.

The range evaluation scores every length ``step, 2 step, ...`` up to ``max_factor`` times
the training length (or up to ``max_length``, Delétang et al.'s 500) on new sequences of
exactly that length (for seq2seq, a split of longest length L, as its test sets are),
drawn from a stream of their own: the curve of accuracy against length that
length-generalisation papers draw. A length whose input plus
appended output positions (``output_length``, the transduction tasks') is longer than the
model reads (its ``length_limit``: ``max_len`` for a learnable table or randomized
positions, ``pos_range`` for randomized ones given it; the other encodings read any length)
is left out.
:func:`past_training_means` condenses a curve into Delétang et al. 2023's score: the mean
of each metric over the evaluated lengths longer than the training length N
(``range_ood/<metric>``; the record's ``range_ood_longest`` is the longest, M). With
``step: 1, n: 512, sub_batch: 64`` (the ``configs/deletang`` configs) ``range_ood/acc`` is
exactly their score, ``lit_seq.systems.deletang_score(system, data, longest=M)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from lit_seq.record import RANGE_OOD
from lit_seq.systems.length_score import score, score_length
from lit_seq.util.checks import BadInput, check_float, check_int

__all__ = [
    "RangeEval",
    "context_floors",
    "length_curve",
    "longest_past_training",
    "past_training_means",
    "score",
    "validation_scores",
]


@dataclass
class RangeEval:
    """The ``range_eval`` section of a config: an accuracy-vs-length curve after testing.

    Args:
        max_factor: Longest length as a multiple of the training length; 0 (the default)
            turns it off. A length whose input and appended output positions together
            pass what the model reads (``max_len`` for a learnable table or randomized
            positions, ``pos_range`` for randomized ones given it; the other encodings read
            any length) is left out.
        max_length: Longest length as a number of symbols, whatever the training length
            (Delétang et al. 2023: 500); null (the default): ``max_factor`` decides. Give
            one of the two. Lengths past what the model reads are left out as above.
        step: Distance between evaluated lengths (1: every length).
        n: Sequences per length.
        sub_batch: 0 (the default) pools the ``n`` sequences of a length; k > 0 scores
            each sub-batch of k on its own and averages them, as Delétang et al. 2023
            (64). Equal when every sequence has as many scored positions.
        dropout: Score with the network's dropout on, as Delétang et al. 2023 score theirs
            (haiku's dropout has no evaluation mode and their range evaluation hands it a
            random key); the masks come from each length's own stream, the same in every
            rerun. False (the default): in eval mode, no dropout.
    """

    max_factor: float = 0.0
    max_length: int | None = None
    step: int = 1
    n: int = 200
    sub_batch: int = 0
    dropout: bool = False

    def check(self) -> None:
        try:
            check_float("range_eval.max_factor", self.max_factor, 0.0)
            if self.max_length is not None:
                check_int("range_eval.max_length", self.max_length, 1)
                if self.max_factor:
                    raise ValueError(
                        f"range_eval.max_length={self.max_length} and range_eval.max_factor="
                        f"{self.max_factor}: give one of them (the longest length)"
                    )
            check_int("range_eval.step", self.step, 1)
            check_int("range_eval.n", self.n, 1)
            check_int("range_eval.sub_batch", self.sub_batch, 0)
        except ValueError as err:
            raise BadInput(str(err)) from None

    def lengths(
        self,
        train_length: int,
        max_len: int | None,
        shortest: int = 1,
        output_length: Callable[[int], int] | None = None,
    ) -> list[int]:
        """The evaluated lengths: the multiples of ``step`` from ``shortest`` (the task's
        shortest valid sequence) up to ``max_length`` or ``max_factor`` x ``train_length``,
        ascending, each with its ``output_length`` appended positions within ``max_len``
        (None: any)."""
        if self.max_length is not None:
            longest = self.max_length
        elif self.max_factor:
            longest = math.floor(self.max_factor * train_length)
        else:
            return []
        first = -(-max(shortest, 1) // self.step) * self.step  # first multiple >= shortest
        appended = output_length or (lambda length: 0)
        lengths = range(first, longest + 1, self.step)
        return [n for n in lengths if max_len is None or n + appended(n) <= max_len]


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
    shortest = getattr(datamodule, "shortest_length", 1)
    output_length = getattr(datamodule, "output_length", None)
    lengths = config.lengths(train_length, system.length_limit, shortest, output_length)
    curve: dict[str, dict[str, float]] = {}
    for length in lengths:
        values = score_length(
            system,
            datamodule,
            length,
            system.test_metrics_for(length, train_length),
            n=config.n,
            batch_size=datamodule.batch_size,
            sub_batch=config.sub_batch,
            dropout=config.dropout,
        )
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


def longest_past_training(curve: dict[str, dict[str, float]], train_length: int) -> int | None:
    """M, the longest length ``range_ood/<metric>`` averages (the record's
    ``range_ood_longest``); None when the curve has no length past ``train_length``."""
    past = [int(n) for values in curve.values() for n in values if int(n) > train_length]
    return max(past, default=None)


def context_floors(datamodule, curve: dict[str, dict[str, float]]) -> dict[str, float]:
    """length (as text) -> the task's ``context_floor`` at every length scored: the test sets'
    and the curve's, ascending; {} for a task without one (all but associative_recall).

    What a record keeps beside ``chance``: associative_recall's floor falls with the length
    (1 / pairs in context), so one number would not do. Worked example, its defaults (N 32,
    4 pairs), test sets 32, 64, 128: {"32": 0.25, "64": 0.125, "128": 0.0625}.
    """
    floor = getattr(datamodule, "context_floor", None)
    lengths = {*datamodule.test_lengths, *(int(n) for values in curve.values() for n in values)}
    found = {n: floor(n) for n in sorted(lengths)} if floor is not None else {}
    return {str(n): round(value, 6) for n, value in found.items() if value is not None}


@torch.inference_mode()
def position_spans(system, tensors: dict, span: int, batch_size: int) -> list[float | None]:
    """Accuracy of a per-step ``system`` (one with ``step_hits``) over each span of ``span``
    positions of the test set ``tensors``: [0, N), [N, 2N), ... (None: nothing counted there).

    A score of 0.5 at twice the training length can mean "right on the first half, wrong
    after it" or "half right everywhere"; spans of one training length tell them apart.
    Worked example: N = 2, every sequence right at positions 0, 1, 3 and wrong at 2 ->
    [1.0, 0.5].
    """
    hits_sum, counted = 0, 0
    n = len(next(iter(tensors.values())))
    for start in range(0, n, batch_size):
        batch = {k: v[start : start + batch_size].to(system.device) for k, v in tensors.items()}
        hits, valid = system.step_hits(batch)  # (B, T) booleans each
        hits_sum = hits_sum + (hits & valid).sum(0)  # (T,)
        counted = counted + valid.sum(0)
    spans = []
    for start in range(0, len(counted), span):
        total = int(counted[start : start + span].sum())
        spans.append(int(hits_sum[start : start + span].sum()) / total if total else None)
    return spans
