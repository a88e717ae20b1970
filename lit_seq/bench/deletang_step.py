"""Delétang et al.'s six Table 2 models: the CPU time of one of our training steps, to set
beside their JAX step (``scripts/peer_step_time.py``, the same batch shapes).

    python -m lit_seq.bench --sections deletang_step

Each model is built from its ``configs/deletang/reverse_string/<arch>.yaml`` (their sizes:
RNN, LSTM and the memory models' controllers 256 units, stacks of 30 cells of 8, a tape of
40 cells of 8, the Transformer encoder 5 x 64 with 8 heads), trained on reverse_string
batches of 128 at a fixed length L (input L, answer L: 2 L steps of a recurrence), one step
= loss, backward, clipping at 1.0 and Adam, as their ``_update_parameters``. CPU time
(``time.process_time``) of each step on 1 torch thread, the median of ``repeats`` after
one warm-up step; the models are interleaved, one step each in turn, so a change in the
machine's load reaches every row alike. Their script times the same steps after XLA's
compilation (which it reports apart: a new length is a new compilation for them).
"""

import os
import time
from pathlib import Path

import torch

from lit_seq.bench.common import config_path, median
from lit_seq.data import ReverseStringData
from lit_seq.fit.cli import check_config

ARCHS = ("rnn", "lstm", "stack_rnn", "ndstack_rnn", "tape_rnn", "transformer")
LENGTHS = (10, 20, 40)  # short, their mean training length, their longest
BATCH = 128  # theirs
REPEATS = 10
CLIP = 1.0  # their optax.clip_by_global_norm(1.0)


def _model(arch: str):
    config = config_path("deletang/reverse_string", arch)
    return check_config(["--config", str(config)]).model.train()


def _batch(length: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(length)
    return ReverseStringData(length=length).draw(BATCH, length, generator)


def _step(model, optimizer, batch) -> float:
    """CPU seconds of one training step (forward, backward, clip, Adam)."""
    start = time.process_time()
    loss = model.loss(batch)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
    optimizer.step()
    return time.process_time() - start


def measure(archs: tuple[str, ...], length: int, repeats: int) -> list[dict]:
    """One row per arch at ``length``: the median CPU ms of a step, interleaved."""
    torch.manual_seed(0)
    models = {arch: _model(arch) for arch in archs}
    optimizers = {a: torch.optim.Adam(m.parameters(), lr=5e-4) for a, m in models.items()}
    batch = _batch(length)
    times: dict[str, list[float]] = {arch: [] for arch in archs}
    for arch in archs:  # warm-up
        _step(models[arch], optimizers[arch], batch)
    for _ in range(repeats):
        for arch in archs:
            times[arch].append(_step(models[arch], optimizers[arch], batch))
    load = round(os.getloadavg()[0], 1)
    return [
        {
            "arch": arch,
            "length": length,
            "batch": BATCH,
            "step_ms": round(1000 * median(times[arch]), 1),
            "load": load,
        }
        for arch in archs
    ]


def run(quick: bool, workdir: Path) -> dict:
    """One row per model and length, on 1 torch thread."""
    lengths, repeats = (LENGTHS[:1], 2) if quick else (LENGTHS, REPEATS)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rows = [row for length in lengths for row in measure(ARCHS, length, repeats)]
    finally:
        torch.set_num_threads(previous)
    return {
        "rows": rows,
        "repeats": repeats,
        "target": "each model's step <= 1.5x their JAX step (scripts/peer_step_time.py)",
        "notes": [
            "CPU time of one step (loss, backward, clip 1.0, Adam) on reverse_string batches "
            "of 128 at length L (2 L recurrent steps), medians, the models interleaved, "
            "1 torch thread"
        ],
    }
