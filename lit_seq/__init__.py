"""lit_seq: train any sequence model on any synthetic task, and sweep ablation grids.

From Python: ``lit_seq.fit_one(config, overrides)`` and ``lit_seq.run_grid(grid, out=...)``
(``lit_seq.api``), loaded on first use so that ``import lit_seq`` stays light.
"""

import importlib
import os

# OpenMP threads that spin while they wait make a shared machine crawl (measured: a default
# echo fit at load ~4 took 29 s spinning, 4 s passive). OpenMP reads this when torch loads
# it, and every entry point (fit, ablate and its workers, bench) imports lit_seq first, so
# this is the one place. A value already in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"

_API = ("fit_one", "run_grid", "FitRun", "GridRun")  # lit_seq.api's, loaded on first use


def __getattr__(name: str):
    if name in _API:
        # by name, on first use: the API sits above every layer, and the package's root
        # must not import it (nor torch) when ``import lit_seq`` runs
        return getattr(importlib.import_module("lit_seq.api"), name)
    raise AttributeError(f"module 'lit_seq' has no attribute {name!r}")


__all__ = ["__version__", *_API]
