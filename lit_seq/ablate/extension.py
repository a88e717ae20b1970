"""Growing a ``select:`` sweep past the end its winner sits at (``select: {extend: N}``).

A winner at the lowest or highest value swept says the best value may lie beyond. With
``extend: N``, once the selection seeds have run every value, a winner at an end adds the
value one geometric step past it (:func:`beyond`: the end times the ratio of the two
outermost values there, so lr 1e-4, 3e-4, ... -> 3.33e-05), which runs on the selection
seeds; then the group chooses again (``lit_seq.results.selection.choose_value``), at most N
times. A value added never reorders the others, so the winner either moves to the new value
or stays where it was, now inside: a group grows in one direction only. The grid's reported
seeds wait until their group has decided (``lit_seq.ablate.select.resolve``).

Deterministic and resumable: :func:`decide` reads the records alone, so a driver killed and
run again makes the same choices. An added value's runs are ordinary runs, each with its own
``lr=...`` cell, run folder and record (``select_extension``: the step that added it); a
failed one runs again on the next call, like any failed run. :func:`extend_sweeps` hands
each round's runs to the grid's executor, so it works with either (local or Ray).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from lit_seq.ablate.axes import config_path
from lit_seq.ablate.grid import check_cells
from lit_seq.ablate.jobs import Executor, GridJob, OnRecord, OnStart
from lit_seq.ablate.order import longest_first
from lit_seq.ablate.spec import Run, cell_name
from lit_seq.record import RunRecord, format_value, read_records
from lit_seq.results.selection import choose_value, sweep_end

SIGNIFICANT = 3  # digits an added value keeps: a short run id, the same on every machine
ENDS = ("lowest", "highest")


@dataclass(frozen=True)
class Sweep:
    """One group of a ``select:`` block that may extend: what decides it, what its runs copy."""

    group: str  # select_group: the cell id without the selected axis
    axis: str
    metric: str  # val/<metric> the values compete on
    seeds: tuple[int, ...]  # the selection seeds
    values: tuple  # the values the grid lists, in its order
    limit: int  # select.extend: steps it may add at most
    templates: tuple[Run, ...]  # its runs at values[0], one per selection seed


def beyond(values: list, end: str) -> float:
    """The value one geometric step past the ``end`` (``lowest`` / ``highest``) of the
    numbers ``values``: [1e-4, 3e-4, 1e-3] -> 3.33e-05 (lowest), 0.00333 (highest)."""
    numbers = sorted(float(v) for v in values)
    outer, inner = (numbers[0], numbers[1]) if end == "lowest" else (numbers[-1], numbers[-2])
    step = outer * outer / inner  # outer * (outer / inner): the same ratio once more
    for digits in range(SIGNIFICANT, 18):  # more digits only where rounding lands on a value
        value = float(f"{step:.{digits}g}")
        if value not in numbers:
            return value
    return step


def reach(values: list, limit: int) -> dict[str, list[float]]:
    """The values ``limit`` steps past each end would add (a group takes one end only)."""
    out = {}
    for end in ENDS:
        grown = list(values)
        for _ in range(limit):
            grown.append(beyond(grown, end))
        out[end] = grown[len(values) :]
    return out


def sweeps(runs: list[Run]) -> list[Sweep]:
    """The groups of the checked grid ``runs`` whose ``select:`` may extend (``extend`` > 0)."""
    found: dict[str, Sweep] = {}
    for run in runs:
        if not (run.select_extend and run.select_from) or run.select_group in found:
            continue
        first = run.select_from[0]
        templates = tuple(
            r
            for r in runs
            if r.select_group == run.select_group
            and not r.select_from
            and r.axes[run.select_axis] == first
        )
        found[run.select_group] = Sweep(
            group=run.select_group,
            axis=run.select_axis,
            metric=run.select_metric,
            seeds=run.select_seeds,
            values=run.select_from,
            limit=run.select_extend,
            templates=templates,
        )
    return list(found.values())


def decide(sweep: Sweep, records: dict[str, RunRecord]) -> tuple[list, float | None]:
    """(the values ``sweep`` competes over: listed, then added; the value to run next, or None
    when there is none: the group has decided). Reads ``records`` alone.

    A value counts once every selection seed has a record of it, ok or failed (a failed run
    makes its value ineligible, as in the contest itself); a group some of whose values lack
    records has nothing to decide yet (None).
    """
    seeds = set(sweep.seeds)
    candidates = [
        (r.axes.get(sweep.axis), r.seed, r.ok, r.val_metrics.get(sweep.metric))
        for r in records.values()
        if r.select_group == sweep.group and not r.select_from
    ]

    def finished(value: object) -> bool:
        return seeds <= {seed for v, seed, _, _ in candidates if v == value}

    values = list(sweep.values)
    if not all(finished(v) for v in values):
        return values, None
    for _ in range(sweep.limit):
        winner = choose_value(candidates, values, list(sweep.seeds), sweep.metric)
        end = sweep_end(winner, values) if winner is not None else ""
        if not end:
            break  # inside the sweep (or nothing eligible): nothing beyond to try
        value = beyond(values, end)
        if not finished(value):
            return values, value
        values.append(value)
    return values, None


def added_run(sweep: Sweep, template: Run, value: float, step: int) -> Run:
    """``template`` (a run of the group at a listed value) at ``value``, added ``step`` steps
    past the sweep: its own cell, run id and arguments. Not checked yet: ``check_cells``
    sets its digest, cost and pack key."""
    axes = {**template.axes, sweep.axis: value}
    cell = cell_name(template.block, axes)
    flag = f"--{config_path(sweep.axis, 'grid')}="
    overrides = tuple(
        f"{flag}{format_value(value)}" if arg.startswith(flag) else arg
        for arg in template.overrides
    )
    return dataclasses.replace(
        template,
        run_id=f"{cell}__seed={template.seed}",
        cell=cell,
        axes=axes,
        overrides=overrides,
        select_extension=step,
    )


def added_runs(sweep: Sweep, values: list, value: float | None) -> list[Run]:
    """The runs of the values past the listed ones: those in ``values``, and ``value``."""
    added = [*values[len(sweep.values) :], *([] if value is None else [value])]
    return [
        added_run(sweep, template, v, step)
        for step, v in enumerate(added, 1)
        for template in sweep.templates
    ]


def describe(sweep: Sweep, done: dict[str, RunRecord]) -> str:
    """One ``--dry-run`` line: the values ``sweep`` may add at each end, and how many of
    their runs are done."""
    ends = reach(list(sweep.values), sweep.limit)
    possible = [
        added_run(sweep, template, v, step)
        for values in ends.values()
        for step, v in enumerate(values, 1)
        for template in sweep.templates
    ]
    n_done = sum(r.run_id in done and done[r.run_id].ok for r in possible)
    lower, higher = (" ".join(format_value(v) for v in ends[end]) for end in ENDS)
    seeds = ",".join(map(str, sweep.seeds))
    return (
        f"  {sweep.group}: select may extend {sweep.axis} (at most {sweep.limit} step(s), "
        f"toward the end its winner sits at) to {lower} (lower) or {higher} (higher), each "
        f"on seeds {seeds}; done {n_done}/{sweep.limit * len(sweep.seeds)}"
    )


def extend_sweeps(
    groups: list[Sweep],
    *,
    job: GridJob,
    execute: Executor,
    on_start: OnStart,
    on_record: OnRecord,
    on_added: Callable[[int], None],
    where: str,
) -> tuple[dict[str, list], list[Run]]:
    """Run the values ``groups`` add, round by round, until every group has decided; return
    the values each group competed over (listed, then added) and every added run.

    Each added run is tried at most once per call (a failed one runs again on the next);
    ``on_added(n)``: n more runs are about to run; ``where``: the grid file's name, for a
    cell that fit refuses (``grid.check_cells``).
    """
    if not groups:
        return {}, []
    tried: set[str] = set()
    built: dict = {}  # each added cell is built once
    while True:
        records = read_records(job.out_dir)
        decided = {sweep.group: decide(sweep, records) for sweep in groups}
        added = [run for sweep in groups for run in added_runs(sweep, *decided[sweep.group])]
        todo = [
            run
            for run in added
            if run.run_id not in tried and not (run.run_id in records and records[run.run_id].ok)
        ]
        if not todo:
            return {group: values for group, (values, _) in decided.items()}, added
        tried.update(run.run_id for run in todo)
        on_added(len(todo))
        execute(longest_first(check_cells(todo, where, built)), job, on_start, on_record)
