"""What a score was measured on: its lengths and its chance level, from the runs themselves.

A table that prints "0.62" for ``range_ood/acc`` leaves its reader to guess two things: which
lengths the mean runs over, and what a model that guesses would score. Users of Delétang et
al.'s tables guessed wrong on both (neural_networks_chomsky_hierarchy issues #7 and #9: an
average over lengths 41-100 read as one over 41-500, a chance of 50% not known). So every
table of scores labels its main metric with :func:`scored_on`, built from what the records
carry, never typed by hand:

- the lengths: ``test/<m>`` is the training length N (``val/<m>`` too); ``test_len{L}/<m>``
  is length L; ``range_ood/<m>`` is the mean over the range evaluation's lengths past N, the
  runs table's ``range_ood_lengths`` (:func:`range_lengths` of each record's curve);
  ``acc_ood`` counts only the positions past N. A variable-length task (seq2seq) draws
  lengths up to N in its training-length test set and N+1..L in the one of length L.
- the chance level: the record's ``chance`` (the main metric of a guess, 1 / classes), for
  the main metric, and for ``acc_ood`` where the main metric is ``acc`` (the same per-token
  guess); other metrics get none (``exact`` of a guess is not 1 / classes).

Worked example: parity_check trained at N = 40, range evaluation at lengths 41..200, chance
0.5: ``range_ood/acc`` -> ``lengths 41-200, chance 0.5``; ``test/acc`` -> ``length 40,
chance 0.5``; ``test_len200/exact`` -> ``length 200``. Cells of one task that differ in N
or range are labelled each, joined by "; ".
"""

from __future__ import annotations

import re

import pandas as pd

from lit_seq.record import RANGE_OOD

# tasks whose test sets mix lengths (lit_seq.data.seq2seq: up to N, and N+1..L past it);
# tests/test_results_scored_on.py keeps this in step with the tasks' task_kind
VARIABLE_LENGTH_TASKS = ("seq2seq",)


def range_lengths(curve: dict[str, dict[str, float]], train_length: int | None) -> str:
    """The lengths past ``train_length`` a record's curve has, the ones its
    ``range_ood/<metric>`` means average: ``41-200`` (every length), ``60-200 every 20`` (a
    range evaluation with a step), ``60-200 (7 lengths)`` (uneven, lengths left out where a
    model cannot read them), a single length, or "" (no range evaluation)."""
    if train_length is None:
        return ""
    past = {int(k) for values in curve.values() for k in values if int(k) > train_length}
    lengths = sorted(past)
    if len(lengths) < 2:
        return "".join(map(str, lengths))
    span = f"{lengths[0]}-{lengths[-1]}"
    steps = {b - a for a, b in zip(lengths, lengths[1:], strict=False)}
    if steps == {1}:
        return span
    if len(steps) == 1:
        return f"{span} every {steps.pop()}"
    return f"{span} ({len(lengths)} lengths)"


def _known(value) -> bool:
    return value is not None and not (isinstance(value, float) and pd.isna(value)) and value != ""


def _label(row: pd.Series, metric: str, scale: float) -> str:
    prefix, _, name = metric.partition("/")
    n = row.get("train_length")
    n = int(n) if _known(n) else None
    varies = row.get("task") in VARIABLE_LENGTH_TASKS
    parts = []
    longer = re.fullmatch(r"test_len(\d+)", prefix)
    if prefix == RANGE_OOD:
        lengths = row.get("range_ood_lengths")
        if _known(lengths):
            parts.append(f"lengths {lengths}")
        elif n is not None:  # a table from before the column: its range is past N
            parts.append(f"lengths > {n}")
    elif prefix in ("test", "val") and n is not None:
        parts.append(f"lengths <= {n}" if varies else f"length {n}")
    elif longer:
        parts.append(
            f"lengths {n + 1}-{longer.group(1)}" if varies and n else f"length {longer.group(1)}"
        )
    if name == "acc_ood" and n is not None:
        parts.append(f"positions > {n}")
    main = row.get("main_metric") or "acc"
    chance = row.get("chance")
    if _known(chance) and (name == main or (name == "acc_ood" and main == "acc")):
        parts.append(f"chance {float(chance) * scale:.3g}")
    return ", ".join(parts)


def scored_on(rows: pd.DataFrame, metric: str, scale: float = 1.0) -> str:
    """``lengths 41-200, chance 0.5``: what ``metric`` (a key like ``range_ood/acc``) of the
    runs or cells ``rows`` (one task's; columns ``train_length``, ``chance``,
    ``main_metric`` and ``range_ood_lengths`` where known) was measured on, its chance in
    the table's units (``scale`` 100: percent); different labels of its rows joined by "; ",
    "" when nothing is known."""
    labels = [_label(row, metric, scale) for _, row in rows.iterrows()]
    return "; ".join(dict.fromkeys(label for label in labels if label))
