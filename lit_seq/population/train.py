"""Train K runs of one shape as one population and record each as the run it is.

    results = fit_population([args_0, args_1, ...])   # each: the run's lit_seq.fit arguments

Every member is built by the fit's own CLI from its own arguments (its seed, rate, run
folder, W&B run), then all train in one Lightning loop (``system.PopulationSystem``) on
their own data in lockstep (``loader.StackedLoader``), each with its own bookkeeping
(``members.MemberRun``). A member that reaches its target or diverges stops updating at
that validation; the others go on unchanged. Each member ends with its solo fit's test and
record; the result list holds its ``FitResult``, or the exception it failed with.
"""

from __future__ import annotations

import time
from pathlib import Path

import lightning as L
import torch

from lit_seq.fit.checkpoints import CHECKPOINTS, LAST
from lit_seq.fit.cli import LitSeqCLI, build_cli
from lit_seq.fit.signals import FitInterrupted, StopOnSignal
from lit_seq.population.loader import StackedLoader
from lit_seq.population.members import MemberRun
from lit_seq.population.stacked import unstackable
from lit_seq.population.system import PopulationSystem, stacked_name
from lit_seq.record import FitResult

# the trainer settings of a population: its members' (which must agree: population_key)
TRAINER_KEYS = (
    "accelerator",
    "precision",
    "max_steps",
    "max_epochs",
    "val_check_interval",
    "check_val_every_n_epoch",
    "limit_train_batches",
    "limit_val_batches",
    "log_every_n_steps",
)
# model options that only the optimizer reads: members may differ in them
OPTIMIZER_OPTIONS = ("lr", "optimizer", "weight_decay", "schedule", "warmup_steps")


def why_not_population(cli) -> str:
    """Why the run built as ``cli`` (a fit CLI, checked or built) cannot train in a
    population, or "" when it can."""
    hp = cli.model.hparams
    if hp.get("dropout"):
        return "dropout > 0 draws from one random stream (a member would not equal its solo run)"
    if hp.get("backbone"):
        return "a plug-in backbone is not known to be stackable"
    if hp.get("pos_mode") == "randomized":
        return "randomized positions are drawn from one random stream in training"
    dm = cli.datamodule
    if getattr(dm, "curriculum", False) and getattr(dm, "sampling", "fixed") != "fresh":
        # fresh batches draw step s's length from s alone: every member meets the same one
        return "the curriculum's batch lengths differ between members (fixed sampling)"
    return unstackable(cli.model.net)


def population_key(cli) -> dict:
    """What members of one population share: system, model options, task, trainer."""
    hp = {k: v for k, v in cli.model.hparams.items() if not k.startswith("_")}
    trainer = cli.config.trainer
    return {
        "system": type(cli.model).__qualname__,
        "model": {k: v for k, v in hp.items() if k not in OPTIMIZER_OPTIONS},
        "task": cli.datamodule.name,
        "data": {
            k: v for k, v in cli.config.data.init_args.as_dict().items() if k not in ("seed",)
        },
        "trainer": {k: str(trainer.get(k)) for k in TRAINER_KEYS},
        "clip": trainer.get("gradient_clip_val"),
        "target": dict(vars(cli.config.target)) if cli.config.get("target") else None,
    }


class PopulationData(L.LightningDataModule):
    """The members' data modules as one: their loaders in lockstep."""

    def __init__(self, members: list[L.LightningDataModule]) -> None:
        super().__init__()
        self.members = members
        self.train_loader: StackedLoader | None = None

    def setup(self, stage: str) -> None:
        for dm in self.members:
            dm.trainer = self.trainer  # where the data lives (on a GPU, on the device)
            dm.setup(stage)

    def train_dataloader(self) -> StackedLoader:
        self.train_loader = StackedLoader([dm.train_dataloader() for dm in self.members])
        return self.train_loader

    def val_dataloader(self) -> StackedLoader:
        return StackedLoader([dm.val_dataloader() for dm in self.members])


class _AfterStep(L.Callback):
    """Hands each optimizer step's losses to the members' runs. A callback ahead of the
    stop-on-signal one, so that the step a signal stops at is logged before it stops."""

    def __init__(self, after_step) -> None:
        self.after_step = after_step

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.after_step(pl_module.last_losses, pl_module.optimizer)


def _trainer(cli: LitSeqCLI, callbacks: list[L.Callback]) -> L.Trainer:
    """The population's Trainer: its members' settings, no logger (the members log)."""
    settings = {k: cli.config.trainer.get(k) for k in TRAINER_KEYS}  # None too: a setting
    return L.Trainer(
        **settings,
        devices=1,
        logger=False,
        enable_checkpointing=True,  # StopOnSignal is the one Checkpoint: no default one
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=callbacks,
    )


def member_checkpoint(trainer: L.Trainer, population: PopulationSystem, k: int) -> dict:
    """Member ``k``'s checkpoint in the solo format: its weights, hyperparameters, optimizer
    and schedule state (torch's Adam / AdamW and LambdaLR, as its solo fit saves them) and
    the loop's position with its own loader's."""
    member = population.sync_member(k)
    adam = population.optimizer
    steps = int(adam.steps[k])
    optimizer, schedule = member.build_optimizer(
        int(trainer.estimated_stepping_batches), clips=bool(trainer.gradient_clip_val)
    )
    for name, param in member.named_parameters():
        state = adam.state.get(population.stacked[stacked_name(name)])
        if state:
            optimizer.state[param] = {
                "step": torch.tensor(float(steps)),
                "exp_avg": state["exp_avg"][k].clone(),
                "exp_avg_sq": state["exp_avg_sq"][k].clone(),
            }
    lr = adam.current_lrs()[k]
    for group in optimizer.param_groups:
        group["lr"] = lr
    schedule.last_epoch, schedule._step_count, schedule._last_lr = steps, steps + 1, [lr]
    loop = trainer.fit_loop.state_dict()
    # a solo fit's scheduler steps with its optimizer; the population's has no scheduler
    this_epoch = loop["epoch_loop.batch_progress"]["current"]["completed"]
    loop["epoch_loop.scheduler_progress"] = {
        "total": {"ready": steps, "completed": steps},
        "current": {"ready": this_epoch, "completed": this_epoch},
    }
    loaders = loop.get("state_dict", {}).get("combined_loader")
    if loaders:  # the population's loader state -> this member's
        loop["state_dict"]["combined_loader"] = [
            state["members"][k] if isinstance(state, dict) and "members" in state else state
            for state in loaders
        ]
    return {
        "epoch": trainer.current_epoch,
        "global_step": steps,
        "pytorch-lightning_version": L.__version__,
        "state_dict": member.state_dict(),
        "loops": {
            "fit_loop": loop,
            "validate_loop": trainer.validate_loop.state_dict(),
            "test_loop": trainer.test_loop.state_dict(),
            "predict_loop": trainer.predict_loop.state_dict(),
        },
        "callbacks": {},
        "optimizer_states": [optimizer.state_dict()],
        "lr_schedulers": [schedule.state_dict()],
        "hparams_name": "kwargs",
        "hyper_parameters": dict(member.hparams),
        "first_train_loss": member.first_train_loss,  # its divergence bound, on a resume
    }


def fit_population(member_args: list[list[str]]) -> list[FitResult | BaseException]:
    """Train the runs given by their fit arguments as one population; one result each.

    Raises BadInput (before anything trains) for a bad member config, and ValueError when
    the members cannot share a population (:func:`why_not_population`, :func:`population_key`).
    """
    clis: list[LitSeqCLI] = []
    try:
        for args in member_args:
            clis.append(build_cli(args))  # each locks its run folder
        _check_population(clis)
    except BaseException:
        for cli in clis:  # nothing trained: every folder is free again
            cli.run_lock.release()
        raise
    runs: list[MemberRun] = []
    # a signal stops the population at a step boundary with every member's last.ckpt saved
    stopper = StopOnSignal(
        Path(clis[0].run_dir) / CHECKPOINTS / LAST, save=lambda t: _save_last(runs)
    )
    started = time.perf_counter()
    after_step = _AfterStep(
        lambda losses, adam: _after_step(runs, trainer, adam, losses, time.perf_counter() - started)
    )
    trainer = _trainer(clis[0], [after_step, stopper])
    clip = clis[0].config.trainer.get("gradient_clip_val")
    population = PopulationSystem([c.model for c in clis], clip)
    runs += [MemberRun(cli, _saver(trainer, population, k)) for k, cli in enumerate(clis)]
    population.on_validation = lambda k, scores: runs[k].on_validation(
        trainer.global_step, trainer.current_epoch, time.perf_counter() - started, scores
    )
    for run in runs:
        run.start()
    failure: BaseException | None = None
    try:
        with stopper.handling_signals():
            trainer.fit(population, datamodule=PopulationData([c.datamodule for c in clis]))
    except (Exception, FitInterrupted) as err:  # every member still training fails with it
        failure = err
    outcomes = []
    for k, run in enumerate(runs):
        population.sync_member(k)  # its final weights (a stopped member's: those it stopped at)
        outcomes.append(run.finish(None if run.done and not failure else failure))
    return outcomes


def _saver(trainer: L.Trainer, population: PopulationSystem, k: int):
    def save(path) -> None:
        trainer.strategy.checkpoint_io.save_checkpoint(
            member_checkpoint(trainer, population, k), path
        )

    return save


def _save_last(runs: list[MemberRun]) -> None:
    for run in runs:
        if not run.done:
            run.save(run.folder / LAST)


def _after_step(runs, trainer, adam, losses, seconds: float) -> None:
    values, steps = losses.tolist(), adam.steps.tolist()  # one copy each, not one per member
    for k, run in enumerate(runs):
        if not run.done:
            # the rate this step used (current_lrs is already the next step's)
            lr = adam.members[k].lr * adam.members[k].factor(steps[k] - 1)
            run.on_train_step(steps[k], trainer.current_epoch, values[k], lr, seconds)


def _check_population(clis: list[LitSeqCLI]) -> None:
    for cli in clis:
        if why := why_not_population(cli):
            raise ValueError(f"{cli.run_dir}: cannot train in a population: {why}")
    first = population_key(clis[0])
    for cli in clis[1:]:
        key = population_key(cli)
        if key != first:
            diff = sorted(k for k in key if key[k] != first[k])
            raise ValueError(f"{cli.run_dir}: differs from {clis[0].run_dir} in {diff}")
