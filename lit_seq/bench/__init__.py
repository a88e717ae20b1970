"""Side-by-side benchmarks of lit_seq: every number is a ratio measured in one process.

    python -m lit_seq.bench [--out FILE.json] [--sections overhead,datagen,...] [--quick]

One module per section: ``overhead`` (training loop vs a hand-written loop),
``datagen`` (vectorised data vs the seeds' Python loops), ``quality`` (time to the
SPEC section 7 targets vs the seeds' recipes), ``grid`` (1 vs 2 grid workers) and
``memory`` (peak RSS of a fit, RSS of a long-lived worker). ``seed_recipes`` holds
the baselines: the tutorials' generators and training recipes, re-written in plain
PyTorch. Absolute times depend on the machine and its load; the ratios are the result.
"""
