#!/usr/bin/env bash
# bash scripts/gpu_campaign.sh [ARGS of python -m lit_seq.campaign run]
#
# One device call of the GPU campaign (issue 41; docs/performance.md, "A GPU loan", gives
# the call's exact command line): installs the carried wheels (WHEELS, default .whl: made
# here by scripts/gpu_wheels.sh, `carry: [".whl"]`) into /tmp/site with --no-index, puts
# this checkout on PYTHONPATH (an editable install would need setuptools from an index;
# the grid's worker processes inherit the path), then runs
# `python -m lit_seq.campaign run ARGS`: stage 1, the GPU tests and the population against
# solo speed rows (<= 3 min), stage 2, the chomsky_gpu grid as populations, resumed from
# docs/results/chomsky_gpu and stopped resumably at --budget-s (default 480 s). Everything
# lands in $OUT (else campaign_out), streamed as it runs: a call cut at its limit still
# brings back every finished record. `--tiny` (or TINY=1) runs the same on a CPU in about
# a minute of CPU time.
# Run from anywhere; uses .venv when it is there, else python3 (a GPU image's python3 is
# the one that holds its torch).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-python3}"
[[ -x .venv/bin/python ]] && PY=.venv/bin/python
WHEELS="${WHEELS:-.whl}"
if compgen -G "$WHEELS/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site "$WHEELS"/*.whl
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 WANDB_MODE=disabled
[[ "${TINY:-0}" == 1 ]] && set -- --tiny "$@"  # TINY=1: the CPU campaign, as --tiny
exec "$PY" -m lit_seq.campaign run "$@"
