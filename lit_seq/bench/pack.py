"""Populations: K runs of one shape trained as one population against the same K one by one.

Per family (:data:`FAMILIES`) and K in :data:`PACK_SIZES`: K seeds of the shipped config,
``steps`` optimizer steps each, trained by ``lit_seq.fit`` one after another in this
process, then again as one population (``lit_seq.population``: one loop, stacked weights,
one optimizer step; each member still a run with its own folder and record). Reported: wall
seconds of both, member-steps per second (K x steps / wall), the speed-up, and equality: the
largest difference between a member's ``train/loss`` curve (every step) and test metrics and
its solo run's, in float32, and in float64 (K = 2, :data:`CHECK_STEPS` steps), where a member
must equal its solo run to rounding. ``ablate.packing.AUTO_FAMILIES`` is set from this table.
"""

import csv
import json
from pathlib import Path

from lit_seq import fit
from lit_seq.bench.common import (
    Stopwatch,
    config_path,
    fit_args,
    log,
    quiet_fit,
    run_dir_factory,
)
from lit_seq.population.train import fit_population

PACK_SIZES = (1, 3, 9, 27)
STEPS = 100
FIRST_STEPS = 10  # float32: kernels that add in another order drift apart after a while
CHECK_STEPS = 20  # float64 equality check: steps of K = 2 members
FAMILIES = (
    ("echo", "rnn"),
    ("echo", "lstm"),
    ("signal", "transformer"),
    ("parity_sum", "transformer"),
    ("seq2seq", "transformer"),
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


def _train_seconds(run_dir: Path) -> float:
    """The record's training-loop seconds (a member's: the population's loop up to its end)."""
    return json.loads((run_dir / "metrics.json").read_text())["train_seconds"]


def packed(arg_lists: list[list[str]]) -> None:
    """Train the fits of ``arg_lists`` as one population; raise if a member failed."""
    outcomes = fit_population(arg_lists)
    failed = [i for i, o in enumerate(outcomes) if isinstance(o, BaseException)]
    if failed:
        raise RuntimeError(f"population members failed: {failed}: {outcomes[failed[0]]!r}")


def differences(solo_dirs, pack_dirs, label: str) -> tuple[float, float, float]:
    """Largest train/loss difference over the first steps and over all, largest test
    metric difference, between each member and its solo run."""
    loss_diff = first_diff = metric_diff = 0.0
    for a, b in zip(solo_dirs, pack_dirs, strict=True):
        la, lb = _losses(a), _losses(b)
        if len(la) != len(lb):
            raise RuntimeError(f"{label}: {len(la)} solo losses, {len(lb)} in the population")
        diffs = [abs(x - y) for x, y in zip(la, lb, strict=True)]
        loss_diff = max(loss_diff, *diffs)
        first_diff = max(first_diff, *diffs[:FIRST_STEPS])
        ma, mb = _metrics(a), _metrics(b)
        metric_diff = max([metric_diff, *(abs(ma[key] - mb[key]) for key in ma)])
    return first_diff, loss_diff, metric_diff


def float64_check(task: str, arch: str, new_dir) -> float:
    """Largest difference (losses, test metrics) of 2 members and their solo runs in float64."""
    extra = "--trainer.precision=64-true"
    solo = [new_dir(f"{task}-{arch}-f64solo{s}") for s in range(2)]
    together = [new_dir(f"{task}-{arch}-f64pop{s}") for s in range(2)]
    with quiet_fit():
        for seed, run_dir in enumerate(solo):
            fit.cli_main([*_args(task, arch, seed, CHECK_STEPS, run_dir), extra])
        packed([[*_args(task, arch, s, CHECK_STEPS, d), extra] for s, d in enumerate(together)])
    return max(differences(solo, together, f"{task}/{arch} float64"))


def measure(task: str, arch: str, k: int, steps: int, new_dir) -> dict:
    solo_dirs = [new_dir(f"{task}-{arch}-solo{s}") for s in range(k)]
    pack_dirs = [new_dir(f"{task}-{arch}-pack{s}") for s in range(k)]
    with quiet_fit(), Stopwatch() as solo:
        for seed, run_dir in enumerate(solo_dirs):
            fit.cli_main(_args(task, arch, seed, steps, run_dir))
    with quiet_fit(), Stopwatch() as together:
        packed([_args(task, arch, s, steps, d) for s, d in enumerate(pack_dirs)])
    first_diff, loss_diff, metric_diff = differences(solo_dirs, pack_dirs, f"{task}/{arch}")
    solo_loop = sum(_train_seconds(d) for d in solo_dirs)
    pack_loop = max(_train_seconds(d) for d in pack_dirs)
    return {
        "task": task,
        "arch": arch,
        "k": k,
        "solo_s": round(solo.seconds, 2),
        "packed_s": round(together.seconds, 2),
        "solo_steps_per_s": round(k * steps / solo.seconds, 1),
        "packed_steps_per_s": round(k * steps / together.seconds, 1),
        "speedup": round(solo.seconds / together.seconds, 2),
        "loop_speedup": round(solo_loop / max(pack_loop, 1e-9), 2),
        "first_loss_diff": float(f"{first_diff:.3g}"),
        "max_loss_diff": float(f"{loss_diff:.3g}"),
        "max_metric_diff": float(f"{metric_diff:.3g}"),
    }


def run(quick: bool, workdir: Path, families: list[tuple[str, str]] | None = None) -> dict:
    """One row per family and K; ``families`` (task, arch) default to :data:`FAMILIES`."""
    steps = 10 if quick else STEPS
    sizes = (1, 3) if quick else PACK_SIZES
    if families is None:
        families = FAMILIES[:2] if quick else FAMILIES
    new_dir = run_dir_factory(workdir)
    rows = []
    for task, arch in families:
        check = float64_check(task, arch, new_dir)
        for k in sizes:
            rows.append({**measure(task, arch, k, steps, new_dir), "float64_diff": check})
            log(f"pack: {json.dumps(rows[-1])}")
    return {
        "rows": rows,
        "steps": steps,
        "target": "members equal their solo runs in float64; speed-up per family",
        "notes": [
            "speedup = solo_s / packed_s: K fits one after another vs the same K as one "
            "population, build, training, validation and tests included; loop_speedup: "
            "the training loops alone (sum of the solo runs' train_seconds over the "
            "population's)",
            f"first_loss_diff / max_loss_diff: largest |train/loss| difference of a member and "
            f"its solo run over the first {FIRST_STEPS} / all steps in float32; float64_diff: "
            f"the same (and test metrics) in float64, K = 2, {CHECK_STEPS} steps",
        ],
        "status": "ok",
        "passed": all(r["float64_diff"] < 1e-9 for r in rows),
    }
