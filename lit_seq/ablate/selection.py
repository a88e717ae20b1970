"""The second phase of a ``select: {seeds: [...]}`` block: give each waiting run its value.

A run whose seed does not compete (``Run.select_from`` non-empty) waits until the runs of
its ``select_group`` on the selection seeds have finished; then it takes the value they
chose (``lit_seq.results.selection``) and runs like any other. With ``select.extend`` the
values include those its group added past its sweep (``lit_seq.ablate.extension``), so it
waits for those too. Deterministic: a resumed grid chooses the same value from the same
records.
"""

from __future__ import annotations

import dataclasses

from lit_seq.ablate.axes import config_path
from lit_seq.ablate.spec import Run
from lit_seq.population.train import OPTIMIZER_OPTIONS
from lit_seq.record import RunRecord, format_value
from lit_seq.results.selection import choose_value


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
