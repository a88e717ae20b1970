"""Overhead: lit_seq's training loop vs a minimal hand-written PyTorch loop.

All sides train the same model (copies with the same initial weights), on the same
batches, for the same number of steps, with the same optimizer, schedule, gradient
clipping and (on a GPU) bf16 autocast:

- ``lit_seq``: ``Trainer.fit`` exactly as ``lit_seq.fit`` builds it: its callbacks, CSV
  logging, checkpointing and rich progress bar (drawn to a terminal-like sink);
- ``trainer``: a bare Lightning ``Trainer`` (no logger, callbacks, bar or summary), the
  floor Lightning itself sets, so that what lit_seq adds on top is visible;
- ``hand``: zero_grad / loss / backward / clip / step / schedule step, nothing else.

Validation is off everywhere (``limit_val_batches=0``) so all do the same work; W&B is
off. The Lightning sides carry one extra callback that reads the clock at each step.
ratio = lit_seq / hand seconds from the first step's start to the last step's end;
``fit_ratio`` compares whole ``trainer.fit`` calls with the whole hand loop, so it also
charges fit's fixed costs (set-up, attention plot, last checkpoint: ``fit_fixed_s``).
"""

import copy
import time
from pathlib import Path

import lightning as L
import torch
from torch.nn.utils import clip_grad_norm_

from lit_seq.bench.common import (
    ARCHS,
    BENCH_TASKS,
    Stopwatch,
    alternating,
    config_path,
    device_name,
    fit_args,
    log,
    median,
    quiet_fit,
    run_dir_factory,
    sync,
)
from lit_seq.fit import LitSeqCLI, build_cli
from lit_seq.systems.base import SequenceSystem

TARGET = 1.05  # lit_seq may cost at most 5% more than the hand loop
STEPS, REPEATS = 150, 3


def build(task: str, arch: str, steps: int, run_dir: Path, *extra: str) -> LitSeqCLI:
    """lit_seq's default ``task``/``arch`` fit, ``steps`` long, validation and W&B off."""
    args = fit_args(
        f"--trainer.max_steps={steps}",
        "--trainer.limit_val_batches=0",
        *extra,
        config=config_path(task, arch),
        run_dir=run_dir,
    )
    return build_cli(args)


def _mark() -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process): CPU time barely moves when other jobs
    take turns on the cores, so it is the load-proof view of the same work."""
    return time.perf_counter(), time.process_time()


class StepClock(L.Callback):
    """A :func:`_mark` at the start of every training batch and at the end of the last.

    The end is taken at the last batch, not at ``on_train_end``, so that end-of-training
    work (attention plot, last checkpoint) counts as fit's fixed cost, not as steps.
    """

    def __init__(self) -> None:
        self.marks: list[tuple[float, float]] = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        self.marks.append(_mark())

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        if trainer.global_step >= trainer.max_steps:
            sync()
            self.marks.append(_mark())


def prepare_data(cli: LitSeqCLI) -> None:
    """Generate the data where fit would (on the training device), outside any timing."""
    cli.datamodule.trainer = cli.trainer
    cli.datamodule.setup("fit")


def lit_loop(cli: LitSeqCLI) -> tuple[list[float], float]:
    """Run ``trainer.fit``; return (step marks, whole-call seconds)."""
    clock = StepClock()
    cli.trainer.callbacks.insert(0, clock)  # first: its batch start precedes the others'
    with Stopwatch() as whole:
        cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    return clock.marks, whole.seconds


def hand_loop(
    model: SequenceSystem,
    datamodule,
    steps: int,
    clip: float | None,
    precision: str,
    device: str | None = None,
) -> tuple[list[float], float]:
    """The minimal loop: zero_grad, loss, backward, clip, step, schedule step.

    The optimizer and schedule are the ones ``configure_optimizers`` hands Lightning
    (:meth:`SequenceSystem.build_optimizer`; the schedule's length is known here, so no
    trainer is needed), on ``device`` (default: the benchmark's, :func:`device_name`), under
    bf16 autocast where ``precision`` is a bf16 one. Returns (step marks, whole seconds
    including the optimizer set-up), like :func:`lit_loop`.
    """
    device = torch.device(device or device_name())
    bf16 = precision.startswith("bf16")
    marks = []
    with Stopwatch() as whole:
        model.to(device).train()  # first: the optimizer's fused kernels follow the device
        optimizer, scheduler = model.build_optimizer(steps, clips=bool(clip))
        loader = datamodule.train_dataloader()  # created once and re-iterated, as fit does
        while len(marks) < steps:
            for batch in loader:
                marks.append(_mark())
                batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                    loss = model.loss(batch)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if clip:
                    clip_grad_norm_(model.parameters(), clip)
                optimizer.step()
                scheduler.step()
                if len(marks) == steps:
                    break
        sync(device.type)
        marks.append(_mark())
    return marks, whole.seconds


def _span(marks: list[tuple[float, float]], cpu: bool = False) -> float:
    """Seconds from the first step's start to the end of the last step (wall or CPU)."""
    return marks[-1][cpu] - marks[0][cpu]


def plain_trainer_loop(
    model: SequenceSystem, datamodule, steps: int, like: L.Trainer
) -> tuple[list[tuple[float, float]], float]:
    """The floor Lightning itself sets: a bare ``Trainer`` (no logger, checkpoints,
    progress bar or summary) with the same clipping and precision, on the same system."""
    clock = StepClock()
    trainer = L.Trainer(
        accelerator="auto",
        devices=1,
        precision=like.precision,
        max_steps=steps,
        gradient_clip_val=like.gradient_clip_val,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[clock],
    )
    with Stopwatch() as whole:
        trainer.fit(model, datamodule=datamodule)
    return clock.marks, whole.seconds


SIDES = ("lit_seq", "trainer", "hand")


def measure(task: str, arch: str, steps: int, repeats: int, workdir: Path) -> dict:
    """One row: lit_seq, a plain Trainer and the hand loop, ``repeats`` rounds interleaved
    (ABC CBA ABC ...), each round on a fresh build with the same initial weights.

    Each ratio is the median over rounds of that round's time / the hand loop's, so a
    ratio always compares runs made back to back. ``cpu_ratio`` is the same on process
    CPU time, which other jobs on a shared machine barely move.
    """
    next_dir = run_dir_factory(workdir)
    rounds: list[dict] = []
    for r, side in alternating(list(SIDES), repeats):
        if len(rounds) == r:
            with quiet_fit():
                cli = build(task, arch, steps, next_dir(f"{task}-{arch}"))
            prepare_data(cli)
            copies = {s: copy.deepcopy(cli.model) for s in SIDES[1:]}  # untouched initial weights
            rounds.append({})
        with quiet_fit():
            if side == "lit_seq":
                rounds[r][side] = lit_loop(cli)
            elif side == "trainer":
                rounds[r][side] = plain_trainer_loop(
                    copies[side], cli.datamodule, steps, cli.trainer
                )
            else:
                trainer = cli.trainer
                rounds[r][side] = hand_loop(
                    copies[side],
                    cli.datamodule,
                    steps,
                    trainer.gradient_clip_val,
                    str(trainer.precision),
                )

    def ratio(side: str, seconds) -> float:
        return round(median([seconds(rd[side]) / seconds(rd["hand"]) for rd in rounds]), 3)

    def per_second(side: str) -> float:
        return round(steps / median([_span(rd[side][0]) for rd in rounds]), 1)

    wall = ratio("lit_seq", lambda t: _span(t[0]))
    return {
        "task": task,
        "arch": arch,
        "ratio": wall,
        "cpu_ratio": ratio("lit_seq", lambda t: _span(t[0], cpu=True)),
        "trainer_ratio": ratio("trainer", lambda t: _span(t[0])),
        "fit_ratio": ratio("lit_seq", lambda t: t[1]),
        "lit_steps_per_s": per_second("lit_seq"),
        "hand_steps_per_s": per_second("hand"),
        "fit_fixed_s": round(
            median([rd["lit_seq"][1] - _span(rd["lit_seq"][0]) for rd in rounds]), 3
        ),
        "passed": wall <= TARGET,
    }


def run(
    quick: bool,
    workdir: Path,
    steps: int | None = None,
    repeats: int | None = None,
    tasks: list[str] | None = None,
) -> dict:
    steps = steps or (8 if quick else STEPS)
    repeats = repeats or (1 if quick else REPEATS)
    tasks = tasks or list(BENCH_TASKS)
    # one throw-away fit pays the one-off imports and kernel set-ups before any timing
    with quiet_fit():
        lit_loop(build("signal", "transformer", 2, workdir / "warmup"))
    rows = []
    for task in tasks:
        for arch in ARCHS:
            log(f"overhead: {task}/{arch}, {steps} steps x {repeats} each side")
            rows.append(measure(task, arch, steps, repeats, workdir / "overhead"))
    return {
        "target": f"ratio <= {TARGET}",
        "steps": steps,
        "repeats": repeats,
        "notes": [
            "ratio: lit_seq / hand-loop wall seconds over the training steps, median of "
            "per-round ratios (rounds interleaved ABC CBA ABC in one process); cpu_ratio: the "
            "same on process CPU time (robust to other jobs); trainer_ratio: a bare Lightning "
            "Trainer / hand loop (Lightning's own floor); fit_ratio: whole fit call / hand",
            "validation off everywhere (limit_val_batches=0) so all sides do the same work; "
            "lit_seq keeps its default callbacks, CSV logging, checkpoints and rich progress "
            "bar (drawn to a terminal-like sink); W&B off",
        ],
        "rows": rows,
        "passed": all(r["passed"] for r in rows),
    }
