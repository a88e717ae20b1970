"""The rule of a grid's ``select:``: which value of an axis (a learning rate) a cell keeps.

The runs of a ``select_group`` differ only in that axis. Per seed (no ``select.seeds``),
the kept run is the one with the best validation metric of its tested checkpoint. With
``select.seeds``, the values compete on those seeds only: a value is eligible when its
runs on every one of them are ok, the winner has the best mean validation metric over
them, and every seed of the cell uses it. The test sets play no part; ties go to the
value listed first in the grid. Worked example: values [0.01, 0.001] on seeds [0, 1] with
val/acc 0.9, 0.7 (lr 0.01) and 0.8, 0.85 (lr 0.001): means 0.80 and 0.825, so 0.001.
"""

from __future__ import annotations

import math


def lower_is_better(metric: str) -> bool:
    return metric.endswith("loss")


def choose_value(
    candidates: list[tuple[object, int, bool, float | None]],
    values: list,
    seeds: list[int],
    metric: str,
):
    """The winning value among ``values``, or None when none is eligible.

    ``candidates``: (value, seed, ok, validation metric) of each competing run.
    """
    best, best_score = None, math.nan
    for value in values:
        scores = {}
        for v, seed, ok, score in candidates:
            if v == value and seed in seeds and ok and score is not None and math.isfinite(score):
                scores[seed] = score
        if set(scores) != set(seeds):
            continue  # failed (e.g. diverged) or missing on a selection seed
        mean = sum(scores.values()) / len(scores)
        better = mean < best_score if lower_is_better(metric) else mean > best_score
        if best is None or better:
            best, best_score = value, mean
    return best
