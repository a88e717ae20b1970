#!/usr/bin/env bash
# bash scripts/gpu_check.sh [OUT_DIR]
#
# The GPU check: stage 1 of the device campaign alone (the GPU-marked tests, then the
# population against solo speed rows, 3 minutes at most), for a loan too short for the
# Delétang grid. The whole campaign is scripts/gpu_campaign.sh (docs/performance.md, "A GPU
# loan"); this is it with --stages tests,speed. OUT_DIR: default $OUT, else campaign_out.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${1:-${OUT:-campaign_out}}"
exec bash scripts/gpu_campaign.sh --stages tests,speed --budget-s 200 --out "$OUT_DIR"
