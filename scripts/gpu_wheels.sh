#!/usr/bin/env bash
# bash scripts/gpu_wheels.sh [DIR]
#
# The wheels a GPU device machine lacks, downloaded HERE (where pip reaches an index) into
# DIR (default .whl, which .gitignore keeps out of git): the device reaches no package
# index, so a call carries them (`carry: [".whl"]`) and scripts/gpu_campaign.py installs
# them. Its image (docs: /work/.library/device/KINDS.md) has torch, lightning, torchmetrics,
# pandas, pyarrow, matplotlib, rich, scipy, pyyaml and pytest; lit_seq also needs
# jsonargparse[signatures] (docstring-parser, typeshed-client) and filelock >= 3.30. W&B is
# not needed: the GPU grid runs with --wandb off, which never imports it. All four are pure
# Python (py3-none-any, ~1.2 MB together); the versions are this project's venv's. The
# platform flags are the device README's, for its Python 3.12 on manylinux x86_64.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${1:-.whl}"
PY="${PY:-python3}"
[[ -x .venv/bin/python ]] && PY=.venv/bin/python
mkdir -p "$DIR"
"$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 -d "$DIR" \
    jsonargparse==4.53.0 docstring-parser==0.18.0 typeshed-client==2.15.0 filelock==4.3.2
ls -la "$DIR"
