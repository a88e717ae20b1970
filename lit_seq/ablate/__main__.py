"""Run an ablation grid; re-running the same command resumes it.

    python -m lit_seq.ablate ablations/smoke.yaml [--out DIR] [--workers N] [--threads T]
                             [--dry-run] [--pack auto|on|off] [--compile auto|on|off]
                             [--wandb auto|online|offline|off] [--wandb-project P]
                             [--wandb-entity E] [--time-limit SECONDS] [--executor local|ray]
                             [--ray-address auto|HOST:PORT] [--ray-num-cpus C] [--ray-num-gpus G]
                             [--ray-pack-num-gpus G]

A sweep needs no grid file: ``--config CONFIG`` with ``--axis KEY=V1,V2,...`` (any number),
``--seeds 0,1,2`` and any fit overrides (``--steps 50``, ``--model.dropout 0.1``) is the grid of
that config over those axes, named ``--name`` or ``<folder>-<stem>-sweep``
(``lit_seq.ablate.inline``); it is checked, run, resumed and reported as a grid file is::

    python -m lit_seq.ablate --config configs/echo/rnn.yaml --axis model.lr=0.001,0.003,0.01 \\
                             --seeds 0,1,2 --steps 50

Results go to ``--out`` (default ``results/<grid name>``): one record per run, then the
tables (runs / aggregate as CSV, Parquet, Markdown) and plots; ``python -m lit_seq.report
DIR`` rebuilds those from the records. Finished runs are skipped on a re-run; failed or
interrupted ones run again, with either executor. A folder made by a different grid is refused.
A ``select:`` block runs its values on its selection seeds first, then the grid's seeds at the
winner; with ``select.extend: N`` a winner at an end of the sweep first adds the next value
past it (up to N), run like any other (``--dry-run`` lists the values that may come).
W&B project and entity, first found wins: --wandb-project / --wandb-entity, the grid's
``wandb: {project: P, entity: E}``, WANDB_PROJECT / WANDB_ENTITY, the default (lit_seq).
``--time-limit SECONDS`` stops the grid once that much wall clock has passed since the
command started, as SIGTERM stops it (a cluster job's time limit, a preemptible machine):
every finished run keeps its record, the runs still training are stopped and start over
when the same command runs again (docs/grids.md, "Time-limited jobs and preemptible
machines").
Exit codes: 0 every run ok, 1 some run failed, 2 bad input (nothing trained or touched),
124 stopped at --time-limit, 143 stopped by SIGTERM, 130 by Ctrl-C (the last three: run the
same command to resume).
"""

import argparse
import contextlib
import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.extension import describe, extend_sweeps, sweeps
from lit_seq.ablate.folder import added_runs, check_out_dir, init_out_dir, lock_out_dir
from lit_seq.ablate.grid import check_cells, load_grid
from lit_seq.ablate.inline import WHERE, split_overrides, sweep_spec
from lit_seq.ablate.jobs import Executor, GridJob, RayOptions
from lit_seq.ablate.local_pool import local_executor
from lit_seq.ablate.order import longest_first
from lit_seq.ablate.packing import PACK_MODES
from lit_seq.ablate.progress import GridProgress, wrap
from lit_seq.ablate.ray_executor import ray_executor, ray_options, require_ray
from lit_seq.ablate.run_one import failed_record
from lit_seq.ablate.select import resolve
from lit_seq.ablate.spec import Run, expand, parse_spec
from lit_seq.ablate.time_limit import GridStopped, parse_time_limit, stopping
from lit_seq.ablate.wandb_summary import log_summary
from lit_seq.fit.wandb_modes import DEFAULT_PROJECT, WANDB_MODES, resolve_wandb_mode, wandb_target
from lit_seq.record import RunRecord, read_records, write_record
from lit_seq.results.report import build_report
from lit_seq.systems.compiled import COMPILE_CHOICES
from lit_seq.util.console import output_console
from lit_seq.util.runtime import disk_full, end_with, quiet_libraries

# an executor for the whole of one grid, entered once (the local one keeps its workers
# between the grid's phases)
EXECUTORS: dict[str, Callable[[GridJob], contextlib.AbstractContextManager[Executor]]] = {
    "local": local_executor,
    "ray": ray_executor,
}


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lit_seq.ablate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "grid",
        type=Path,
        nargs="?",
        help="grid file, e.g. ablations/smoke.yaml (or a shipped grid's name); or none, and "
        "--config with --axis for a sweep",
    )
    sweep = parser.add_argument_group(
        "a sweep without a grid file (lit_seq.ablate.inline)",
        "any other --KEY VALUE is a fit override of every run: a grid key (--steps 50, --lr "
        "0.01) or a dotted config path (--model.dropout 0.1)",
    )
    sweep.add_argument("--config", metavar="CONFIG", help="the base config of every run")
    sweep.add_argument(
        "--axis",
        action="append",
        default=[],
        metavar="KEY=V1,V2,...",
        help="an axis: a grid key or dotted config path and its values, e.g. "
        "model.lr=0.001,0.003,0.01; repeat for more axes (their product, first outermost)",
    )
    sweep.add_argument("--seeds", metavar="S1,S2,...", help="the seeds of every cell (default 0)")
    sweep.add_argument(
        "--name", help="the grid's name (default <config's folder>-<config's stem>-sweep)"
    )
    parser.add_argument("--out", type=Path, help="output folder (default results/<grid name>)")
    parser.add_argument("--workers", type=_positive, default=1, help="parallel runs (default 1)")
    parser.add_argument(
        "--threads",
        type=_positive,
        default=1,
        metavar="T",
        help="torch threads of every run, whatever --workers is (default 1): the same runs with "
        "another thread count need not give the same digits (docs/grids.md); every record keeps "
        "it (torch_threads)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="list the runs (and the values a select: extend may add), train nothing",
    )
    parser.add_argument(
        "--pack",
        choices=PACK_MODES,
        default="auto",
        help="train runs of one shape (seeds, learning rates) together as one population in "
        "one loop, each still its own run (docs/packing.md): auto = only the model families "
        "measured to be faster that way on this kind of device (CPU: echo rnn and lstm; GPU: "
        "not measured yet, none), on = every packable run, off = each run alone; with --executor "
        "ray each population is one Ray task (docs/ray.md)",
    )
    parser.add_argument(
        "--compile",
        choices=COMPILE_CHOICES,
        default="auto",
        help="every run's (and population's) training step through torch.compile: auto = on "
        "a GPU only, on, off (the fit's --compile; docs/performance.md); a grid resumed with "
        "another value stays resumable",
    )
    parser.add_argument(
        "--wandb",
        choices=WANDB_MODES,
        default="auto",
        help="W&B: auto = online with an API key, else offline files; off = no W&B",
    )
    parser.add_argument(
        "--wandb-project",
        metavar="P",
        help="W&B project of every run and of the summary run; wins over the grid's "
        "wandb: {project: ...}, which wins over WANDB_PROJECT, else lit_seq",
    )
    parser.add_argument(
        "--wandb-entity",
        metavar="E",
        help="W&B entity (user or team), likewise: this > the grid's wandb: {entity: ...} > "
        "WANDB_ENTITY > W&B's default for the API key",
    )
    parser.add_argument(
        "--time-limit",
        metavar="SECONDS",
        help="stop the grid this many seconds after the command started, as SIGTERM does: "
        "finished runs keep their records, the runs still training start over when the same "
        "command runs again (exit code 124); for a cluster job pass a bit less than its limit "
        "(docs/grids.md)",
    )
    parser.add_argument(
        "--executor",
        choices=sorted(EXECUTORS),
        default="local",
        help="local: --workers processes on this machine; ray: one Ray task per run or population "
        "(docs/ray.md)",
    )
    ray = parser.add_argument_group("ray executor (see docs/ray.md)")
    ray.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="join a running cluster: auto or HOST:PORT (default: RAY_ADDRESS, else a local Ray)",
    )
    ray.add_argument(
        "--ray-num-cpus",
        type=float,  # checked with the grid's ray: section (ray_executor.ray_options)
        metavar="C",
        help="CPUs Ray reserves per run, at least --threads (default: the grid's ray: section, "
        "else 1)",
    )
    ray.add_argument(
        "--ray-num-gpus",
        type=float,
        metavar="G",
        help="GPUs per run; 0.25 packs 4 runs per GPU (default: the grid's ray: section, "
        "else 1 if the cluster has GPUs, else 0)",
    )
    ray.add_argument(
        "--ray-pack-num-gpus",
        type=float,
        metavar="G",
        help="GPUs per population (--pack), at most 1 (default: the grid's ray: section, else "
        "its members' --ray-num-gpus added up, at most 1)",
    )
    return parser


def _done(done: dict[str, RunRecord], run: Run) -> bool:
    """Whether ``run`` has an ok record scored on all it asks: a selection run scored for
    selection only runs again when its block now asks ``select.score: full``."""
    record = done.get(run.run_id)
    return record is not None and record.ok and (record.scoring == "full" or run.scoring != "full")


def print_plan(
    spec: dict, runs: list[Run], done: dict[str, RunRecord], out_dir: Path, console: Console
) -> None:
    """The cells of the grid, their base configs and what is left to run (``--dry-run``)."""
    cells: dict[str, list[Run]] = {}
    for run in runs:
        cells.setdefault(run.cell, []).append(run)
    console.print(f"grid {spec['name']}: {len(runs)} runs", style="bold", highlight=False)
    lines = []  # printed at once: a print per line takes seconds for 10,000 cells
    for cell, members in cells.items():
        ok = sum(_done(done, r) for r in members)
        seeds = ",".join(str(r.seed) for r in members)
        line = f"  {cell}  [{members[0].config}]  seeds {seeds}  done {ok}/{len(members)}"
        lines += wrap(line, indent=6)
    growing = sweeps(runs)
    for sweep in growing:  # what select.extend may add, one end per group
        lines += wrap(describe(sweep, done), indent=6)
    if lines:
        console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)
    n_done = sum(_done(done, r) for r in runs)
    waiting = sum(bool(r.select_from) for r in runs)
    shape = (
        f"{len(cells)} cells, {len(runs)} runs ({waiting} of them run at the value their "
        "select: chose)"
        if waiting
        else f"{len(cells)} cells x {len(spec['seeds'])} seeds = {len(runs)} runs"
    )
    if growing:
        most = sum(s.limit * len(s.seeds) for s in growing)
        shape += f", up to {most} more if select: extends its sweeps"
    console.print(
        f"{shape}; {n_done} done, {len(runs) - n_done} to run -> {out_dir}",
        highlight=False,
        soft_wrap=True,
    )


@dataclass
class Plan:
    """A grid checked and ready to run: its runs, what earlier calls finished, where to."""

    spec: dict
    runs: list[Run]
    done: dict[str, RunRecord]
    out_dir: Path
    wandb_mode: str
    ray: RayOptions
    where: str  # how errors name the grid: its file's name, or "command line"
    wandb_project: str = DEFAULT_PROJECT
    wandb_entity: str | None = None


def _source(args: argparse.Namespace, extra: list[str], raw: dict | None) -> tuple[dict, list, str]:
    """The grid to run, its checked runs and how errors name it: ``raw`` (a grid as a dict,
    the Python API's), the grid file, or a sweep of ``--config`` (``extra``: its overrides)."""
    sweep_flags = {"--config": args.config, "--axis": args.axis, "--seeds": args.seeds}
    sweep_flags |= {"--name": args.name}
    if raw is not None or args.grid is not None:
        if given := [f for f, v in sweep_flags.items() if v] + extra:
            raise BadGrid(
                f"{given[0]} is for a sweep without a grid file; a grid file sets its seeds, "
                "axes and overrides itself"
            )
        if raw is not None:
            spec = parse_spec(raw)
            return spec, check_cells(expand(spec), "grid"), "grid"
        spec, runs = load_grid(args.grid)
        return spec, runs, args.grid.name
    if args.config is None:
        raise BadGrid(
            "give a grid file, or --config CONFIG (with --axis KEY=V1,V2,...) for a sweep"
        )
    spec = parse_spec(sweep_spec(args.config, args.axis, args.seeds, extra, args.name), WHERE)
    return spec, check_cells(expand(spec), WHERE), WHERE


def plan(args: argparse.Namespace, extra: list[str] = (), raw: dict | None = None) -> Plan:
    """Everything that can be refused before anything is written; BadGrid on any problem."""
    if args.executor == "ray":
        require_ray()  # before anything is read or written: one line, not a traceback
    spec, runs, where = _source(args, list(extra), raw)
    ray = ray_options(
        spec.get("ray"),
        args.ray_address,
        args.ray_num_cpus,
        args.ray_num_gpus,
        where=where,
        pack_num_gpus=args.ray_pack_num_gpus,
    )
    if args.executor == "ray" and args.threads > ray.num_cpus:  # oversubscribed: a crawl
        raise BadGrid(
            f"--threads={args.threads} exceeds the {ray.num_cpus:g} CPU(s) Ray reserves per run; "
            f"raise --ray-num-cpus to {args.threads} or lower --threads"
        )
    wandb_mode = resolve_wandb_mode(args.wandb)
    project, entity = wandb_target(
        args.wandb_project or spec["wandb"].get("project"),
        args.wandb_entity or spec["wandb"].get("entity"),
    )
    # every run is told where its W&B run goes, whatever the environment of its worker
    # and how its step runs (--compile: not in its digest, as the precision is not)
    flags = (f"--compile={args.compile}", f"--wandb.project={project}")
    flags += (f"--wandb.entity={entity}",) if entity else ()
    runs = [dataclasses.replace(r, overrides=(*r.overrides, *flags)) for r in runs]
    out_dir = (args.out or Path("results") / spec["name"]).absolute()
    exists = check_out_dir(out_dir, spec["name"], runs)
    done = read_records(out_dir) if exists else {}
    return Plan(spec, runs, done, out_dir, wandb_mode, ray, where, project, entity)


def _wandb_where(plan: Plan) -> str:
    """``offline, project lit_seq``: the W&B mode and, when on, where the runs go."""
    if plan.wandb_mode == "off":
        return "off"
    entity = f"{plan.wandb_entity}/" if plan.wandb_entity else ""
    return f"{plan.wandb_mode}, project {entity}{plan.wandb_project}"


def run_grid(
    plan: Plan,
    args: argparse.Namespace,
    console: Console,
    time_limit: float | None = None,
    started: float = 0.0,
) -> int:
    """Run what is left of ``plan``, then write the tables, plots and W&B summary; until the
    last run ends, SIGTERM and ``time_limit`` seconds after ``started`` stop it (GridStopped)."""
    spec, runs, out_dir = plan.spec, plan.runs, plan.out_dir
    todo = [r for r in runs if not _done(plan.done, r)]
    where = "as Ray tasks" if args.executor == "ray" else f"on {args.workers} local worker(s)"
    threads = f"{args.threads} torch thread{'s' if args.threads > 1 else ''} per run"
    console.print(
        f"grid {spec['name']}: {len(runs)} runs, {len(runs) - len(todo)} already done, "
        f"{len(todo)} to run {where}, {threads}; W&B {_wandb_where(plan)}; -> {out_dir}",
        highlight=False,
        soft_wrap=True,
    )
    pack = args.pack  # either executor: with Ray, each population is one task
    job = GridJob(
        out_dir, spec["name"], plan.wandb_mode, args.workers, plan.ray, pack, threads=args.threads
    )
    with (
        EXECUTORS[args.executor](job) as execute,
        GridProgress(len(runs), len(runs) - len(todo), console, out_dir) as progress,
        stopping(time_limit, started),  # innermost: off before the workers are let go
    ):
        execute(
            longest_first([r for r in todo if not r.select_from]),
            job,
            progress.start,
            progress.finish,
        )
        # a select: block with extend: values past the end its winner sits at, until decided
        values, added = extend_sweeps(
            sweeps(runs),
            job=job,
            execute=execute,
            on_start=progress.start,
            on_record=progress.finish,
            on_added=progress.add,
            where=plan.where,
        )
        # then the runs that take a value selected by the runs just finished
        records, ready = read_records(out_dir), []
        for run in (r for r in todo if r.select_from):
            resolved, error = resolve(run, records, values.get(run.select_group))
            if resolved is None:
                record = failed_record(run, job, error)
                write_record(out_dir, record)
                progress.finish(record)
            else:
                ready.append(resolved)
        if ready:
            execute(longest_first(ready), job, progress.start, progress.finish)
    _, aggregate, plots = build_report(out_dir, console, paper=spec.get("paper"))
    config = {"grid": spec, "runs": len(runs), "out_dir": str(out_dir)}
    log_summary(
        out_dir,
        spec["name"],
        plan.wandb_mode,
        aggregate,
        plots,
        config,
        project=plan.wandb_project,
        entity=plan.wandb_entity,
        console=console,
    )
    final = read_records(out_dir)
    failed = [r.run_id for r in [*runs, *added] if not _done(final, r)]
    if failed:
        total = len(runs) + len(added)
        console.print(f"{len(failed)} of {total} runs failed: see records/ and logs/")
        return 1
    return 0


def _say_growth(gained: list[str], grid: Plan, console: Console, verb: str) -> None:
    """One line when the grid gained runs since its folder was made (``folder``'s growth
    rule): how many, and that the runs the folder held are unchanged."""
    if gained:
        held = len(grid.runs) - len(gained)
        console.print(
            f"out folder {verb} by {len(gained)} run(s) the grid gained (e.g. {gained[0]}); "
            f"its {held} earlier run(s) are unchanged and keep their records",
            highlight=False,
            soft_wrap=True,
        )


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()  # --time-limit counts from here: the checks take time too
    quiet_libraries()
    parser = build_parser()
    known = set(parser._option_string_actions)  # argparse's table of the options it takes
    argv, extra = split_overrides(sys.argv[1:] if argv is None else argv, known)
    args = parser.parse_args(argv)
    ray_flags = (args.ray_address, args.ray_num_cpus, args.ray_num_gpus, args.ray_pack_num_gpus)
    if args.executor != "ray" and any(f is not None for f in ray_flags):
        parser.error("the --ray-* options need --executor ray")
    if args.executor == "ray" and args.workers != 1:
        parser.error("--workers is for --executor local; Ray runs as many runs as fit the cluster")
    try:
        return drive(args, output_console(), extra, started=started)[0]
    except BadGrid as err:
        print(f"lit_seq.ablate: error: {err}", file=sys.stderr)
        return 2


def drive(
    args: argparse.Namespace,
    console: Console,
    extra: list[str] = (),
    raw: dict | None = None,
    started: float | None = None,
) -> tuple[int, Path]:
    """Check, then run or (``--dry-run``) list the grid of ``args`` (``raw``: a grid as a
    dict instead); its exit code and out folder. BadGrid when refused: nothing trained.
    ``started``: when --time-limit starts counting (default now)."""
    started = time.monotonic() if started is None else started
    time_limit = None if args.time_limit is None else parse_time_limit(args.time_limit)
    grid = plan(args, extra, raw)
    if args.dry_run:
        print_plan(grid.spec, grid.runs, grid.done, grid.out_dir, console)
        _say_growth(added_runs(grid.out_dir, grid.runs), grid, console, "would grow")
        return 0, grid.out_dir
    # the lock first: a driver refused for a folder in use has changed nothing in it
    lock = lock_out_dir(grid.out_dir)
    try:
        _say_growth(init_out_dir(grid.out_dir, grid.spec, grid.runs), grid, console, "grows")
        return run_grid(grid, args, console, time_limit, started), grid.out_dir
    except GridStopped as stop:  # one line: what is saved, and how to go on
        ok = sum(_done(read_records(grid.out_dir), r) for r in grid.runs)
        console.print(stop.line(ok, len(grid.runs), grid.out_dir), highlight=False, soft_wrap=True)
        return stop.code, grid.out_dir
    except KeyboardInterrupt:
        console.print("interrupted: finished runs are saved; run the same command to resume")
        return 130, grid.out_dir
    except BadGrid:  # a resource request no node can meet (ray): nothing trained
        raise
    except Exception:
        if not disk_full(grid.out_dir):
            raise
        # records are written whole or not at all: free space and the same command resumes
        print(
            f"lit_seq.ablate: error: the disk holding {grid.out_dir} is full; free space, then "
            "run the same command to resume",
            file=sys.stderr,
        )
        return 1, grid.out_dir
    finally:
        lock.release()


if __name__ == "__main__":
    end_with(main)
