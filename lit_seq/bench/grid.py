"""Grid scaling: the same ablation grid with 1 and with 2 local workers.

Each grid (a shipped one, from ``lit_seq/ablations``) runs as its own ``python -m
lit_seq.ablate GRID --out DIR --workers N --wandb=off`` into a fresh folder (so nothing is
resumed). efficiency = t1 / (2 * t2): 1.0 means two workers finish in half the time of one.
"""

import json
import time
from pathlib import Path

from lit_seq.bench.common import NO_WANDB, log, output_tail, run_module
from lit_seq.util.assets import GRID_DIR, shipped_name

TARGET = 0.8


def run_grid(grid: Path, out_dir: Path, workers: int, timeout: float) -> dict:
    """One grid run in a subprocess; wall seconds, exit code and the tail of its output."""
    args = [str(grid), "--out", str(out_dir), "--workers", str(workers), NO_WANDB]
    start = time.perf_counter()
    proc = run_module("lit_seq.ablate", *args, timeout=timeout)
    seconds = time.perf_counter() - start
    runs = _run_seconds(out_dir)
    return {
        "workers": workers,
        "seconds": round(seconds, 2),
        "exit_code": proc.returncode,
        "runs": len(runs),
        # the runs' own wall times: their sum growing with more workers means the runs slow
        # each other down (cores or threads shared); the longest bounds any schedule
        "run_seconds_sum": round(sum(runs), 1),
        "longest_run_s": round(max(runs, default=0.0), 1),
        "tail": output_tail(proc, 5),
    }


def _run_seconds(out_dir: Path) -> list[float]:
    """``wall_seconds`` of every run record the grid wrote (``records/*.json``)."""
    seconds = []
    for path in sorted((out_dir / "records").glob("*.json")):
        try:
            value = json.loads(path.read_text()).get("wall_seconds")
        except (OSError, ValueError):
            continue
        if isinstance(value, int | float):
            seconds.append(float(value))
    return seconds


def run(quick: bool, workdir: Path) -> dict:
    grid = GRID_DIR / ("smoke.yaml" if quick else "arch.yaml")
    rows = []
    for workers in (1, 2):
        log(f"grid: {grid.name} with {workers} worker(s)")
        rows.append(run_grid(grid, workdir / f"{grid.stem}-w{workers}", workers, timeout=7200))
    t1, t2 = rows[0]["seconds"], rows[1]["seconds"]
    efficiency = t1 / (2 * t2)
    failed = [r["workers"] for r in rows if r["exit_code"] != 0]
    return {
        "status": "ok" if not failed else f"grid failed with workers={failed}",
        "grid": shipped_name(grid),  # ablations/<name>.yaml, wherever lit_seq is installed
        "target": f"efficiency >= {TARGET}",
        "notes": [
            "efficiency = t1 / (2 * t2); each grid in a fresh folder, W&B off",
            "run_seconds_sum: the runs' own wall times added up (more with 2 workers = runs "
            "slowed by sharing the machine); longest_run_s: no schedule beats it",
        ],
        "rows": rows,
        "efficiency": round(efficiency, 3),
        "passed": efficiency >= TARGET and not failed,
    }
