"""A Delétang fit's range evaluation: its token steps a second against the training forward
pass's and against the arithmetic it needs at this CPU's matmul rate.

    python -m lit_seq.bench --sections range_eval

Each model is built from ``configs/deletang/reverse_string/<arch>.yaml`` (untrained: its
draw of weights is as costly to score as a trained one) and scored as a fit scores it
(``lit_seq.fit.scoring.length_curve`` with the config's ``range_eval``: every length 1..160,
whose 41..160 ``range_ood/acc`` averages, 512 sequences, sub-batches of 64). A token step is one position of one sequence through
the network (reverse_string reads its L symbols and L appended positions: 2 L a sequence).
Beside it, the same network's training forward pass (``loss`` with gradients recorded, a
batch of 128 at length 40, no backward), in token steps a second. The bound: the forward
arithmetic, 2 FLOPs a weight a token step (every weight matrix, the readout's at every
position too: an upper count by < 1%), at the rate ``torch.mm`` reaches on one thread at
the scoring's own shapes ((rows, d) x (d, gates d), the recurrence's step at the rows each
length's forward pass takes);
``vs_bound`` is the measured time over that, the issue's goal <= 1.5. CPU time
(``time.process_time``), one torch thread, one process.
"""

import os
import time
from pathlib import Path

import torch

from lit_seq.bench.common import config_path, median
from lit_seq.fit.cli import check_config
from lit_seq.fit.scoring import RangeEval, length_curve
from lit_seq.systems.length_score import forward_rows

ARCHS = ("rnn", "lstm")
TRAIN_BATCH, TRAIN_LENGTH = 128, 40  # the configs' training batch at their longest length
GOAL = 1.5  # issue 57: the range evaluation within 1.5x of its forward arithmetic


def _build(arch: str):
    """(system in eval mode, its data module, its config's RangeEval)."""
    built = check_config(["--config", str(config_path("deletang/reverse_string", arch))])
    section = built.config["range_eval"]
    config = section if isinstance(section, RangeEval) else RangeEval(**section.as_dict())
    return built.model.eval(), built.datamodule, config


def _mm_gflops(rows: int, d: int, width: int, repeats: int = 200) -> float:
    """GFLOP/s of ``torch.mm`` (rows, d) x (d, width) on the current threads, best of 3."""
    a, w = torch.randn(rows, d), torch.randn(d, width)
    best = 0.0
    for _ in range(3):
        start = time.process_time()
        for _ in range(repeats):
            torch.mm(a, w)
        best = max(best, 2 * rows * d * width * repeats / (time.process_time() - start) / 1e9)
    return best


def _train_forward_rate(system, datamodule, repeats: int) -> float:
    """Token steps a second of the training forward pass (gradients recorded, no backward)."""
    batch = datamodule.draw(TRAIN_BATCH, TRAIN_LENGTH, torch.Generator().manual_seed(0))
    steps = TRAIN_BATCH * (batch["x"].shape[1] + batch["y"].shape[1])
    system.train()
    times = []
    for _ in range(repeats + 1):  # the first one warms up
        start = time.process_time()
        system.loss(batch)
        times.append(time.process_time() - start)
    system.eval()
    return steps / median(times[1:])


def measure(arch: str, quick: bool, repeats: int) -> dict:
    """One row: the range evaluation's CPU-s, rates and bound for ``arch``."""
    system, datamodule, config = _build(arch)
    if quick:  # every 40th length: a smoke run
        config.step = 40
    lengths = config.lengths(datamodule.train_length, system.length_limit)
    weights = sum(p.numel() for p in system.parameters() if p.dim() >= 2)
    d = system.hparams.d_model
    width = system.net.backbone.rnn.weight_hh_l0.shape[0]  # the step's matmul: d (rnn), 4 d (lstm)
    token_steps, bound_s, rates = 0, 0.0, {}
    for length in lengths:
        draw = datamodule.draw(config.n, length, torch.Generator().manual_seed(0), split="test")
        steps = config.n * (draw["x"].shape[1] + draw["y"].shape[1])
        rows = forward_rows(draw, system.device, config.sub_batch or datamodule.batch_size)
        rate = rates.setdefault(rows, _mm_gflops(rows, d, width))
        token_steps += steps
        bound_s += 2 * weights * steps / (rate * 1e9)
    start = time.process_time()
    length_curve(system, datamodule, config)
    range_s = time.process_time() - start
    train_rate = _train_forward_rate(system, datamodule, repeats)
    return {
        "arch": arch,
        "lengths": f"{lengths[0]}..{lengths[-1]}" + (f"/{config.step}" if config.step > 1 else ""),
        "n": config.n,
        "token_steps_m": round(token_steps / 1e6, 2),
        "range_cpu_s": round(range_s, 2),
        "eval_steps_per_s": round(token_steps / range_s),
        "train_fwd_steps_per_s": round(train_rate),
        "eval_vs_train_fwd": round(token_steps / range_s / train_rate, 2),
        "mm_gflops": round(min(rates.values()), 1),
        "bound_s": round(bound_s, 2),
        "vs_bound": round(range_s / bound_s, 2),
        "load": round(os.getloadavg()[0], 1),
        "passed": range_s / bound_s <= GOAL,
    }


def run(quick: bool, workdir: Path) -> dict:
    """One row per arch, on one torch thread."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        rows = [measure(arch, quick, 2 if quick else 10) for arch in ARCHS]
    finally:
        torch.set_num_threads(previous)
    return {
        "rows": rows,
        "passed": all(row["passed"] for row in rows),
        "threads": 1,
        "target": f"range evaluation <= {GOAL}x its forward arithmetic at torch.mm's rate",
        "notes": [
            "reverse_string configs' range_eval (1..160, 512 a length, sub-batches of 64), "
            "untrained weights; token step = one position of one sequence; bound = 2 FLOPs a "
            "weight a token step at torch.mm's 1-thread rate at the step's (rows, d) x "
            "(d, gates d); mm_gflops: the slowest rate of those shapes; CPU time",
        ],
    }
