"""The six tasks ported from Delétang et al. 2023 give their outputs on their inputs.

``tests/fixtures/peer/<task>.npz`` holds, at every stored length (1, 2, 3, 4: their special
cases; up to 40, their training length), the integer tokens their own ``sample_batch``
drew and its outputs (and binary_multiplication's accuracy mask), made by
``scripts/peer_reference.py``. Each of our pure label functions, given their tokens, must
return exactly their outputs.
"""

from collections.abc import Callable

import numpy as np
import pytest
import torch
from torch import Tensor

import lit_seq.data
from tests.peer_fixtures import load


def labels(name: str) -> Callable:
    """Our label function ``name`` from ``lit_seq.data`` (a missing one fails its tests)."""
    return getattr(lit_seq.data, name)


# task -> (our function's name, how to call it on (B, N) tokens given the fixture's meta)
PORTS: dict[str, tuple[str, Callable[[Callable, Tensor, dict], object]]] = {
    "modular_arithmetic_brackets": (
        "modular_arithmetic_brackets_labels",
        lambda f, tokens, meta: f(tokens, modulus=meta["options"]["modulus"]),
    ),
    "solve_equation": (
        "solve_equation_labels",
        lambda f, tokens, meta: f(tokens, modulus=meta["options"]["modulus"]),
    ),
    "missing_duplicate_string": (
        "missing_duplicate_string_labels",
        lambda f, tokens, meta: f(tokens),
    ),
    "binary_multiplication": ("binary_multiplication_targets", lambda f, tokens, meta: f(tokens)),
    "compute_sqrt": ("compute_sqrt_targets", lambda f, tokens, meta: f(tokens)),
    "bucket_sort": (
        "bucket_sort_targets",
        lambda f, tokens, meta: f(tokens, vocab=meta["options"]["vocab_size"]),
    ),
}
CASES = [(task, int(n)) for task in PORTS for n in load(task)[1]["lengths"]]


def same(ours: Tensor, theirs: np.ndarray, tokens: np.ndarray, what: str) -> None:
    """Assert equal, naming the first example where they differ."""
    theirs = torch.from_numpy(theirs)
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: shape {tuple(ours.shape)}"
    bad = (ours.long() != theirs.long()).reshape(len(theirs), -1).any(dim=1)
    if bad.any():
        i = int(bad.nonzero()[0])
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {len(bad)} examples differ; the first, tokens "
            f"{tokens[i].tolist()}: theirs {theirs[i].tolist()}, ours {ours[i].tolist()}"
        )


def test_every_task_fixture_holds_each_length_and_its_examples():
    for task in PORTS:
        arrays, meta = load(task)
        for n, info in meta["lengths"].items():
            tokens, outputs = arrays[f"tokens_len{n}"], arrays[f"outputs_len{n}"]
            assert tokens.shape == (meta["examples_per_length"], int(n))
            assert len(outputs) == len(tokens)
            if outputs.ndim == 2:
                assert outputs.shape[1] == info["output_length"]


@pytest.mark.parametrize(("task", "length"), CASES, ids=[f"{t}-len{n}" for t, n in CASES])
def test_our_labels_are_theirs_on_their_inputs(task, length):
    arrays, meta = load(task)
    tokens = arrays[f"tokens_len{length}"]
    name, call = PORTS[task]
    ours = call(labels(name), torch.from_numpy(tokens).long(), meta)
    if f"mask_len{length}" in arrays:  # binary_multiplication: (targets, mask)
        targets, mask = ours
        same(targets, arrays[f"outputs_len{length}"], tokens, f"{name} targets, N={length}")
        same(mask, arrays[f"mask_len{length}"], tokens, f"{name} mask, N={length}")
    else:
        same(ours, arrays[f"outputs_len{length}"], tokens, f"{name}, N={length}")
