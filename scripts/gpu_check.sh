#!/usr/bin/env bash
# bash scripts/gpu_check.sh [OUT_DIR]
#
# The GPU check, on one GPU, sized for one 10-minute device call: the GPU-marked tests, the
# benchmark's overhead, memory, pack and pack_step sections on the GPU (pack: populations of
# K = 1, 3, 9, 27 members against K solo fits, bf16-mixed, data on the device; pack_step: one
# training step of K transformer members, attention folded or looped, against their K solo
# steps, synced wall time), and the `matrix` grid with 4 workers on the one GPU for $GRID_S
# seconds each way, runs trained as populations (--pack on) and each run alone (--pack off):
# the runs finished in that time are the throughput; then one summary table.
# Each stage has a time limit, so the whole fits a 10-minute call: overhead + memory $BENCH_S
# (default 120), pack $PACK_S (100), pack_step $PACK_STEP_S (50), each grid $GRID_S (110);
# with the GPU tests (48 s on an H200, 2026-12-04) and the installs, ~9.5 min at worst. A
# stage cut at its limit reports what it finished.
# Not measured by it: CUDA graphs / torch.compile of the population step (not built). Writes
# everything to OUT_DIR (default: $OUT_DIR, else $OUT, else gpu_check_out); a device call
# should stream the log back as it goes (`... 2>&1 | tee "$OUT/gpu_check.log"`), since a
# call cut at its limit returns only what is already under $OUT.
# Run from the repository root; uses .venv when it is there.
#
# A device machine that reaches no package index: carry the wheels its image lacks, made
# here with `pip download -d wheels "jsonargparse[signatures]" wandb scipy "filelock>=3.30"` (for the
# device's Python: --python-version, --platform), and the script installs them with --no-index
# first (WHEELS=dir names another folder); lit_seq runs from the checkout, on PYTHONPATH.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT_DIR="${1:-${OUT_DIR:-${OUT:-gpu_check_out}}}"
mkdir -p "$OUT_DIR"
PY="${PY:-python3}"  # a GPU image's python3 is the one that holds its torch
[[ -x .venv/bin/python ]] && PY=.venv/bin/python
export WANDB_MODE=disabled

WHEELS="${WHEELS:-wheels}"
if [[ -d "$WHEELS" ]]; then
    $PY -m pip install -q --no-index --find-links "$WHEELS" "jsonargparse[signatures]" wandb scipy "filelock>=3.30"
fi
# lit_seq from this checkout, uninstalled (an editable install would need setuptools from an
# index to build); the grid's worker processes inherit the path
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

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
$PY -m pytest -m gpu -q -n 0 2>&1 | tee "$OUT_DIR/pytest_gpu.log"
tests_rc=${PIPESTATUS[0]}
set -e
if [[ $tests_rc -eq 5 ]]; then
    tests_rc=0  # exit 5: no GPU-marked tests collected, nothing failed
    echo "no GPU-marked tests"
fi

stage "benchmark: overhead and memory on the GPU"
set +e
timeout --signal=INT "${BENCH_S:-120}" $PY -m lit_seq.bench --sections overhead,memory \
    --steps 80 --repeats 3 --out "$OUT_DIR/bench_gpu.json" 2>&1 | tee "$OUT_DIR/bench_gpu.log"
bench_rc=${PIPESTATUS[0]}
set -e

stage "benchmark: populations vs sequential runs on the GPU"
set +e
# its rows are logged as they finish, so a section cut short still reports them
timeout --signal=INT "${PACK_S:-100}" $PY -m lit_seq.bench --sections pack \
    --out "$OUT_DIR/bench_pack_gpu.json" 2>&1 | tee "$OUT_DIR/bench_pack_gpu.log"
pack_rc=${PIPESTATUS[0]}
set -e
if [[ $pack_rc -eq 124 ]]; then pack_rc=0; fi  # cut at the time limit

stage "benchmark: one population step on the GPU (attention folded vs vmap's loop vs K solo)"
set +e
timeout --signal=INT "${PACK_STEP_S:-50}" $PY -m lit_seq.bench --sections pack_step \
    --out "$OUT_DIR/bench_pack_step_gpu.json" 2>&1 | tee "$OUT_DIR/bench_pack_step_gpu.log"
set -e

GRID_S="${GRID_S:-110}"
grid_stage() {  # grid_stage NAME PACK: the matrix for GRID_S seconds; sets rc and seconds
    local begin=$SECONDS
    set +e
    timeout --signal=INT "$GRID_S" $PY -m lit_seq.ablate ablations/matrix.yaml --workers 4 \
        --wandb off --pack "$2" --out "$OUT_DIR/$1" 2>&1 | tee "$OUT_DIR/$1.log"
    local code=${PIPESTATUS[0]}
    set -e
    # 124 / 130: stopped at the time limit, which is the point; anything else is a failure
    if [[ $code -eq 124 || $code -eq 130 ]]; then code=0; fi
    echo "$code $((SECONDS - begin))"
}
stage "matrix grid for ${GRID_S} s, 4 workers on one GPU, packed"
read -r grid_rc grid_seconds < <(grid_stage matrix_packed on | tail -n 1)
stage "matrix grid for ${GRID_S} s, 4 workers on one GPU, each run alone"
read -r solo_rc solo_seconds < <(grid_stage matrix_solo off | tail -n 1)

stage "summary"
$PY - "$OUT_DIR" "$tests_rc" "$bench_rc" "$grid_rc" "$grid_seconds" "$solo_rc" "$solo_seconds" \
    "$pack_rc" <<'EOF'
import json, sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

out = Path(sys.argv[1])
tests_rc, bench_rc, grid_rc, grid_s, solo_rc, solo_s, pack_rc = map(int, sys.argv[2:])
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
if bench_rc == 124:
    table.add_row("benchmark", "cut at BENCH_S", "see bench_gpu.log")
elif bench_rc != 0 or not bench:
    table.add_row("benchmark", f"FAILED ({bench_rc})", "see bench_gpu.log")
pack_log = out / "bench_pack_gpu.log"
marker = "[bench] pack: {"
pack_rows = [
    json.loads(line[line.index(marker) + len(marker) - 1 :])
    for line in (pack_log.read_text().splitlines() if pack_log.exists() else [])
    if marker in line
]
for row in pack_rows:
    table.add_row(
        f"pack {row['task']}/{row['arch']} K={row['k']}",
        f"x{row['speedup']:.2f} vs sequential",
        f"{row['packed_steps_per_s']:.0f} vs {row['solo_steps_per_s']:.0f} steps/s; "
        f"equal first steps: {row['equal']}",
    )
if pack_rc != 0:
    table.add_row("benchmark pack", f"FAILED ({pack_rc})", "see bench_pack_gpu.log")
for name, rc, seconds, label in (
    ("matrix_packed", grid_rc, grid_s, "matrix, 4 workers, --pack on"),
    ("matrix_solo", solo_rc, solo_s, "matrix, 4 workers, --pack off"),
):
    records = [json.loads(p.read_text()) for p in (out / name / "records").glob("*.json")]
    ok = sum(r.get("status") == "ok" for r in records)
    steps = sum(r.get("steps") or 0 for r in records if r.get("status") == "ok")
    result = f"{ok} runs ok in {seconds} s" if rc == 0 else f"FAILED ({rc}) after {seconds} s"
    table.add_row(label, result, f"{steps} optimizer steps in the finished runs")
Console(width=120).print(table)
EOF

echo "gpu_check: done in $((SECONDS - start)) s -> $OUT_DIR"
[[ $tests_rc -eq 0 && ($bench_rc -eq 0 || $bench_rc -eq 124) && $pack_rc -eq 0 && $grid_rc -eq 0 && $solo_rc -eq 0 ]]
