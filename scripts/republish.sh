#!/usr/bin/env bash
# Rebuild every published results folder under docs/results/ from its committed records,
# with the flags its page gives (no training): `bash scripts/republish.sh`, then
# `git diff --stat docs/results` shows what the current code changes in the tables.
# Folders without records/ (their tables were published from records not kept) and the
# superseded publications (v1/, v2/, pe_extrapolation_v1/, kept as published) are left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
report() { python -m lit_seq.report "$@" > /dev/null; echo "rebuilt $1"; }
R=docs/results
report $R/matrix --pairs $R/matrix_pairs.yaml --tables $R/matrix_tables.yaml
report $R/pe_extrapolation --pairs $R/pe_extrapolation_pairs.yaml \
    --tables $R/pe_extrapolation_tables.yaml
report $R/mixers --anchors $R/mixers_anchors.yaml --tables $R/mixers_tables.yaml
for grid in mixers_budget mixers_recall_10k mixers_modular_6k; do
    report $R/$grid --anchors $R/${grid}_anchors.yaml --tables $R/${grid}_tables.yaml
done
for grid in chomsky_faithful chomsky_faithful_budget chomsky_faithful_steps \
    chomsky_memory_budget chomsky_memory_cpu chomsky_strings_cpu chomsky_gpu; do
    # a driver holds an flock on .lock while it writes the folder (the file itself stays)
    if [ -e $R/$grid/.lock ] && ! flock -n $R/$grid/.lock true; then
        echo "skipped $grid: a grid is writing it"; continue
    fi
    if [ -d $R/$grid/records ]; then report $R/$grid --paper deletang2023; fi
done
