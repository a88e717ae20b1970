"""Run an ablation grid; re-running the same command resumes it.

    python -m lit_seq.ablate ablations/smoke.yaml [--out DIR] [--workers N] [--dry-run]
                             [--wandb auto|online|offline|off] [--executor local]

Results go to ``--out`` (default ``results/<grid name>``): one record per run, then the
tables (runs / aggregate as CSV, Parquet, Markdown) and plots; ``python -m lit_seq.report
DIR`` rebuilds those from the records. Finished runs are skipped on a re-run; failed or
interrupted ones run again. A folder made by a different grid is refused.
Exit codes: 0 every run ok, 1 some run failed, 2 bad input (nothing trained or touched).
"""

import argparse
import sys
from pathlib import Path

from rich.console import Console

from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.executor import EXECUTORS, GridJob
from lit_seq.ablate.progress import GridProgress
from lit_seq.ablate.records import check_out_dir, init_out_dir, lock_out_dir, read_records
from lit_seq.ablate.spec import Run, load_grid
from lit_seq.ablate.wandb_summary import log_summary
from lit_seq.report import build_report
from lit_seq.tracking import WANDB_MODES, resolve_wandb_mode


def _workers(text: str) -> int:
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
    parser.add_argument("grid", type=Path, help="grid file, e.g. ablations/smoke.yaml")
    parser.add_argument("--out", type=Path, help="output folder (default results/<grid name>)")
    parser.add_argument("--workers", type=_workers, default=1, help="parallel runs (default 1)")
    parser.add_argument("--dry-run", action="store_true", help="list the runs, train nothing")
    parser.add_argument(
        "--wandb",
        choices=WANDB_MODES,
        default="auto",
        help="W&B: auto = online with an API key, else offline files; off = no W&B",
    )
    parser.add_argument("--executor", choices=sorted(EXECUTORS), default="local")
    return parser


def print_plan(spec: dict, runs: list[Run], done: dict, out_dir: Path, console: Console) -> None:
    """The cells of the grid, their base configs and what is left to run (``--dry-run``)."""
    cells: dict[str, list[Run]] = {}
    for run in runs:
        cells.setdefault(run.cell, []).append(run)
    console.print(f"grid {spec['name']}: {len(runs)} runs", style="bold", highlight=False)
    for cell, members in cells.items():
        ok = sum(done.get(r.run_id, {}).get("status") == "ok" for r in members)
        seeds = ",".join(str(r.seed) for r in members)
        line = f"  {cell}  [{members[0].config}]  seeds {seeds}  done {ok}/{len(members)}"
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    n_done = sum(done.get(r.run_id, {}).get("status") == "ok" for r in runs)
    console.print(
        f"{len(cells)} cells x {len(spec['seeds'])} seeds = {len(runs)} runs; "
        f"{n_done} done, {len(runs) - n_done} to run -> {out_dir}",
        highlight=False,
        soft_wrap=True,
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console()
    try:
        spec, runs = load_grid(args.grid)
        wandb_mode = resolve_wandb_mode(args.wandb)
        out_dir = (args.out or Path("results") / spec["name"]).absolute()
        exists = check_out_dir(out_dir, spec["name"], runs)
        done = read_records(out_dir) if exists else {}
        if args.dry_run:
            print_plan(spec, runs, done, out_dir, console)
            return 0
        init_out_dir(out_dir, spec, runs)
        lock = lock_out_dir(out_dir)  # noqa: F841 - held until this process ends
    except BadGrid as err:
        print(f"lit_seq.ablate: error: {err}", file=sys.stderr)
        return 2
    todo = [r for r in runs if done.get(r.run_id, {}).get("status") != "ok"]
    console.print(
        f"grid {spec['name']}: {len(runs)} runs, {len(runs) - len(todo)} already done, "
        f"{len(todo)} to run on {args.workers} {args.executor} worker(s); W&B {wandb_mode}; "
        f"-> {out_dir}",
        highlight=False,
        soft_wrap=True,
    )
    job = GridJob(out_dir, spec["name"], wandb_mode, args.workers)
    try:
        with GridProgress(len(runs), len(runs) - len(todo), console) as progress:
            EXECUTORS[args.executor](todo, job, progress.start, progress.finish)
    except KeyboardInterrupt:
        console.print("interrupted: finished runs are saved; run the same command to resume")
        return 130
    _, aggregate, plots = build_report(out_dir, console)
    config = {"grid": spec, "runs": len(runs), "out_dir": str(out_dir)}
    log_summary(out_dir, spec["name"], wandb_mode, aggregate, plots, config, console=console)
    final = read_records(out_dir)
    failed = [r.run_id for r in runs if final.get(r.run_id, {}).get("status") != "ok"]
    if failed:
        console.print(f"{len(failed)} of {len(runs)} runs failed: see records/ and logs/")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
