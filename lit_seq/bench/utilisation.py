"""Utilisation: the FLOP/s the shipped configs' training steps achieve, against a measured peak.

Per shipped config (every task of the ``matrix`` x transformer / rnn / lstm): the floating
point operations of one training step, forward and backward of one batch, as
``torch.utils.flop_counter.FlopCounterMode`` counts them (matrix products, convolutions and
attention; the element-wise work it does not count is small next to them here; it cannot
see inside the fused ``nn.LSTM`` kernel, whose products are counted from its shapes:
2 x 4 gates x (input + hidden) x hidden per step, layer and direction, times 3 for forward
and backward, as for a matrix product), divided by
the median wall time of a step of the minimal hand loop (``overhead.hand_loop``: lit_seq's
model, loss, optimizer and schedule, no Lightning). The peak is a square fp32 matrix product
of :data:`PEAK_SIZE` on the same threads, the best a dense kernel does on this machine, so
``pct_of_peak`` says how much of the machine a config's step uses: tiny models are bound
by per-operation overhead, not arithmetic, and packing many runs into one step (or a GPU)
is what would raise it.
"""

import statistics
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from lit_seq.bench.common import ARCHS, BENCH_TASKS, device_name, log, run_dir_factory, sync
from lit_seq.bench.overhead import build, hand_loop, prepare_data
from lit_seq.models import count_parameters

PEAK_SIZE = 1024
STEPS = 40


def matmul_peak(size: int = PEAK_SIZE, repeats: int = 10) -> float:
    """Best GFLOP/s of a (size x size) @ (size x size) fp32 product on this device."""
    device = device_name()
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    a @ b  # warm-up: allocation, kernel choice
    best = float("inf")
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        a @ b
        sync()
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def _lstm_flops(module: torch.nn.LSTM, inputs: tuple) -> int:
    """Forward + backward FLOPs of the products inside a fused LSTM call."""
    x = inputs[0]
    if isinstance(x, torch.nn.utils.rnn.PackedSequence):
        steps = int(x.batch_sizes.sum())  # sequence positions over the whole batch
    else:
        steps = x.shape[0] * x.shape[1]
    h, dirs = module.hidden_size, 2 if module.bidirectional else 1
    total = 0
    for layer in range(module.num_layers):
        width = module.input_size if layer == 0 else h * dirs
        total += 2 * 4 * (width + h) * h * steps * dirs
    return 3 * total


def step_flops(model, batch: dict) -> int:
    """FLOPs of forward + backward of ``model.loss`` on ``batch``."""
    model.train()
    counter = FlopCounterMode(display=False)
    fused = []
    hooks = [
        m.register_forward_hook(lambda mod, args, out: fused.append(_lstm_flops(mod, args)))
        for m in model.modules()
        if isinstance(m, torch.nn.LSTM)
    ]
    try:
        with counter:
            model.loss(batch).backward()
    finally:
        for hook in hooks:
            hook.remove()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops() + sum(fused)


def measure(task: str, arch: str, steps: int, run_dir: Path, peak: float) -> dict:
    cli = build(task, arch, steps, run_dir)
    prepare_data(cli)
    model, data = cli.model, cli.datamodule
    batch = next(iter(data.train_dataloader()))
    flops = step_flops(model, batch)
    clip = cli.trainer.gradient_clip_val
    marks, _ = hand_loop(model, data, steps, clip, cli.trainer.precision)
    # the median step, after the first few (allocator and kernel warm-up)
    seconds = statistics.median(b[0] - a[0] for a, b in zip(marks[3:], marks[4:], strict=False))
    achieved = flops / seconds / 1e9
    return {
        "task": task,
        "arch": arch,
        "params": count_parameters(model.net),
        "batch": data.batch_size,
        "gflop_per_step": round(flops / 1e9, 4),
        "step_ms": round(1e3 * seconds, 2),
        "gflops": round(achieved, 2),
        "pct_of_peak": round(100 * achieved / peak, 1),
    }


def run(quick: bool, workdir: Path) -> dict:
    """One row per shipped config; the peak and the thread count under the table."""
    peak = matmul_peak(256 if quick else PEAK_SIZE)
    log(f"utilisation: matmul peak {peak:.1f} GFLOP/s on {torch.get_num_threads()} thread(s)")
    steps = 8 if quick else STEPS
    new_dir = run_dir_factory(workdir)
    rows = []
    for task in BENCH_TASKS[:1] if quick else BENCH_TASKS:
        for arch in ARCHS:
            rows.append(measure(task, arch, steps, new_dir(f"{task}-{arch}"), peak))
            log(f"utilisation: {task}/{arch}: {rows[-1]['pct_of_peak']}% of peak")
    return {
        "rows": rows,
        "peak_gflops": round(peak, 1),
        "threads": torch.get_num_threads(),
        "status": "ok",
        "passed": True,
    }
