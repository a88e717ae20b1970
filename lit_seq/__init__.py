"""lit_seq: train any sequence model on any synthetic task, and sweep ablation grids."""

__version__ = "0.1.0"
