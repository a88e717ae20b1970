"""A fit's life once its CLI is built: header, fit, test the scored weights, record.

:func:`run` fits, tests the best checkpoint (``--score_weights last``: the final parameters)
on every test set, scores its validation set and its length curve, and writes
``metrics.json`` (:class:`lit_seq.record.FitResult`, with the seconds of each phase:
``lit_seq.fit.phases``); with ``--scoring selection`` (a grid's selection run) only the
test set at the training length and no length curve;
:func:`cli_main` is that from a list of arguments (what tests and grid workers call).
"""

from dataclasses import dataclass

from lightning.pytorch import Trainer

from lit_seq.fit.checkpoints import CHECKPOINTS, LAST
from lit_seq.fit.cli import LitSeqCLI, build_cli
from lit_seq.fit.header import fit_header
from lit_seq.fit.scoring import (
    context_floors,
    length_curve,
    longest_past_training,
    past_training_means,
    validation_scores,
)
from lit_seq.record import FitResult
from lit_seq.util.environment import fit_environment


def run(cli: LitSeqCLI) -> FitResult:
    """Fit, test the scored weights (all test sets), write and return the result.

    FitInterrupted (a SystemExit of status 143 or 130) on SIGTERM or SIGINT, after saving
    ``last.ckpt``; the run folder is unlocked on the way out, however it ends.
    """
    book = cli.book
    outcome: FitResult | BaseException = RuntimeError("the fit did not end")
    print_header(cli)
    try:
        with cli.keeper.signals.handling_signals():
            outcome = _fit_and_test(cli)
        return outcome
    except BaseException as err:
        outcome = err
        raise
    finally:
        book.finish(outcome)


def print_header(cli: LitSeqCLI, trainer: Trainer | None = None) -> None:
    """What the fit is about to do, in a few lines (see ``fit_header``); ``trainer``: the
    one that trains it (default: its own)."""
    book = cli.book
    if book.wandb is not None:
        path = book.wandb.run_path()  # the offline folder, or entity/project/id online
        offline = cli.wandb_mode == "offline" or book.wandb_note
        where = f"offline, upload later with: wandb sync {path}" if offline else f"online {path}"
    else:
        where = f"off ({book.wandb_note})" if book.wandb_note else "off"
    lines = fit_header(
        str(book.run_dir),
        resumed_step=book.resume.step if book.resume else None,
        system=cli.model,
        datamodule=cli.datamodule,
        trainer=trainer or cli.trainer,
        wandb=where,
        notes=cli.notes,
        seeds=cli.seeds,
        compile_choice=cli.config.get("compile", "off"),
    )
    print("\n".join(lines), flush=True)


def _fit_and_test(cli: LitSeqCLI) -> FitResult:
    trainer, model, datamodule, book = cli.trainer, cli.model, cli.datamodule, cli.book
    resume = str(book.resume.path) if book.resume else None
    trainer.fit(model, datamodule=datamodule, ckpt_path=resume, weights_only=True)
    seconds, steps = book.timer.totals()
    return test_and_record(cli, book.scored_checkpoint(), Trained(book.step, seconds, steps))


@dataclass(frozen=True)
class Trained:
    """How much a fit trained: optimizer steps, training seconds, steps those seconds timed."""

    steps: int
    seconds: float
    timed_steps: int


def test_and_record(cli: LitSeqCLI, scored: str, trained: Trained) -> FitResult:
    """Test the weights of checkpoint ``scored`` (the book's ``scored_checkpoint``: the best
    one, or ``last.ckpt`` with ``--score_weights last``) on every test set, score them,
    write the record."""
    with cli.book.phases.timing("test"):
        tested = cli.trainer.test(
            cli.model, ckpt_path=scored or None, verbose=False, weights_only=True,
            **scored_test_sets(cli),
        )  # fmt: skip
    return record(cli, tested, trained, cli.trainer)


def scored_test_sets(cli: LitSeqCLI) -> dict:
    """What ``trainer.test`` tests: the data module (every test set), or with ``--scoring
    selection`` the loader of its first test set alone (the one at the training length,
    ``test/*``: its loss still tells a diverged run); a selection run is read for its
    validation scores only, and the longer test sets are most of a test's cost."""
    if cli.book.scoring == "selection":
        return {"dataloaders": cli.datamodule.test_dataloader()[:1]}
    return {"datamodule": cli.datamodule}


def record(cli: LitSeqCLI, tested: list[dict], trained: Trained, trainer: Trainer) -> FitResult:
    """Score the tested weights (``tested``: their test results), write and return the record.

    What ends every fit, solo or a population's member (``lit_seq.population``, whose
    ``trainer`` is the population's).
    """
    model, datamodule, book = cli.model, cli.datamodule, cli.book
    # the tested weights: their validation scores (what a grid selects on) and length curve
    with book.phases.timing("val"):
        val_metrics = validation_scores(model, datamodule)
    curve = {}
    if book.scoring == "full":  # a selection run is read for its validation scores alone
        with book.phases.timing("range_eval"):
            curve = length_curve(model, datamodule, book.range_eval)
    result = fit_result(cli, tested, val_metrics, curve, trained, trainer)
    result.write(book.run_dir)
    return result


def cli_main(args: list[str] | None = None) -> FitResult:
    """Build from ``args`` and run; what tests and the grid workers call in-process."""
    return run(build_cli(args))


def fit_result(
    cli: LitSeqCLI,
    tested: list[dict],
    val_metrics: dict,
    curve: dict,
    trained: Trained,
    trainer: Trainer,
) -> FitResult:
    """The record of a finished fit: what it trained, how long, every score, and where."""
    model, datamodule, book = cli.model, cli.datamodule, cli.book
    reached = book.reached
    wall, cpu = book.phases.seconds()
    return FitResult(
        task=datamodule.name,
        arch=model.arch_name,
        system=type(model).__name__,
        main_metric=model.main_metric,
        params=model.num_parameters,
        train_length=datamodule.train_length,
        steps=trained.steps,
        train_seconds=round(trained.seconds, 3),
        samples_per_second=round(
            trained.timed_steps * datamodule.train_batch_size / max(trained.seconds, 1e-9), 1
        ),
        best_checkpoint=book.best_path,
        score_weights=book.score_weights,
        last_checkpoint=str(book.run_dir / CHECKPOINTS / LAST),
        run_dir=str(book.run_dir),
        wandb_run=book.wandb.run_path() if book.wandb else "",
        wandb_error=book.wandb_error,
        metrics={k: float(v) for result in tested for k, v in result.items()}
        | past_training_means(curve, datamodule.train_length),
        val_metrics={k: round(v, 6) for k, v in val_metrics.items()},
        target=book.target.describe(),
        target_reached=None if book.streak is None else reached is not None,
        target_step=reached[0] if reached else None,
        target_seconds=reached[1] if reached else None,
        curve=curve,
        range_ood_longest=longest_past_training(curve, datamodule.train_length),
        chance=model.chance_level,
        context_floor=context_floors(datamodule, curve),
        phase_seconds=wall,
        phase_cpu_seconds=cpu,
        scoring=book.scoring,
        **cli.seeds,
        **fit_environment(trainer.strategy.root_device, trainer.precision),
    )
