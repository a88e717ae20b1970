"""lit_seq: train any sequence model on any synthetic task, and sweep ablation grids."""

import os

# OpenMP threads that spin while they wait make a shared machine crawl (measured: a default
# echo fit at load ~4 took 29 s spinning, 4 s passive). OpenMP reads this when torch loads
# it, and every entry point (fit, ablate and its workers, bench) imports lit_seq first, so
# this is the one place. A value already in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
