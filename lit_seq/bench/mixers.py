"""Mixers: training steps/s of mamba, linear_rnn and linear_attention beside lstm and transformer.

Per task of the matrix (``BENCH_TASKS`` less seq2seq, which has no mixer arch): lstm and
transformer at their shipped configs, and each mixer at the shipped *lstm* config with only
``--model.arch`` changed, so it has the lstm's width, layers, batch, data and optimizer. The
step time is the median step of the minimal hand loop (``overhead.hand_loop``: model, loss,
optimizer, schedule; no Lightning), after a few warm-up steps, in wall and in CPU seconds of
this process (the load-proof view: on a shared CPU the wall time also counts the turns other
jobs take). ``vs_lstm`` is the arch's CPU step time over the lstm's on the same task (the
wall ratio beside it); issue 40's goal is a mixer within :data:`GOAL` x.
"""

import statistics
from pathlib import Path

from lit_seq.bench.common import BENCH_TASKS, log, run_dir_factory
from lit_seq.bench.overhead import build, hand_loop, prepare_data
from lit_seq.models import MIXERS, count_parameters

ARCHS = ("lstm", "transformer", *MIXERS)
GOAL = 2.0  # a mixer's training step at most this many times the lstm's
STEPS = 30
WARMUP = 5  # steps left out of the median: allocator and kernel warm-up


def measure(task: str, arch: str, steps: int, run_dir: Path) -> dict:
    """One row: ``arch`` on ``task``'s shipped config (the lstm's for a mixer)."""
    shipped = arch if arch in ("lstm", "transformer") else "lstm"
    cli = build(task, shipped, steps, run_dir, f"--model.arch={arch}")
    prepare_data(cli)
    clip = cli.trainer.gradient_clip_val
    marks, _ = hand_loop(cli.model, cli.datamodule, steps, clip, cli.trainer.precision)
    skip = min(WARMUP, len(marks) - 2)
    spans = list(zip(marks[skip:], marks[skip + 1 :], strict=False))  # (start, end) marks
    wall, cpu = (statistics.median(b[i] - a[i] for a, b in spans) for i in (0, 1))
    hp = cli.model.hparams
    return {
        "task": task,
        "arch": arch,
        "d_model": hp.d_model,
        "n_layers": hp.n_layers,
        "params": count_parameters(cli.model.net),
        "step_ms": round(1e3 * wall, 2),
        "cpu_ms": round(1e3 * cpu, 2),
        "steps_per_s": round(1 / wall, 1),
    }


def run(quick: bool, workdir: Path) -> dict:
    """Every arch on every task; ``vs_lstm`` per row, ``passed`` if each mixer meets GOAL."""
    steps = 8 if quick else STEPS
    new_dir = run_dir_factory(workdir)
    rows = []
    for task in [t for t in BENCH_TASKS if t != "seq2seq"][: 1 if quick else None]:
        task_rows = [measure(task, arch, steps, new_dir(f"{task}-{arch}")) for arch in ARCHS]
        lstm = task_rows[0]
        for row in task_rows:
            row["vs_lstm"] = round(row["cpu_ms"] / lstm["cpu_ms"], 2)
            row["wall_vs_lstm"] = round(row["step_ms"] / lstm["step_ms"], 2)
            row["passed"] = row["arch"] not in MIXERS or row["vs_lstm"] <= GOAL
            log(f"mixers: {task}/{row['arch']}: {row['cpu_ms']} CPU ms, {row['vs_lstm']}x lstm")
        rows += task_rows
    return {"rows": rows, "steps": steps, "status": "ok", "passed": all(r["passed"] for r in rows)}
