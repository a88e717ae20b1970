"""Packing: K runs of one shape trained as one pack against the same K runs one after another.

Per family (:data:`FAMILIES`, task x arch of the ``matrix`` grid) and K in :data:`PACK_SIZES`: K seeds of the
shipped config, ``steps`` optimizer steps each, trained by ``lit_seq.fit`` one after another
in this process, then again as one pack (``lit_seq.pack``: each member still its own fit,
its network's forward and backward stacked with the others'). Reported: wall seconds of
both, training steps per second (K x steps / wall), the speed-up, the share of training
forwards that were stacked, and the equality check: the largest difference between a
member's ``train/loss`` curve (every step) and test metrics and its solo run's.
``ablate.packing.AUTO_FAMILIES`` is set from this table: a family packs under ``--pack
auto`` only where it is faster packed.
"""

import csv
import functools
import json
from pathlib import Path

from lit_seq import fit
from lit_seq.ablate.run_one import packed_fit
from lit_seq.bench.common import (
    Stopwatch,
    config_path,
    fit_args,
    log,
    quiet_fit,
    run_dir_factory,
)
from lit_seq.pack.scheduler import Pack

PACK_SIZES = (1, 3, 9, 27)
STEPS = 100
FIRST_STEPS = 10  # float32: kernels that add in another order drift apart after a while
# one family per backbone on echo (the matrix's shortest sequences), the recurrent ones on
# signal too (64 steps), and the transformer on parity_sum (its longest cells)
FAMILIES = (
    ("echo", "rnn"),
    ("echo", "lstm"),
    ("echo", "transformer"),
    ("signal", "rnn"),
    ("signal", "lstm"),
    ("parity_sum", "transformer"),
)


def _args(task: str, arch: str, seed: int, steps: int, run_dir: Path) -> list[str]:
    return fit_args(
        f"--seed_everything={seed}",
        f"--trainer.max_steps={steps}",
        f"--trainer.val_check_interval={steps}",
        "--trainer.log_every_n_steps=1",
        "--trainer.enable_progress_bar=false",
        config=config_path(task, arch),
        run_dir=run_dir,
    )


def _losses(run_dir: Path) -> list[float]:
    with open(run_dir / "metrics.csv") as f:
        return [float(row["train/loss"]) for row in csv.DictReader(f) if row.get("train/loss")]


def _metrics(run_dir: Path) -> dict[str, float]:
    return json.loads((run_dir / "metrics.json").read_text())["metrics"]


def packed(arg_lists: list[list[str]]) -> Pack:
    """Train the fits of ``arg_lists`` as one pack; the pack (its members' results, stats)."""
    pack = Pack()
    for i, args in enumerate(arg_lists):
        pack.add(f"member{i}", functools.partial(packed_fit, pack, args))
    pack.run()
    failed = [m.name for m in pack.members if m.error is not None]
    if failed:
        raise RuntimeError(f"pack members failed: {failed}: {pack.members[0].error}")
    return pack


def measure(task: str, arch: str, k: int, steps: int, new_dir) -> dict:
    solo_dirs = [new_dir(f"{task}-{arch}-solo{s}") for s in range(k)]
    pack_dirs = [new_dir(f"{task}-{arch}-pack{s}") for s in range(k)]
    with quiet_fit(), Stopwatch() as solo:
        for seed, run_dir in enumerate(solo_dirs):
            fit.cli_main(_args(task, arch, seed, steps, run_dir))
    with quiet_fit(), Stopwatch() as together:
        pack = packed([_args(task, arch, s, steps, d) for s, d in enumerate(pack_dirs)])
    loss_diff = first_diff = metric_diff = 0.0
    for a, b in zip(solo_dirs, pack_dirs, strict=True):
        la, lb = _losses(a), _losses(b)
        if len(la) != len(lb):
            raise RuntimeError(f"{task}/{arch}: {len(la)} solo losses, {len(lb)} packed")
        diffs = [abs(x - y) for x, y in zip(la, lb, strict=True)]
        loss_diff = max(loss_diff, *diffs)
        first_diff = max(first_diff, *diffs[:FIRST_STEPS])
        ma, mb = _metrics(a), _metrics(b)
        metric_diff = max([metric_diff, *(abs(ma[key] - mb[key]) for key in ma)])
    stacked = sum(m.stats["stacked"] for m in pack.members)
    forwards = stacked + sum(m.stats["solo"] for m in pack.members)
    return {
        "task": task,
        "arch": arch,
        "k": k,
        "solo_s": round(solo.seconds, 2),
        "packed_s": round(together.seconds, 2),
        "solo_steps_per_s": round(k * steps / solo.seconds, 1),
        "packed_steps_per_s": round(k * steps / together.seconds, 1),
        "speedup": round(solo.seconds / together.seconds, 2),
        "stacked_share": round(stacked / max(forwards, 1), 3),
        "first_loss_diff": float(f"{first_diff:.3g}"),
        "max_loss_diff": float(f"{loss_diff:.3g}"),
        "max_metric_diff": float(f"{metric_diff:.3g}"),
        "equal": first_diff < 1e-5,  # float32 rounding over the first steps
    }


def run(quick: bool, workdir: Path, families: list[tuple[str, str]] | None = None) -> dict:
    """One row per family and K; ``families`` (task, arch) default to every matrix pair."""
    steps = 10 if quick else STEPS
    sizes = (1, 3) if quick else PACK_SIZES
    if families is None:
        families = FAMILIES[:2] if quick else FAMILIES
    new_dir = run_dir_factory(workdir)
    rows = []
    for task, arch in families:
        for k in sizes:
            rows.append(measure(task, arch, k, steps, new_dir))
            row = rows[-1]
            log(f"pack: {json.dumps(row)}")
    return {
        "rows": rows,
        "steps": steps,
        "target": "packed members equal their solo runs; speed-up per family",
        "notes": [
            "speedup = solo_s / packed_s: K fits one after another vs the same K as one pack, "
            "build, training, validation and tests included",
            f"first_loss_diff / max_loss_diff: largest |train/loss| difference of a member and "
            f"its solo run over the first {FIRST_STEPS} / all steps (float32: kernels that add "
            "in another order drift apart; float64 equality is a test)",
        ],
        "status": "ok",
        "passed": all(r["equal"] for r in rows),
    }
