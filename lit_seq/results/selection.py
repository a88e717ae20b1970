"""The rule of a grid's ``select:``: which value of an axis (a learning rate) a cell keeps.

The runs of a ``select_group`` differ only in that axis. Every value runs on the block's
selection seeds (``select.seeds``, at least :data:`MIN_SELECT_SEEDS`, none of them a seed
the grid reports); a value is eligible when its runs on every selection seed are ok, and the
winner has the best mean validation metric over them. Each reported seed then runs once, at
the winner. The test sets play no part; ties go to the value listed first in the grid.
Worked example: values [0.01, 0.001] on seeds [0, 1] with val/acc 0.9, 0.7 (lr 0.01) and
0.8, 0.85 (lr 0.001): means 0.80 and 0.825, so 0.001.

Why the selection seeds stay out of the reported mean: a seed that picked the rate is the
seed that rate suits best, so its test score is lucky on average; kept in, it lifts every
tuned cell (an audit found seed 0 beating seeds 1-4 in 36 of 47 cells). Out, the reported
seeds are exchangeable draws at a rate fixed before they ran. A winner at the lowest or
highest value of its sweep is flagged (:func:`sweep_end`): the best rate may lie beyond.

Why a learning-rate sweep is wide by default (:func:`narrow_sweep`): at least
:data:`MIN_SWEEP_VALUES` rates spanning at least :data:`MIN_SWEEP_SPAN` x (max / min). Three
rates within 5x can only say which of three neighbours is best, and a winner at an end says
nothing about how far off the optimum is; a grid that sweeps less must say why
(``select.sweep_reason``, printed beside the choice in every table). A block may also let
the grid grow its sweep past the end its winner sits at (``select.extend``,
``lit_seq.ablate.extension``); the values it adds compete like the listed ones, after them
(``select_extension`` orders them), and the flag then reads the sweep as extended.

Records of older grids are read by their own rule: selection seeds among the reported ones
(dropped from the mean here, all the same), or a value chosen per seed (no
``select_seeds``: each seed keeps its best-on-validation run, a choice the tables call
biased).
"""

from __future__ import annotations

import math

import pandas as pd

MIN_SELECT_SEEDS = 3  # a mean over fewer seeds picks the rate that suits one seed's luck
MIN_SWEEP_VALUES = 4  # learning rates a select: block sweeps at least, unless it says why
MIN_SWEEP_SPAN = 30.0  # ... spanning at least this factor, max / min (1e-4 .. 3e-3)


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


def narrow_sweep(values: list) -> str:
    """Why a learning-rate sweep falls short of the default (fewer than
    :data:`MIN_SWEEP_VALUES` values, or max / min below :data:`MIN_SWEEP_SPAN`), "" if it
    does not; the values must be positive numbers."""
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in values):
        return "must be positive numbers"
    span = max(values) / min(values)
    # a decimal 30x (3e-4 / 1e-5) can come out a hair under 30 in binary floating point
    if len(values) >= MIN_SWEEP_VALUES and span * (1 + 1e-9) >= MIN_SWEEP_SPAN:
        return ""
    return f"has {len(values)} values spanning {span:.3g}x"


def wide_sweep(values: list) -> list[float]:
    """A sweep that meets the default, from the least of ``values``: x1, x3, x10, x30 (an
    example for the message that refuses a narrow one)."""
    positive = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    low = min((v for v in positive if v > 0), default=1e-4)
    return [float(f"{low * k:.3g}") for k in (1, 3, 10, 30)]


def sweep_end(value: object, values: list) -> str:
    """``lowest`` / ``highest`` when ``value`` is the least / greatest of the numeric
    ``values`` swept (given as numbers or their text), else ""."""
    try:
        numbers = [float(v) for v in values]
        number = float(value)
    except (TypeError, ValueError):
        return ""  # not a numeric sweep: no ends to speak of
    if len(numbers) < 2:
        return ""
    if number == min(numbers):
        return "lowest"
    return "highest" if number == max(numbers) else ""


def _candidates(contest: pd.DataFrame, axis: str, metric: str) -> list[tuple]:
    metrics = contest[metric] if metric in contest else [None] * len(contest)
    return [
        (v, int(s), status == "ok", None if pd.isna(m) else float(m))
        for v, s, status, m in zip(
            contest[axis], contest["seed"], contest["status"], metrics, strict=True
        )
    ]


def mark_selected(runs: pd.DataFrame, waited: pd.Series) -> tuple[list, list[str]]:
    """Per row of ``runs`` (a runs table without ``selected``; ``waited``: the row took the
    value its group selected): whether a ``select:`` block reports it (True / False, None
    outside one), and where its group's winner sits in the sweep (:func:`sweep_end`).

    Per seed (old records), a seed none of whose competing runs is ok keeps its first run
    (failed), so the cell counts it as failed instead of dropping it.
    """
    chosen: list = [None] * len(runs)
    ends = [""] * len(runs)
    where = {index: i for i, index in enumerate(runs.index)}
    competing = runs[runs["select_axis"].fillna("") != ""]
    for _, group in competing.groupby("select_group", sort=False):
        axis, metric = group["select_axis"].iloc[0], group["select_metric"].iloc[0]
        seeds = [int(s) for s in str(group["select_seeds"].iloc[0]).split()]
        contest = group[~waited[group.index]]
        if "select_extension" in contest:  # listed values first, then the steps past them
            contest = contest.sort_values("select_extension", kind="stable")
        values = list(dict.fromkeys(contest[axis]))
        if seeds:  # one value for all, chosen on the selection seeds, which are not reported
            winner = choose_value(_candidates(contest, axis, metric), values, seeds, metric)
            end = sweep_end(winner, values) if winner is not None else ""
            for index in group.index:
                chosen[where[index]], ends[where[index]] = bool(waited[index]), end
            continue
        for _, rows in group.groupby("seed", sort=False):
            ok = rows[rows["status"] == "ok"]
            scores = pd.to_numeric(ok[metric]) if metric in ok else pd.Series(dtype=float)
            scores = scores.dropna()
            if scores.empty:
                pick = rows.index[0]
            else:
                pick = scores.idxmin() if lower_is_better(metric) else scores.idxmax()
            for index in rows.index:
                chosen[where[index]] = index == pick
            ends[where[pick]] = sweep_end(rows.loc[pick, axis], values)
    return chosen, ends


def selection_text(group: pd.DataFrame, ok: pd.DataFrame, extended: int = 0) -> tuple[str, str]:
    """(what a cell's ``selected`` column says, its winner's sweep end or "") for the
    reported runs ``group`` of a ``select:`` cell and the ok ones among them ``ok``;
    ``extended``: the steps its sweep grew past the values listed (``select.extend``)."""
    axis, metric = group["select_axis"].iloc[0], group["select_metric"].iloc[0]
    on = str(group["select_seeds"].iloc[0])
    won = " ".join(str(v) for v in dict.fromkeys(ok[axis])) or "none"
    if on:
        text = f"{axis}={won} by mean {metric} on seeds {on} (not among the reported)"
    else:
        chosen = " ".join(str(v) for v in ok[axis])
        text = f"{axis} by {metric} per seed, on the reported seeds (biased up): {chosen}"
    if extended:
        text += f"; sweep extended {extended} step{'s' * (extended > 1)} past the values listed"
    ends = sorted({e for e in group["select_edge"].fillna("") if e})
    if ends:
        text += f"; won at the {' and '.join(ends)} {axis} swept: extend the sweep"
    reasons = group["select_reason"].fillna("") if "select_reason" in group else []
    if reason := next((r for r in reasons if r), ""):  # the grid's own word on its sweep
        text += f"; sweep reason: {reason}"
    return text, " ".join(ends)
