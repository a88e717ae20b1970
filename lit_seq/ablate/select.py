"""A grid's ``select:`` block: its fields checked before anything trains (:func:`check_select`,
called by ``spec`` on every block), then each waiting run given the value its group chose.

The rule that picks the winner, and why the selection seeds are not grid seeds, is
``lit_seq.results.selection`` (the tables read it too). A run whose seed does not compete
(``Run.select_from`` non-empty) waits until the runs of its ``select_group`` on the
selection seeds have finished, then takes the value they chose (:func:`resolve`), values
added past its sweep by ``select.extend`` (``lit_seq.ablate.extension``) included.
Deterministic: a resumed grid chooses the same value from the same records.
"""

from __future__ import annotations

import dataclasses

from lit_seq.ablate.axes import AXES, config_path
from lit_seq.ablate.common import BadGrid, check_keys
from lit_seq.ablate.runs import Run
from lit_seq.population.train import OPTIMIZER_OPTIONS
from lit_seq.record import RunRecord, format_value
from lit_seq.results.selection import (
    MIN_SELECT_SEEDS,
    MIN_SWEEP_SPAN,
    MIN_SWEEP_VALUES,
    choose_value,
    narrow_sweep,
    wide_sweep,
)

SELECT_KEYS = ("axis", "metric", "seeds", "sweep_reason", "extend", "score")
SCORES = ("selection", "full")  # select.score: what a run on a selection seed is scored on


def check_select(
    select: object, axes: dict, grid_seeds: list, where: str, paper: str | None = None
) -> dict:
    """A block's ``select: {axis: lr, metric: val/acc, seeds: [100, 101, 102]}``: the axis
    must vary in the block; the values compete on ``seeds`` (the rule and why:
    ``lit_seq.results.selection``), at least MIN_SELECT_SEEDS of them, none a grid seed;
    ``sweep_reason`` and ``extend`` as :func:`check_sweep` says.

    ``score``: what the runs on the selection seeds are scored on. ``selection`` (the
    default) is what selection reads, their validation scores (and the test set at the
    training length, whose loss tells a diverged run); no longer test sets, no range
    evaluation, which cost most of a short run's time (issue 57). ``full`` scores them as
    the reported runs are. A grid that names ``paper:`` (Delétang et al. 2023) defaults to
    ``full``: that paper reports the maximum over seeds *and* rates, a number every run's
    range score enters (``lit_seq.results.paper``'s ``max``)."""
    if select is None:
        return {}
    select = check_keys(select, SELECT_KEYS, f"{where}: select")
    axis = select.get("axis")
    varied = [k for k, values in axes.items() if len(values) > 1 and k != "task"]
    if axis not in varied:
        raise BadGrid(
            f"{where}: select.axis={axis!r} must be an axis the block varies: one of {varied}"
        )
    metric = select.get("metric", "")
    if metric and (not isinstance(metric, str) or not metric.startswith("val/")):
        raise BadGrid(f"{where}: select.metric={metric!r} must be a validation metric (val/...)")
    seeds = select.get("seeds")
    start = max(100, max(grid_seeds) + 1)  # clear of the seeds a grid may add later
    suggestion = list(range(start, start + MIN_SELECT_SEEDS))
    if (
        not isinstance(seeds, list)
        or len(seeds) < MIN_SELECT_SEEDS
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)
        or len(set(seeds)) != len(seeds)
    ):
        raise BadGrid(
            f"{where}: select.seeds={seeds!r} must list at least {MIN_SELECT_SEEDS} distinct "
            f"seeds (integers >= 0) whose mean validation score picks the {axis}, e.g. "
            f"{suggestion}"
        )
    if shared := [s for s in seeds if s in grid_seeds]:
        raise BadGrid(
            f"{where}: select.seeds {shared} are also the grid's seeds: a seed that chose the "
            f"{axis} would be in the mean it reports, lucky on average; use seeds the grid "
            f"does not list, e.g. {suggestion}"
        )
    reason, extend = check_sweep(select, axis, axes[axis], where)
    score = select.get("score", "full" if paper else "selection")
    if score not in SCORES:
        raise BadGrid(
            f"{where}: select.score={score!r} must be one of {list(SCORES)}: what the runs on "
            "the selection seeds are scored on (selection: their validation scores only)"
        )
    return {
        "axis": axis,
        "metric": metric or "",
        "seeds": tuple(seeds),
        "sweep_reason": reason,
        "extend": extend,
        "score": score,
    }


def check_sweep(select: dict, axis: str, values: list, where: str) -> tuple[str, int]:
    """(``select.sweep_reason``, ``select.extend``), checked: a learning-rate sweep meets the
    default of ``lit_seq.results.selection`` (at least 4 rates spanning 30x) unless the
    block says why not; ``extend`` needs a sweep of positive numbers to step geometrically."""
    reason = select.get("sweep_reason", "")
    if not isinstance(reason, str) or ("sweep_reason" in select and not reason.strip()):
        raise BadGrid(
            f"{where}: select.sweep_reason={reason!r} must be a sentence saying why the sweep "
            "is what it is (the tables print it beside the value chosen)"
        )
    if config_path(axis, where) == AXES["lr"] and not reason and (why := narrow_sweep(values)):
        raise BadGrid(
            f"{where}: axes.{axis}={values!r} {why}; a select: block sweeps at least "
            f"{MIN_SWEEP_VALUES} learning rates spanning at least {MIN_SWEEP_SPAN:g}x (max/min), "
            f"e.g. {wide_sweep(values)}, or states why not in select.sweep_reason"
        )
    extend = select.get("extend", 0)
    if isinstance(extend, bool) or not isinstance(extend, int) or extend < 0:
        raise BadGrid(
            f"{where}: select.extend={extend!r} must be an integer >= 0: how many values the "
            f"grid may add past the end of the {axis} sweep its winner sits at"
        )
    if extend and narrow_sweep(values) == "must be positive numbers":
        raise BadGrid(
            f"{where}: select.extend={extend} steps the {axis} sweep geometrically, so axes."
            f"{axis} must be positive numbers, got {values!r}"
        )
    return reason.strip(), extend


def resolve(
    run: Run, records: dict[str, RunRecord], values: list | None = None
) -> tuple[Run | None, str]:
    """``run`` with its value set (and an empty error), or (None, why no value was chosen).

    ``values``: those its group competed over, when it added some past its sweep (else
    ``run.select_from``); the run's record lists them as what it was chosen from.
    """
    axis = run.select_axis
    values = list(run.select_from) if values is None else list(values)
    candidates = [
        (r.axes.get(axis), r.seed, r.ok, r.val_metrics.get(run.select_metric))
        for r in records.values()
        if r.select_group == run.select_group and not r.select_from
    ]
    value = choose_value(candidates, values, list(run.select_seeds), run.select_metric)
    if value is None:
        return None, (
            f"select: no {axis} of {values} has ok runs on every selection seed "
            f"{list(run.select_seeds)} of {run.select_group}; nothing to choose from"
        )
    arg = f"--{config_path(axis, 'grid')}={format_value(value)}"
    seed_at = next(i for i, a in enumerate(run.overrides) if a.startswith("--seed_everything="))
    overrides = (*run.overrides[:seed_at], arg, *run.overrides[seed_at:])
    # a value the optimizer reads keeps the run's pack; any other may change its shapes
    path = config_path(axis, "grid")
    keep = path.startswith("model.") and path.rsplit(".", 1)[-1] in OPTIMIZER_OPTIONS
    resolved = dataclasses.replace(
        run,
        axes={**run.axes, axis: value},
        overrides=overrides,
        select_from=tuple(values),
        pack_key=run.pack_key if keep else "",
    )
    return resolved, ""
