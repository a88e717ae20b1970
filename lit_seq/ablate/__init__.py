"""The ablation driver: expand a grid of configurations, run it, tabulate the results.

    python -m lit_seq.ablate ablations/smoke.yaml --workers 2

Read top-down: ``__main__`` (the command) -> ``grid`` (load, expand and check a grid: ``spec``
for its structure, ``axes`` for its keys, ``lit_seq.fit`` for every cell) -> ``folder`` (the
output folder: fingerprint, lock, resume) -> an executor (``local_pool`` or ``ray_executor``,
sharing ``jobs``) -> ``run_one`` (one run -> one record) -> ``lit_seq.fit``. Around them:
``runs`` (the ``Run`` they hand on), ``select`` and ``extension`` (a ``select:`` block),
``order`` (start order), ``progress`` (the console), ``wandb_summary``; the tables and plots
are ``lit_seq.results``.
"""
