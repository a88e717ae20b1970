"""The ablation driver: expand a grid of configurations, run it, tabulate the results.

    python -m lit_seq.ablate ablations/smoke.yaml --workers 2

``spec`` (grid files -> runs), ``records`` (the output folder, resume), ``worker`` (one run),
``executor`` (who runs them), ``tables`` / ``plots`` / ``wandb_summary`` (results).
"""
