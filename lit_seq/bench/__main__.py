"""Benchmark lit_seq against hand-written baselines, side by side, and report ratios.

    python -m lit_seq.bench [--out FILE.json] [--sections overhead,datagen,...] [--quick]

Sections: overhead, datagen, time_to_quality, grid, memory, utilisation, pack, pack_step,
mixers, compile, dropout_step, deletang_step, range_eval (default: all). Prints one table per section and writes them
all as JSON. ``--quick`` shrinks every step count to a
smoke run (about a minute; the numbers then mean nothing). A section that crashes is
recorded with its error and the others still run; the exit code is then 1.

OpenMP threads are told to sleep rather than spin while waiting (OMP_WAIT_POLICY=PASSIVE,
unless already set): on a shared CPU spinning threads make every timing meaningless.
"""

import os

# must be set before torch (and its OpenMP runtime) is loaded
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import functools  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from datetime import datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import lightning  # noqa: E402
import torch  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from lit_seq.bench import compile as compile_section  # noqa: E402
from lit_seq.bench import (  # noqa: E402
    datagen,
    deletang_step,
    dropout_step,
    grid,
    memory,
    mixers,
    overhead,
    pack,
    pack_step,
    quality,
    range_eval,
    utilisation,
)
from lit_seq.bench.common import device_name, log  # noqa: E402
from lit_seq.util.assets import PACKAGE_DIR  # noqa: E402
from lit_seq.util.cli import comma_choices  # noqa: E402
from lit_seq.util.io import atomic_write_json  # noqa: E402
from lit_seq.util.runtime import end_with, quiet_libraries  # noqa: E402

# section -> (runner, the row fields its table shows)
SECTIONS = {
    "overhead": (
        overhead.run,
        ["task", "arch", "ratio", "cpu_ratio", "trainer_ratio", "fit_ratio"]
        + ["lit_steps_per_s", "hand_steps_per_s", "fit_fixed_s", "passed"],
    ),
    "datagen": (
        datagen.run,
        ["task", "examples", "length", "loop_s", "lit_seq_s", "ratio", "passed"],
    ),
    "time_to_quality": (
        quality.run,
        ["task", "arch", "target", "seconds_to_target", "step_at_target", "total_seconds"]
        + ["test_metric", "seed_seconds", "seed_metric", "ratio", "speedup_target", "passed"],
    ),
    "grid": (
        grid.run,
        ["workers", "seconds", "runs", "run_seconds_sum", "longest_run_s", "exit_code"],
    ),
    "memory": (
        memory.run,
        ["what", "peak_rss_mb", "rss_first_mb", "rss_last_mb", "growth"],
    ),
    "utilisation": (
        utilisation.run,
        ["task", "arch", "params", "batch", "gflop_per_step", "step_ms", "gflops"]
        + ["pct_of_peak"],
    ),
    "pack": (
        pack.run,
        ["task", "arch", "k", "solo_s", "packed_s", "solo_steps_per_s", "packed_steps_per_s"]
        + ["speedup", "loop_speedup", "first_loss_diff", "max_loss_diff", "max_metric_diff"]
        + ["float64_diff"],
    ),
    "pack_step": (
        pack_step.run,
        ["task", "arch", "k", "folded_ms", "looped_ms", "solo_ms", "folded_vs_looped"]
        + ["folded_vs_solo", "folded_ops", "looped_ops"],
    ),
    "mixers": (
        mixers.run,
        ["task", "arch", "d_model", "n_layers", "params", "step_ms", "cpu_ms", "steps_per_s"]
        + ["vs_lstm", "wall_vs_lstm", "passed"],
    ),
    "compile": (
        compile_section.run,
        ["task", "arch", "batch", "length", "dropout", "eager_ms", "compiled_ms", "speedup"]
        + ["compile_s", "first_loss_diff"],
    ),
    "dropout_step": (
        dropout_step.run,
        ["length", "threads", "before_ms", "after_ms", "ratio", "load"],
    ),
    "deletang_step": (deletang_step.run, ["arch", "length", "batch", "step_ms", "load"]),
    "range_eval": (
        range_eval.run,
        ["arch", "lengths", "n", "token_steps_m", "range_cpu_s", "eval_steps_per_s"]
        + ["train_fwd_steps_per_s", "eval_vs_train_fwd", "mm_gflops", "bound_s", "vs_bound"]
        + ["load", "passed"],
    ),
}
# section -> {its result's key: the row fields of that further table}
SUB_TABLES = {
    "datagen": {
        "fresh": ["task", "arch", "on_device", "batch", "N", "mean_length", "draw_ms"]
        + ["step_ms", "draw_pct", "passed"],
    },
}
# section-level fields worth a line under the table
SUMMARY_FIELDS = ("status", "grid", "efficiency", "device", "steps", "repeats")
SUMMARY_FIELDS += ("peak_gflops", "threads")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lit_seq.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, help="write the results as JSON to this file")
    parser.add_argument(
        "--sections",
        type=comma_choices("sections", list(SECTIONS)),
        default=list(SECTIONS),
        help=f"comma-separated subset of {','.join(SECTIONS)} (default: all)",
    )
    parser.add_argument("--quick", action="store_true", help="tiny step counts: a smoke run")
    parser.add_argument(
        "--steps",
        type=int,
        help=f"overhead: training steps per measurement (default {overhead.STEPS}; quick 8)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        help=f"overhead: interleaved rounds per row (default {overhead.REPEATS}; quick 1)",
    )
    parser.add_argument(
        "--workdir", type=Path, help="keep run folders here (default: a temp folder, removed)"
    )
    return parser


def _format(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    return str(value)


def section_table(name: str, result: dict, columns: list[str]) -> Table:
    """One section as a rich table; targets, notes and summary fields as its caption."""
    passed = result.get("passed")
    verdict = {True: "target met", False: "target MISSED", None: "no verdict"}[passed]
    table = Table(title=f"{name}: {result.get('target', '')} ({verdict})", title_justify="left")
    rows = result.get("rows", [])
    shown = [c for c in columns if any(c in row for row in rows)]
    for column in shown:
        table.add_column(column, justify="left" if column in ("task", "arch", "what") else "right")
    for row in rows:
        table.add_row(*(_format(row.get(c)) for c in shown))
    lines = [f"{k}: {_format(result[k])}" for k in SUMMARY_FIELDS if k in result]
    lines += list(result.get("notes", []))
    lines += [f"{r['task']}: {r['seed_note']}" for r in rows if r.get("seed_note")]
    table.caption = "\n".join(lines)
    table.caption_justify = "left"
    return table


def _git_revision() -> str | None:
    """The commit of the lit_seq measured (its package folder's checkout), with ``+dirty``
    when that working tree has changes; None for an installed package outside a checkout."""
    try:

        def git(*cmd: str) -> str:
            done = subprocess.run(
                ["git", *cmd], cwd=PACKAGE_DIR, capture_output=True, text=True, check=True
            )
            return done.stdout.strip()

        return git("rev-parse", "--short", "HEAD") + (
            "+dirty" if git("status", "--porcelain") else ""
        )
    except (OSError, subprocess.CalledProcessError):
        return None


def meta(args: argparse.Namespace) -> dict:
    return {
        "git": _git_revision(),
        "argv": sys.argv[1:],
        "quick": args.quick,
        "sections": args.sections,
        "started": datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "lightning": lightning.__version__,
        "device": device_name(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "load_average_start": list(os.getloadavg()),
    }


def run_sections(args: argparse.Namespace, workdir: Path, console: Console) -> dict:
    results: dict = {"meta": meta(args)}
    start = time.perf_counter()
    for name in args.sections:
        runner, columns = SECTIONS[name]
        section_start = time.perf_counter()
        if name == "overhead":
            runner = functools.partial(runner, steps=args.steps, repeats=args.repeats)
        try:
            result = runner(args.quick, workdir / name)
        except Exception as err:  # one broken section must not lose the others' numbers
            traceback.print_exc()
            result = {"status": f"error: {type(err).__name__}: {err}", "rows": [], "passed": False}
        result["seconds"] = round(time.perf_counter() - section_start, 1)
        results[name] = result
        console.print(section_table(name, result, columns))
        for key, sub_columns in SUB_TABLES.get(name, {}).items():
            if key in result:
                console.print(section_table(f"{name} {key}", result[key], sub_columns))
        if args.out:  # keep what is done so far, should a later section be interrupted
            atomic_write_json(args.out, results)
    results["meta"]["seconds"] = round(time.perf_counter() - start, 1)
    results["meta"]["load_average_end"] = list(os.getloadavg())
    return results


def main(argv: list[str] | None = None) -> int:
    quiet_libraries()
    args = build_parser().parse_args(argv)
    console = Console()
    if not console.is_terminal:  # a log file: room for every column
        console = Console(width=160)
    log(f"sections {args.sections}{' (quick)' if args.quick else ''} on {device_name()}")
    if args.workdir:
        results = run_sections(args, args.workdir, console)
    else:
        with tempfile.TemporaryDirectory(prefix="lit_seq_bench_") as tmp:
            results = run_sections(args, Path(tmp), console)
    if args.out:
        atomic_write_json(args.out, results)
        log(f"wrote {args.out}")
    errors = [n for n in args.sections if str(results[n].get("status", "")).startswith("error")]
    return 1 if errors else 0


if __name__ == "__main__":
    end_with(main)
