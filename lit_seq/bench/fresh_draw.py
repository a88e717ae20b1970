"""Drawing a fresh training batch against the training step it feeds, at Delétang's sizes.

With ``sampling: fresh`` every step draws a new batch (``lit_seq.data.fresh``); the goal
(issue 41) is that the draw costs at most 5% of the step, for each of the nine Delétang
tasks. Per task and arch: the shipped config ``configs/deletang/<task>/<arch>.yaml`` (batch
128, N = 40, the paper's widths, dropout as configured), its fresh batches ``s = 0 .. R-1``
drawn on the benchmark's device (``cuda`` when present), and one training step on each
(forward, backward, gradient clipping, the optimizer's update), interleaved draw / step so
that a drift of the machine's load charges both alike. Times are this process's CPU time
on a CPU (the other jobs' load left out), wall time after a device sync on a GPU; the
ratio is the draws' total over the steps' total on the same batches (the same lengths).
"""

import time

import torch

from lit_seq.bench.common import device_name, fit_args, quiet_fit, sync
from lit_seq.fit.cli import check_config
from lit_seq.util.assets import CONFIG_DIR

TASKS = (
    "parity_check",
    "even_pairs",
    "cycle_navigation",
    "modular_arithmetic",
    "reverse_string",
    "duplicate_string",
    "odds_first",
    "stack_manipulation",
    "binary_addition",
)
QUICK_TASKS = ("modular_arithmetic", "stack_manipulation", "binary_addition")
ARCHS = ("rnn", "lstm", "transformer")
TARGET = 0.05  # a draw at most 5% of a step


def _clock() -> float:
    sync()
    return time.process_time() if device_name() == "cpu" else time.perf_counter()


def measure(task: str, arch: str, steps: int) -> dict:
    """Draw and step times of ``steps`` fresh batches of ``task`` / ``arch``'s config."""
    device = torch.device(device_name())
    config = CONFIG_DIR / "deletang" / task / f"{arch}.yaml"
    with quiet_fit():
        cli = check_config(fit_args(config=config))
    dm = cli.datamodule
    dm.setup("fit")
    batches = dm.train_set.to(device)
    model = cli.model.to(device).train()
    clip = cli.config.trainer.get("gradient_clip_val")
    optimizer, _ = model.build_optimizer(steps + 1, clips=bool(clip))

    def step(batch: dict) -> None:
        optimizer.zero_grad(set_to_none=True)
        model.loss(batch).backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()

    step(batches[steps])  # warm-up, on a batch not timed
    draw_s = step_s = 0.0
    lengths = []
    for s in range(steps):
        start = _clock()
        batch = batches[s]
        drawn = _clock()
        step(batch)
        draw_s, step_s = draw_s + drawn - start, step_s + _clock() - drawn
        lengths.append(batch["x"].shape[1])
    return {
        "task": task,
        "arch": arch,
        "on_device": batches.on_device,
        "batch": dm.batch_size,
        "N": dm.train_length,
        "mean_length": round(sum(lengths) / len(lengths), 1),
        "draw_ms": round(1e3 * draw_s / steps, 2),
        "step_ms": round(1e3 * step_s / steps, 1),
        "draw_pct": round(100 * draw_s / step_s, 2),
        "passed": draw_s <= TARGET * step_s,
    }


def run(quick: bool) -> dict:
    """One row per Delétang task and arch; quick: the RNN (the shortest step) on the
    costliest draws (modular arithmetic, stack manipulation, binary addition) only."""
    steps = 2 if quick else 6
    archs = ARCHS[:1] if quick else ARCHS
    tasks = QUICK_TASKS if quick else TASKS
    rows = [measure(task, arch, steps) for task in tasks for arch in archs]
    return {
        "target": f"draw <= {TARGET:.0%} of a training step",
        "device": device_name(),
        "steps": steps,
        "notes": [
            "draw_ms: one fresh batch drawn on the device (batches 0..steps-1 of seed 0, "
            "lengths uniform in 1..N as in training); step_ms: one training step on it "
            "(forward, backward, clipping, optimizer); means; CPU time on a CPU",
            "draw_pct = 100 x draws / steps over the same batches",
        ],
        "rows": rows,
        "passed": all(row["passed"] for row in rows),
    }
