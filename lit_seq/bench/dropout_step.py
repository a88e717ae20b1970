"""The Delétang transformer's training step with dropout 0.1: torch's masks against computed ones.

    python -m lit_seq.bench --sections dropout_step

Before: what a model does outside a system's training step (no ``dropout_stream``): every
dropout site draws ``bernoulli_`` from torch's random stream, and attention's dropout runs
inside SDPA, whose CPU math path then masks its scores (``_safe_softmax``: ``isneginf``,
``all``, ``where``). After: what a training step does now (``lit_seq.models.dropout``): each
mask computed from (seed, step, site, element), attention's weights computed and dropped
here, with no masking where there is no padding. Same model, same batch (128 sequences of
parity_check at each length, the empty token appended), interleaved in one process; CPU
time of forward, backward and Adam step, the median of ``repeats``, on 1 torch thread (the
least noisy figure on a shared 2-core machine) and on torch's default threads.
"""

import contextlib
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from lit_seq.bench.common import config_path, median
from lit_seq.fit.cli import check_config
from lit_seq.models.dropout import dropout_stream

LENGTHS = (11, 40)  # the profile and Delétang's longest training length
REPEATS = 10


def _model():
    config = config_path("deletang/parity_check", "transformer")
    return check_config(["--config", str(config)]).model.train()


def _batch(length: int) -> dict[str, torch.Tensor]:
    bits = torch.randint(0, 2, (128, length), generator=torch.Generator().manual_seed(length))
    return {"x": F.one_hot(bits, 2).float(), "y": bits.sum(dim=1) % 2}


def measure(model, length: int, repeats: int, threads: int) -> dict:
    """One row: ms a step before and after, and their ratio."""
    batch = _batch(length)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
    ways = {"before": contextlib.nullcontext, "after": lambda: dropout_stream(0, 7)}

    def step(way: str) -> float:
        start = time.process_time()
        with ways[way]():
            loss = model.loss(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return time.process_time() - start

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for way in ways:  # warm-up
            step(way)
        times = {way: [] for way in ways}
        for _ in range(repeats):
            for way in ways:
                times[way].append(step(way))
    finally:
        torch.set_num_threads(previous)
    before, after = median(times["before"]), median(times["after"])
    return {
        "length": length,
        "threads": threads,
        "before_ms": round(1000 * before, 1),
        "after_ms": round(1000 * after, 1),
        "ratio": round(before / after, 3),
        "load": round(os.getloadavg()[0], 1),
    }


def run(quick: bool, workdir: Path) -> dict:
    """One row per length and thread count."""
    lengths, repeats = (LENGTHS[:1], 2) if quick else (LENGTHS, REPEATS)
    model = _model()
    threads = sorted({1, torch.get_num_threads()})
    rows = [measure(model, n, repeats, t) for n in lengths for t in threads]
    return {
        "rows": rows,
        "repeats": repeats,
        "target": "after >= 1.15x faster than before (issue 41's CPU goal)",
        "notes": [
            "before: torch's dropout (bernoulli_) and SDPA's; after: computed masks "
            "(models/dropout.py) and attention that drops its own weights; CPU time of one "
            "step (forward, backward, Adam), medians, interleaved, 1 process",
        ],
    }
