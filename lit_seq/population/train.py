"""Train K runs of one shape as one population and record each as the run it is.

    results = fit_population([args_0, args_1, ...])   # each: the run's lit_seq.fit arguments

Every member is built by the fit's own CLI from its own arguments (its seed, rate, run
folder, W&B run) but without a Trainer (``MemberCLI``), then all train in one Lightning loop
(``system.PopulationSystem``) on their own data in lockstep (``loader.PopulationData``),
each with its own bookkeeping (its ``RunBook``, called by ``members.MembersKeeper``). A
member that reaches its target or diverges stops updating at that validation; the others go
on unchanged. Then the members are tested together, one pass over each test set for all,
and each is recorded by its solo fit's own code; the result list holds its ``FitResult``,
or the exception it failed with. Members scored for selection (``--scoring selection``)
skip the range evaluation as a solo fit does, and when all are, the longer test sets too;
a pack with a member scored in full tests every member on every set (one pass for all). Each record's phase seconds (``lit_seq.fit.phases``) are its own build, checkpoint
writes and scoring plus 1/K of the pack's training and test (:func:`share_phases`).
"""

from __future__ import annotations

import lightning as L
import torch
from torch import nn

from lit_seq.fit.callbacks import Drawing, plot_attention, plot_confusion
from lit_seq.fit.checkpoints import AtomicCheckpointIO
from lit_seq.fit.cli import LitSeqCLI, build_cli, save_member_config
from lit_seq.fit.phases import PhaseClock
from lit_seq.fit.run import Trained, print_header, record
from lit_seq.fit.seeds import run_seed
from lit_seq.fit.signals import FitInterrupted
from lit_seq.population.loader import PopulationData
from lit_seq.population.members import MembersKeeper, member_checkpoint
from lit_seq.population.stacked import unstackable
from lit_seq.population.system import PopulationSystem
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
    if any(isinstance(m, nn.RNNBase) and m.dropout for m in cli.model.net.modules()):
        # other dropout computes its masks from (seed, step), in a member as in its solo run
        return "dropout between a fused recurrence's layers draws from torch's random stream"
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
        "compile": cli.config.get("compile"),
    }


def _trainer(cli: LitSeqCLI, callbacks: list[L.Callback]) -> L.Trainer:
    """The population's Trainer: its members' settings, no logger (the members log), and the
    solo fit's checkpoint writer (:class:`AtomicCheckpointIO`: a kill never leaves half a
    member checkpoint)."""
    settings = {k: cli.config.trainer.get(k) for k in TRAINER_KEYS}  # None too: a setting
    return L.Trainer(
        **settings,
        devices=1,
        plugins=[AtomicCheckpointIO()],
        logger=False,
        enable_checkpointing=True,  # MembersKeeper is the one Checkpoint: no default one
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=callbacks,
    )


class MemberCLI(LitSeqCLI):
    """A member's fit, parsed and built as its solo fit is, its book opened (its run folder
    claimed), but no Trainer: the population's trains and tests it."""

    def instantiate_trainer(self, **kwargs) -> None:
        # its dropout masks' seed, as its solo fit takes it: the seed torch was seeded with
        seed = run_seed(self.config)
        self.model.dropout_seed = torch.initial_seed() if seed is None else seed
        self.open_book()


def fit_population(member_args: list[list[str]]) -> list[FitResult | BaseException]:
    """Train the runs given by their fit arguments as one population; one result each.

    Raises BadInput (before anything trains) for a bad member config, and ValueError when
    the members cannot share a population (:func:`why_not_population`, :func:`population_key`).
    """
    clis: list[LitSeqCLI] = []
    try:
        for args in member_args:
            clis.append(build_cli(args, kind=MemberCLI))  # each locks its run folder
        _check_population(clis)
    except BaseException:
        for cli in clis:  # nothing trained: every folder is free again
            cli.book.lock.release()
        raise
    for cli in clis:  # each member's own build ends here; the pack's phases are shared
        cli.book.phases.leave("build")
    pack = PhaseClock()
    pack.enter("build")
    clip = clis[0].config.trainer.get("gradient_clip_val")
    compile_choice = clis[0].config.get("compile", "off")
    population = PopulationSystem([c.model for c in clis], clip, compile_choice=compile_choice)
    keeper = MembersKeeper(
        [c.book for c in clis],
        save=lambda k, path: trainer.strategy.checkpoint_io.save_checkpoint(
            member_checkpoint(trainer, population, k, keeper.books[k]), path
        ),
    )
    trainer = _trainer(clis[0], [keeper])
    population.on_validation = lambda k, scores: keeper.after_validation(
        k, scores, trainer.current_epoch
    )
    data = PopulationData([c.datamodule for c in clis])
    outcomes: list = [None] * len(clis)
    try:
        with keeper.signals.handling_signals():
            for cli in clis:
                print_header(cli, trainer)
                save_member_config(cli, trainer)
            pack.leave("build")
            pack.enter("train")
            try:
                trainer.fit(population, datamodule=data)
            finally:
                pack.leave("train")
                for k in range(len(clis)):  # its final weights (a stopped member's: its last)
                    population.sync_member(k)
            outcomes = list(keeper.errors)
            _test_and_record(trainer, population, data, clis, outcomes, pack)
    except (Exception, FitInterrupted) as err:  # every member not yet recorded fails with it
        outcomes = [o if isinstance(o, FitResult) else err for o in outcomes]
    finally:
        for cli, outcome in zip(clis, outcomes, strict=True):
            cli.book.finish(outcome)
    return outcomes


def _test_and_record(trainer, population, data, clis, outcomes: list, pack: PhaseClock) -> None:
    """Test the members that did not fail together, each on the weights its solo fit would
    score (its book's ``scored_checkpoint``; one pass over each test set for all), then
    record each as its solo fit, with its share of the ``pack``'s phases."""
    pack.enter("test")
    tested = [k for k, outcome in enumerate(outcomes) if outcome is None]
    for k in tested:
        member, book = population.members[k], clis[k].book
        draw = Drawing(book.run_dir, book.loggers, trainer.precision_plugin.convert_input)
        plot_attention(member, clis[k].datamodule, draw)  # what a solo fit's train end draws
        if scored := book.scored_checkpoint():  # what a solo fit's test loads
            saved = torch.load(scored, map_location="cpu", weights_only=True)
            member.load_state_dict(saved["state_dict"])
        member.prepare_tests(clis[k].datamodule)
        member.trainer = trainer  # its precision, for the scores after the test
    population.tested = tested
    if all(clis[k].book.scoring == "selection" for k in tested):  # as scored_test_sets
        trainer.test(population, dataloaders=data.test_dataloader()[:1], verbose=False)
    else:  # a member scored in full: one pass over every test set for all
        trainer.test(population, datamodule=data, verbose=False)
    pack.leave("test")
    share_phases(pack, [cli.book for cli in clis])
    for k in tested:
        cli, book = clis[k], clis[k].book
        try:
            draw = Drawing(book.run_dir, book.loggers, trainer.precision_plugin.convert_input)
            plot_confusion(population.members[k], cli.datamodule, draw)
            seconds, steps = book.timer.totals()
            trained = Trained(book.step, seconds, steps)
            outcomes[k] = record(cli, [population.test_results[k]], trained, trainer)
        except Exception as err:  # noqa: BLE001 - the member fails; the others are recorded
            outcomes[k] = err


def share_phases(pack: PhaseClock, books: list) -> None:
    """Give each of the K members' ``books`` 1/K of the ``pack``'s phases (its build, its
    training, its test). A member's checkpoint writes are its own clock's ``write``
    already, so they leave the pack's ``train`` (where they happened) first: the members'
    phases add up to the pack's, each second once. Their scoring after it (validation
    scores, range evaluation) is each member's own."""
    wall, cpu = pack.seconds()
    for book in books:
        own_wall, own_cpu = book.phases.seconds()
        wall["train"] -= own_wall["write"]
        cpu["train"] -= own_cpu["write"]
    for book in books:
        book.phases.add(wall, cpu, share=1 / len(books))


def _check_population(clis: list[LitSeqCLI]) -> None:
    for cli in clis:
        if why := why_not_population(cli):
            raise ValueError(f"{cli.book.run_dir}: cannot train in a population: {why}")
    first = population_key(clis[0])
    for cli in clis[1:]:
        key = population_key(cli)
        if key != first:
            diff = sorted(k for k in key if key[k] != first[k])
            raise ValueError(f"{cli.book.run_dir}: differs from {clis[0].book.run_dir} in {diff}")
