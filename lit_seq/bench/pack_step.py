"""One population training step of the transformer families: attention as one call over the
members' batches against vmap's loop over the members, and against the K solo steps.

A population's members attend through ``lit_seq.models.stacking.MembersAsBatchAttention``,
whose vmap rule folds the K members into the batch: one attention kernel call a layer
whatever K. Without it vmap falls back to a loop over the members (CPU flash attention has
no batching rule): K calls. Per family and K: K members of the shipped config and one
training batch each, on the device lit_seq trains on (``cuda`` when present); the time of
one training step (forward and backward of the members' summed losses) both ways, and of
the K members' own solo steps, interleaved in this process, the median of ``repeats``: CPU
time on a CPU, wall time after a device sync on a GPU; and the aten ops a step runs both
ways (leaf ops in torch.profiler: what a GPU launches), which folding keeps constant in K.
"""

import statistics
from pathlib import Path
from unittest import mock

import torch
from torch.profiler import ProfilerActivity, profile

from lit_seq.bench.common import (
    config_path,
    device_name,
    fit_args,
    quiet_fit,
    run_dir_factory,
    sync,
    work_clock,
)
from lit_seq.fit.cli import build_cli
from lit_seq.models import attention
from lit_seq.population.stacked import member_losses, stack_weights

FAMILIES = (("signal", "transformer"), ("parity_sum", "transformer"), ("seq2seq", "transformer"))
SIZES = (1, 9, 27)
REPEATS = 5


def _members(task: str, arch: str, k: int, new_dir) -> tuple[list, list[dict]]:
    """K members of the shipped config (seeds 0..K-1) in training mode, one batch each, on
    the benchmark's device."""
    device = device_name()
    members, batches = [], []
    with quiet_fit():
        for seed in range(k):
            args = fit_args(f"--seed_everything={seed}", config=config_path(task, arch))
            cli = build_cli([*args, f"--run_dir={new_dir(f'{task}-{arch}-step{seed}')}"])
            cli.book.lock.release()
            cli.datamodule.setup("fit")
            batch = next(iter(cli.datamodule.train_dataloader()))
            batches.append({key: value.to(device) for key, value in batch.items()})
            members.append(cli.model.to(device).train())
    return members, batches


def _looped():
    """vmap without the folding rule: attention as a plain call, which vmap loops over."""
    return mock.patch.object(attention, "in_stacked_call", lambda: False)


def _leaf_ops(step) -> int:
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    events = prof.events()
    parents = {id(e.cpu_parent) for e in events if e.cpu_parent is not None}
    return sum(1 for e in events if e.name.startswith("aten::") and id(e) not in parents)


def measure(task: str, arch: str, k: int, repeats: int, new_dir) -> dict:
    members, batches = _members(task, arch, k, new_dir)
    batch = {key: torch.stack([b[key] for b in batches]) for key in batches[0]}
    stacked = {name: w.requires_grad_(True) for name, w in stack_weights(members).items()}

    def population_step():
        for weights in stacked.values():
            weights.grad = None
        member_losses(members[0], stacked, batch).sum().backward()

    def looped_step():
        with _looped():
            population_step()

    def solo_steps():
        for member, own in zip(members, batches, strict=True):
            member.zero_grad(set_to_none=True)
            member.loss(own).backward()

    steps = {"folded": population_step, "looped": looped_step, "solo": solo_steps}
    # vmap's loop over a CUDA attention kernel can fail in its backward (torch 2.11 + CUDA
    # 13 on an H200: "LSE is not correctly aligned (strideH)"): then the row says so, and
    # the folded step, which does not take that path, is timed against the solo steps alone
    looped_error = None
    try:
        looped_step()
    except RuntimeError as error:
        looped_error = str(error).splitlines()[0]
        del steps["looped"]
    seconds = {name: [] for name in steps}
    clock = work_clock(device_name())  # a CPU's: this process's CPU time; a GPU's: wall
    for step in steps.values():  # warm-up
        step()
    for _ in range(repeats):
        for name, step in steps.items():
            sync()
            start = clock()
            step()
            sync()
            seconds[name].append(clock() - start)
    ms = {name: 1e3 * statistics.median(s) for name, s in seconds.items()}
    looped = looped_error is None
    return {
        "task": task,
        "arch": arch,
        "k": k,
        "folded_ms": round(ms["folded"], 1),
        "looped_ms": round(ms["looped"], 1) if looped else None,
        "solo_ms": round(ms["solo"], 1),
        "folded_vs_looped": round(ms["looped"] / ms["folded"], 2) if looped else None,
        "folded_vs_solo": round(ms["solo"] / ms["folded"], 2),
        "folded_ops": _leaf_ops(population_step),
        "looped_ops": _leaf_ops(looped_step) if looped else None,
        "looped_error": looped_error,
    }


def run(quick: bool, workdir: Path) -> dict:
    """One row per transformer family and K."""
    sizes, repeats = ((1, 3), 1) if quick else (SIZES, REPEATS)
    families = FAMILIES[:1] if quick else FAMILIES
    new_dir = run_dir_factory(workdir)
    rows = [measure(t, a, k, repeats, new_dir) for t, a in families for k in sizes]
    return {
        "rows": rows,
        "device": device_name(),
        "repeats": repeats,
        "target": "a population step's aten ops do not grow with K (folded attention)",
        "notes": [
            "folded_ms / looped_ms / solo_ms: ms of one training step (forward and backward) "
            "of K members (CPU time on a CPU, synced wall time on a GPU): attention folded "
            "into one call, vmap's loop over the members, the K members' own solo steps; "
            "medians, interleaved, 1 process",
            "folded_vs_looped = looped / folded; folded_vs_solo = solo / folded (> 1: the "
            "population step is faster); *_ops: leaf aten ops of one step",
        ],
        "status": "ok",
        "passed": all(
            len({r["folded_ops"] for r in rows if r["task"] == task}) == 1 for task, _ in families
        ),
    }
