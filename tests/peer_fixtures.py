"""Read the reference fixtures made by the paper's own JAX/Haiku code (numpy only, no JAX).

``tests/fixtures/peer/`` holds them (their format: its README.md; how they are made:
``scripts/peer_reference.py``). A fixture is ``<name>.npz`` (the arrays) and ``<name>.json``
(what made them: builder, sizes, seeds, optimizer, peer commit, library versions).

    arrays, meta = load("rnn")
    params(arrays)["vanilla_rnn/linear/w"]  # (in, out): haiku's Linear, x @ w + b
    params(arrays, "grad:")                 # their gradients, same names
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "peer"


def names() -> list[str]:
    """Every fixture in the folder, by name."""
    return sorted(p.stem for p in FIXTURES.glob("*.npz"))


def load(name: str) -> tuple[dict[str, np.ndarray], dict]:
    """(arrays, meta) of fixture ``name``: every array of its npz and its json."""
    path = FIXTURES / f"{name}.npz"
    if not path.exists():
        raise FileNotFoundError(f"no peer fixture {name!r} in {FIXTURES}; there are {names()}")
    with np.load(path, allow_pickle=False) as npz:
        arrays = {key: npz[key] for key in npz.files}
    return arrays, json.loads((FIXTURES / f"{name}.json").read_text())


def params(arrays: dict[str, np.ndarray], prefix: str = "param:") -> dict[str, np.ndarray]:
    """The arrays under ``prefix`` keyed by haiku's name, ``module/path/param``: the
    initial parameters (``param:``), gradients (``grad:``) or the parameters after their
    optimizer's steps (``param_after:``, ``param_after3:``, ``param_after_clipped:``,
    ``param_after3_clipped:``)."""
    found = {key[len(prefix) :]: value for key, value in arrays.items() if key.startswith(prefix)}
    if not found:
        prefixes = sorted({key.split(":")[0] + ":" for key in arrays if ":" in key})
        raise KeyError(f"no array starts with prefix={prefix!r}; the prefixes are {prefixes}")
    return found
