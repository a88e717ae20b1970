"""Population training: K runs of one shape trained as one model in one loop.

``train.fit_population`` trains the runs given by their ``lit_seq.fit`` arguments: their
weights stacked (``stacked``), one forward and backward for all, one optimizer step with
each member's own hyperparameters (``optimizer``), each member still a run with its own
folder, logs, checkpoints, W&B run and record (``members``). See docs/packing.md.
"""
