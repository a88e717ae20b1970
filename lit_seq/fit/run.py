"""A fit's life once its CLI is built: header, fit, test the scored weights, record.

:func:`run` fits, tests the best checkpoint (``--score_weights last``: the final parameters)
on every test set, scores its validation set and its length curve, and writes
``metrics.json`` (:class:`lit_seq.record.FitResult`);
:func:`cli_main` is that from a list of arguments (what tests and grid workers call).
"""

from dataclasses import dataclass
from pathlib import Path

from lightning.pytorch import Trainer

from lit_seq.fit.callbacks import TrainTimer
from lit_seq.fit.checkpoints import CHECKPOINTS, LAST, EarlyLast
from lit_seq.fit.cli import LitSeqCLI, build_cli
from lit_seq.fit.header import fit_header
from lit_seq.fit.scoring import (
    context_floors,
    length_curve,
    longest_past_training,
    past_training_means,
    validation_scores,
)
from lit_seq.fit.signals import FitInterrupted
from lit_seq.fit.target import StopAtTarget
from lit_seq.fit.wandb_logger import GuardedWandbLogger
from lit_seq.record import FitResult, diverged_loss
from lit_seq.util.environment import fit_environment


def run(cli: LitSeqCLI) -> FitResult:
    """Fit, test the scored weights (all test sets), write and return the result.

    FitInterrupted (a SystemExit of status 143 or 130) on SIGTERM or SIGINT, after saving
    ``last.ckpt``; the run folder is unlocked on the way out, however it ends.
    """
    status, exit_code = "failed", 1  # what W&B is told unless the fit gets to its end
    print_header(cli)
    try:
        with cli.stop_on_signal.handling_signals():
            result = _fit_and_test(cli)
        status, exit_code = ("diverged", 1) if diverged_loss(result.metrics) else ("ok", 0)
        return result
    except FitInterrupted as err:
        status, exit_code = "interrupted", err.code
        raise
    except FloatingPointError:  # raised by the system when val/loss is not finite
        status = "diverged"
        raise
    finally:
        # also after a failure, so a later run in this process never logs into this one;
        # with a non-zero exit code, so that W&B shows the run as failed, not finished
        for logger in _wandb_loggers(cli.trainer):
            logger.update_summary(_summary(cli.trainer, status))
            logger.finish(exit_code=exit_code)
        cli.run_lock.release()


def print_header(cli: LitSeqCLI) -> None:
    """What the fit is about to do, in a few lines (see ``fit_header``)."""
    wandb = _wandb_loggers(cli.trainer)
    if wandb:
        path = wandb[0].run_path()  # the offline folder, or entity/project/id online
        offline = cli.wandb_mode == "offline" or cli.wandb_error
        where = f"offline, upload later with: wandb sync {path}" if offline else f"online {path}"
    else:
        where = f"off ({cli.wandb_error})" if cli.wandb_error else "off"
    resumed = cli.resume.step if cli.resume else None
    lines = fit_header(
        str(cli.run_dir),
        resumed_step=resumed,
        system=cli.model,
        datamodule=cli.datamodule,
        trainer=cli.trainer,
        wandb=where,
        notes=cli.notes,
        seeds=cli.seeds,
    )
    print("\n".join(lines), flush=True)


def _summary(trainer: Trainer, status: str) -> dict:
    """What the W&B runs table shows of a fit however it ended: status, steps and speed."""
    timer = next(c for c in trainer.callbacks if isinstance(c, TrainTimer))
    seconds, steps = timer.totals()
    batch_size = getattr(trainer.datamodule, "train_batch_size", 0)  # the real batch
    return {
        "status": status,
        "steps": trainer.global_step,
        "train_seconds": round(seconds, 3),
        "samples_per_second": round(steps * batch_size / max(seconds, 1e-9), 1),
    }


def _wandb_loggers(trainer: Trainer) -> list[GuardedWandbLogger]:
    return [lg for lg in trainer.loggers if isinstance(lg, GuardedWandbLogger)]


def _fit_and_test(cli: LitSeqCLI) -> FitResult:
    trainer, model, datamodule = cli.trainer, cli.model, cli.datamodule
    resume = str(cli.resume.path) if cli.resume else None
    trainer.fit(model, datamodule=datamodule, ckpt_path=resume, weights_only=True)
    timer = next(c for c in trainer.callbacks if isinstance(c, TrainTimer))
    best = trainer.checkpoint_callback.best_model_path if trainer.checkpoint_callback else ""
    last = Path(cli.run_dir) / CHECKPOINTS / LAST
    if cli.config.score_weights == "last":  # last.ckpt: the final parameters, whatever the step
        next(c for c in trainer.callbacks if isinstance(c, EarlyLast)).save_final(trainer)
    trained = Trained(trainer.global_step, timer.seconds, timer.steps)
    return test_and_record(cli, best, trained, last=str(last))


@dataclass(frozen=True)
class Trained:
    """How much a fit trained: optimizer steps, training seconds, steps those seconds timed."""

    steps: int
    seconds: float
    timed_steps: int


def test_and_record(cli: LitSeqCLI, best: str, trained: Trained, last: str) -> FitResult:
    """Test the scored weights on every test set, score them, write the record.

    What ends every fit, solo or a population's member (``lit_seq.population``). The
    scored weights are checkpoint ``best`` with ``--score_weights best``, else checkpoint
    ``last``, which then holds the final parameters.
    """
    model, datamodule = cli.model, cli.datamodule
    scored = best if cli.config.score_weights == "best" else last
    tested = cli.trainer.test(
        model, datamodule=datamodule, ckpt_path=scored or None, verbose=False, weights_only=True
    )
    # the tested weights: their validation scores (what a grid selects on) and length curve
    val_metrics = validation_scores(model, datamodule)
    curve = length_curve(model, datamodule, cli.range_eval)
    result = fit_result(
        cli, tested=tested, val_metrics=val_metrics, curve=curve, trained=trained, best=best
    )
    result.write(cli.run_dir)
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
    best: str,
) -> FitResult:
    """The record of a finished fit: what it trained, how long, every score, and where."""
    trainer, model, datamodule = cli.trainer, cli.model, cli.datamodule
    wandb = _wandb_loggers(trainer)
    stopper = next((c for c in trainer.callbacks if isinstance(c, StopAtTarget)), None)
    reached = stopper.reached if stopper else None
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
        best_checkpoint=best,
        score_weights=cli.config.score_weights,
        last_checkpoint=str(Path(cli.run_dir) / CHECKPOINTS / LAST),
        run_dir=str(cli.run_dir),
        wandb_run=wandb[0].run_path() if wandb else "",
        wandb_error=cli.wandb_error or (wandb[0].error if wandb else ""),
        metrics={k: float(v) for result in tested for k, v in result.items()}
        | past_training_means(curve, datamodule.train_length),
        val_metrics={k: round(v, 6) for k, v in val_metrics.items()},
        target=cli.target.describe(),
        target_reached=None if stopper is None else reached is not None,
        target_step=reached[0] if reached else None,
        target_seconds=reached[1] if reached else None,
        curve=curve,
        range_ood_longest=longest_past_training(curve, datamodule.train_length),
        chance=model.chance_level,
        context_floor=context_floors(datamodule, curve),
        **cli.seeds,
        **fit_environment(trainer.strategy.root_device, trainer.precision),
    )
