#!/usr/bin/env bash
# bash scripts/gpu_check.sh [OUT_DIR]
#
# The GPU check, on one GPU, in under 5 minutes: the GPU-marked tests, the benchmark's
# overhead and memory sections on the GPU, and the `arch` grid with 4 runs packed on the
# one GPU; then one summary table. Writes everything to OUT_DIR (default: $OUT_DIR, else
# $OUT, else gpu_check_out). Run from the repository root; uses .venv when it is there.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT_DIR="${1:-${OUT_DIR:-${OUT:-gpu_check_out}}}"
mkdir -p "$OUT_DIR"
PY=python
[[ -x .venv/bin/python ]] && PY=.venv/bin/python
export WANDB_MODE=disabled

$PY - <<'EOF'
import sys, torch
if not torch.cuda.is_available():
    sys.exit("gpu_check: no CUDA device visible; this script is for a GPU machine")
print(f"gpu_check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
EOF

start=$SECONDS
stage() { echo "== $1 ($((SECONDS - start)) s so far)"; }

stage "pytest -m gpu"
set +e
$PY -m pytest -m gpu -q 2>&1 | tee "$OUT_DIR/pytest_gpu.log"
tests_rc=${PIPESTATUS[0]}
set -e
if [[ $tests_rc -eq 5 ]]; then
    tests_rc=0  # exit 5: no GPU-marked tests collected, nothing failed
    echo "no GPU-marked tests"
fi

stage "benchmark: overhead and memory on the GPU"
set +e
$PY -m lit_seq.bench --sections overhead,memory --steps 80 --repeats 3 \
    --out "$OUT_DIR/bench_gpu.json" 2>&1 | tee "$OUT_DIR/bench_gpu.log"
bench_rc=${PIPESTATUS[0]}
set -e

stage "arch grid, 4 workers packed on one GPU"
grid_start=$SECONDS
set +e
$PY -m lit_seq.ablate ablations/arch.yaml --workers 4 --wandb off \
    --out "$OUT_DIR/arch_grid" 2>&1 | tee "$OUT_DIR/arch_grid.log"
grid_rc=${PIPESTATUS[0]}
set -e
grid_seconds=$((SECONDS - grid_start))

stage "summary"
$PY - "$OUT_DIR" "$tests_rc" "$bench_rc" "$grid_rc" "$grid_seconds" <<'EOF'
import json, sys
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

out, tests_rc, bench_rc, grid_rc, grid_s = Path(sys.argv[1]), *map(int, sys.argv[2:])
table = Table(title="GPU check", title_justify="left")
for column in ("check", "result", "detail"):
    table.add_column(column)
table.add_row("pytest -m gpu", "ok" if tests_rc == 0 else f"FAILED ({tests_rc})", "")
bench = json.loads((out / "bench_gpu.json").read_text()) if (out / "bench_gpu.json").exists() else {}
for row in bench.get("overhead", {}).get("rows", []):
    table.add_row(
        f"overhead {row['task']}/{row['arch']}",
        f"{row['ratio']:.3f}x hand loop",
        f"bare Trainer {row['trainer_ratio']:.3f}x; {row['lit_steps_per_s']:.0f} steps/s",
    )
memory = bench.get("memory", {})
for row in memory.get("rows", []):
    detail = f"growth {row['growth']:+.1%}" if "growth" in row else ""
    table.add_row(f"memory: {row['what']}", f"{row['peak_rss_mb']:.0f} MB peak RSS", detail)
if memory.get("fit_cuda_peak_mb") is not None:
    worker = [m for m in memory.get("worker_cuda_peak_mb", []) if m is not None]
    table.add_row(
        "memory: GPU peak per run",
        f"{memory['fit_cuda_peak_mb']:.0f} MB (default fit)",
        f"worker runs {min(worker):.0f}-{max(worker):.0f} MB" if worker else "",
    )
if bench_rc != 0 or not bench:
    table.add_row("benchmark", f"FAILED ({bench_rc})", "see bench_gpu.log")
runs_csv = out / "arch_grid" / "runs.csv"
if runs_csv.exists():
    runs = pd.read_csv(runs_csv)
    ok = int((runs["status"] == "ok").sum()) if "status" in runs else len(runs)
    detail = f"{ok}/{len(runs)} runs ok"
else:
    detail = "no runs.csv"
grid_result = f"{grid_s} s" if grid_rc == 0 else f"FAILED ({grid_rc}) after {grid_s} s"
table.add_row("arch grid, 4 packed workers", grid_result, detail)
Console(width=120).print(table)
EOF

echo "gpu_check: done in $((SECONDS - start)) s -> $OUT_DIR"
[[ $tests_rc -eq 0 && $bench_rc -eq 0 && $grid_rc -eq 0 ]]
