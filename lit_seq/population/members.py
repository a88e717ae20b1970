"""Each member of a population is still a run: its folder, logs, checkpoints, W&B and record.

A member is built by the fit's own CLI from its own arguments (``lit_seq.fit.build_cli``):
the same run folder (locked), config.yaml, CSV log and W&B run a solo fit gets. The
population trains it; :class:`MemberRun` does with its scores what a solo fit's callbacks
do: logs ``train/loss`` and ``lr`` on the steps a solo fit writes them and every
validation's scores, keeps the checkpoint of the lowest ``val/loss`` and ``last.ckpt`` in
the solo format, counts its target streak, and stops it when the target holds or its
validation loss is not finite (diverged: a failed member). At the end the member is tested
and recorded by the solo fit's own code (``lit_seq.fit.run.test_and_record``).
"""

from __future__ import annotations

import math
from pathlib import Path

from lightning.pytorch.cli import SaveConfigCallback
from lightning.pytorch.loggers import CSVLogger

from lit_seq.fit.callbacks import AttentionMapLogger
from lit_seq.fit.checkpoints import CHECKPOINTS, LAST
from lit_seq.fit.cli import LitSeqCLI
from lit_seq.fit.run import Trained, print_header, test_and_record
from lit_seq.fit.target import StopAtTarget
from lit_seq.fit.wandb_logger import GuardedWandbLogger
from lit_seq.record import FitResult, diverged_loss
from lit_seq.systems.base import divergence


class MemberRun:
    """The run of one member of a population: its bookkeeping from scores to record.

    Args:
        cli: the member's fit, built (not run) by ``lit_seq.fit.build_cli``.
        save: writes the member's checkpoint (solo format) to a path: ``save(path)``.
    """

    def __init__(self, cli: LitSeqCLI, save) -> None:
        self.cli = cli
        self._save = save
        self.folder = Path(cli.run_dir) / CHECKPOINTS
        self.best_score = math.inf
        self.best_path = ""
        self.stopper = next((c for c in cli.trainer.callbacks if isinstance(c, StopAtTarget)), None)
        self.error = ""  # why it failed ("" while it has not)
        self.steps = 0
        self.seconds = 0.0
        self.last_train_loss: float | None = None
        self.done = False  # stopped updating before the population ended (target, divergence)

    def start(self) -> None:
        """The header a solo fit prints, and config.yaml written as a solo fit writes it."""
        print_header(self.cli)
        for callback in self.cli.trainer.callbacks:
            if isinstance(callback, SaveConfigCallback):
                callback.setup(self.cli.trainer, self.cli.model, stage="fit")

    def save(self, path: Path) -> None:
        """Write the member's checkpoint to ``path``, its CSV rows first: a resume keeps the
        rows of the steps before its checkpoint (what ``ResumeState`` does for a solo fit)."""
        for logger in self.cli.trainer.loggers:
            if isinstance(logger, CSVLogger):
                logger.save()
        self._save(path)

    def log(self, metrics: dict, step: int) -> None:
        for logger in self.cli.trainer.loggers:
            logger.log_metrics(metrics, step=step)

    def on_train_step(self, step: int, epoch: int, loss: float, lr: float, seconds: float):
        """After optimizer step ``step`` (1-based: steps taken): log on a solo fit's steps."""
        self.steps, self.seconds = step, seconds
        self.last_train_loss = loss
        member = self.cli.model  # its divergence bound, kept (and saved) as a solo fit keeps it
        if member.first_train_loss is None:
            member.first_train_loss = loss
        every, last = self.cli.trainer.log_every_n_steps, self.cli.trainer.max_steps
        if step % every == 0 or step == last:
            self.log({"train/loss": loss, "lr": lr, "epoch": epoch}, step=step - 1)

    def on_validation(self, step: int, epoch: int, seconds: float, scores: dict) -> bool:
        """This validation's scores; True when the member stops here."""
        self.log({**scores, "epoch": epoch}, step=step)
        # the rule and the words of a solo fit (SequenceSystem.on_validation_epoch_end)
        member = self.cli.model
        losses = {"val/loss": scores["val/loss"], "train/loss": self.last_train_loss}
        for name, loss in losses.items():
            if loss is not None and (why := divergence(loss, member.first_train_loss)):
                self.error = f"{name} {why} at step {step}: training diverged"
                self.done = True
                return True
        val_loss = scores["val/loss"]
        if val_loss < self.best_score:  # ModelCheckpoint(monitor=val/loss, mode=min), top 1
            path = self.folder / f"best-step={step}.ckpt"
            self.save(path)
            if self.best_path and Path(self.best_path) != path:
                Path(self.best_path).unlink(missing_ok=True)
            self.best_score, self.best_path = val_loss, str(path)
        self.save(self.folder / LAST)
        stopper = self.stopper
        value = scores.get(stopper.target.metric) if stopper else None
        if stopper is not None and stopper.observe(value, step, seconds):
            self.done = True
            return True
        return False

    def finish(self, failure: BaseException | None = None) -> FitResult | BaseException:
        """Test and record the member (or record why it failed); unlock its folder."""
        status, exit_code, outcome = "failed", 1, failure
        try:
            if failure is None and not self.error:
                self.save(self.folder / LAST)
                for callback in self.cli.trainer.callbacks:  # what a solo fit's train end draws
                    if isinstance(callback, AttentionMapLogger):
                        callback.plot(self.cli.trainer, self.cli.model, self.cli.datamodule)
                trained = Trained(self.steps, self.seconds, self.steps)
                last = str(self.folder / LAST)  # just saved: the final parameters
                outcome = test_and_record(self.cli, self.best_path, trained, last=last)
                status, exit_code = ("diverged", 1) if diverged_loss(outcome.metrics) else ("ok", 0)
            elif failure is None:
                outcome = FloatingPointError(self.error)
                status = "diverged"
        except Exception as err:  # noqa: BLE001 - the member fails; the others are recorded
            outcome = err
        finally:
            for logger in self.cli.trainer.loggers:
                if isinstance(logger, GuardedWandbLogger):
                    logger.update_summary({"status": status, "steps": self.steps})
                    logger.finish(exit_code=exit_code)
            self.cli.run_lock.release()
        return outcome
