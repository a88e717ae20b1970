"""Compile: training steps/s eager vs through ``torch.compile`` (``--compile``), compile apart.

Rows: Delétang et al.'s sizes (reverse_string: rnn, lstm, transformer at batch 128, their
configs, dropout 0.1 included), the matrix's transformer cells (signal, parity_sum, echo,
seq2seq at their shipped configs) and one mixer (mamba, at echo's lstm config with only the
arch changed, as the ``mixers`` section builds it). Per row: one training batch of the
shipped data (one shape: one graph), the minimal step (zero_grad, loss, backward, clip,
optimizer step; no Lightning) eager, then with the loss compiled as a fit compiles it
(``systems.compiled.compile_loss``: Inductor, CUDA graphs on a GPU). ``compile_s`` is the
first compiled step (tracing and code generation included); the step times are medians of
the steps after it, in CPU seconds of this process on a CPU (the load-proof view; the
compiler's own worker processes are not counted there, only in ``compile_s``) and synced
wall seconds on a GPU. ``speedup`` = eager / compiled step time: what the ``auto`` default
rests on (on a CPU it stays off unless every row is >= 1.0).
"""

import statistics
import time
from pathlib import Path

import torch
from torch.nn.utils import clip_grad_norm_

from lit_seq.bench.common import device_name, log, run_dir_factory, sync
from lit_seq.bench.overhead import build, prepare_data
from lit_seq.systems.compiled import compile_loss, compile_mode

# (label, config folder under configs/, arch of the config, extra fit arguments)
ROWS = (
    ("deletang", "deletang/reverse_string", "rnn", ()),
    ("deletang", "deletang/reverse_string", "lstm", ()),
    ("deletang", "deletang/reverse_string", "transformer", ()),
    ("matrix", "signal", "transformer", ()),
    ("matrix", "parity_sum", "transformer", ()),
    ("matrix", "echo", "transformer", ()),
    ("matrix", "seq2seq", "transformer", ()),
    ("mixer", "echo", "lstm", ("--model.arch=mamba",)),
)
STEPS = 8  # timed steps a side
WARMUP = 2  # eager steps before timing (allocator warm-up)


def _clock() -> float:
    """CPU seconds of this process on a CPU, wall seconds on a GPU (after a sync)."""
    sync()
    return time.process_time() if device_name() == "cpu" else time.perf_counter()


def _steps(model, loss_fn, batch: dict, steps: int, clip: float | None) -> tuple[list, float]:
    """``steps`` training steps on ``batch``; (seconds of each step, the first step's loss)."""
    optimizer, _ = model.build_optimizer(steps + WARMUP + 1, clips=bool(clip))
    seconds, first = [], None
    for _ in range(steps):
        start = _clock()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(batch)
        loss.backward()
        if clip:
            clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        seconds.append(_clock() - start)
        first = float(loss.detach()) if first is None else first
    return seconds, first


def measure(label: str, config: str, arch: str, extra: tuple, steps: int, run_dir: Path) -> dict:
    """One row: eager and compiled steps of ``config``'s model on one of its batches."""
    cli = build(config, arch, steps, run_dir, *extra)
    cli.book.lock.release()
    prepare_data(cli)
    device = torch.device(device_name())
    model = cli.model.to(device).train()
    batch = next(iter(cli.datamodule.train_dataloader()))
    batch = {key: value.to(device) for key, value in batch.items()}
    clip = cli.trainer.gradient_clip_val
    start_state = {k: v.clone() for k, v in model.state_dict().items()}
    eager, eager_loss = _steps(model, model.loss, batch, steps + WARMUP, clip)
    model.load_state_dict(start_state)
    torch._dynamo.reset()  # each row its own graphs (rows share a system's loss code)
    compiled_loss = compile_loss(model.loss, device)
    wall = time.perf_counter()
    _, compiled_first = _steps(model, compiled_loss, batch, 1, clip)
    compile_s = time.perf_counter() - wall
    compiled, _ = _steps(model, compiled_loss, batch, steps, clip)
    eager_ms = 1e3 * statistics.median(eager[WARMUP:])
    compiled_ms = 1e3 * statistics.median(compiled)
    hp = model.hparams
    row = {
        "task": f"{label}:{config.rpartition('/')[2]}",
        "arch": hp.arch,
        "batch": next(iter(batch.values())).shape[0],
        "length": next(iter(batch.values())).shape[1],
        "dropout": hp.dropout,
        "eager_ms": round(eager_ms, 1),
        "compiled_ms": round(compiled_ms, 1),
        "speedup": round(eager_ms / compiled_ms, 2),
        "compile_s": round(compile_s, 1),
        # the same first step both ways (a different dropout draw where dropout > 0)
        "first_loss_diff": abs(compiled_first - eager_loss),
    }
    log(f"compile: {row['task']}/{row['arch']}: {row['speedup']}x, compile {row['compile_s']} s")
    return row


def run(quick: bool, workdir: Path) -> dict:
    """One row per config; ``passed``: compiling is not slower where ``auto`` turns it on."""
    steps, rows_wanted = (2, ROWS[5:6]) if quick else (STEPS, ROWS)
    new_dir = run_dir_factory(workdir)
    rows = [
        measure(label, config, arch, extra, steps, new_dir(f"{config.replace('/', '-')}-{arch}"))
        for label, config, arch, extra in rows_wanted
    ]
    device = device_name()
    on_by_default = device == "cuda"  # systems.compiled.compiles("auto", device)
    return {
        "rows": rows,
        "device": device,
        "steps": steps,
        "target": "compiled >= eager wherever --compile auto turns it on "
        f"(on {device}: {'on' if on_by_default else 'off'}, mode {compile_mode(device)})",
        "notes": [
            "eager_ms / compiled_ms: median training step (zero_grad, loss, backward, clip, "
            "step), CPU ms of this process on a CPU, synced wall ms on a GPU; speedup = "
            "eager / compiled; compile_s: wall seconds of the first compiled step",
            "first_loss_diff: |compiled - eager| loss of the first step (float32; with "
            "dropout > 0 the two draw different masks)",
        ],
        "status": "ok",
        "passed": not on_by_default or all(r["speedup"] >= 1.0 for r in rows),
    }
