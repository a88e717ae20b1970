"""A run's bookkeeping as one object: what a fit keeps besides its weights, and its rules.

A :class:`RunBook` owns one run's folder (locked for the run's life), the checkpoint it
resumes from, its loggers (``metrics.csv`` and W&B), its training timer, its target streak,
the divergence rule and the checkpoint policy, and it ends the run. The loop that trains
tells it what happened, and the book decides what is kept:

- :meth:`RunBook.after_step`: ``last.ckpt`` every ``checkpoint_every`` optimizer steps
  (unless a validation follows, whose checkpoint comes after it);
- :meth:`RunBook.after_validation`: the divergence rule (``FloatingPointError``), the target
  streak, the checkpoint of the lowest ``val/loss`` (``best-step=N.ckpt``, one kept) and
  ``last.ckpt``; True when the target holds and the run is to stop;
- :meth:`RunBook.scored_checkpoint`: after training, what the record scores (the best
  checkpoint, or ``last.ckpt`` of the final step with ``--score_weights last``);
- :meth:`RunBook.finish`: the W&B run told how the run ended (ok, diverged, interrupted,
  failed) with its exit code, and the folder unlocked.

A solo fit plugs its book into Lightning through one callback (``fit.keeper.BookKeeper``);
a population calls each member's book itself (``lit_seq.population``). Both therefore keep
the same files at the same steps and tell W&B the same things. The book's state (timer,
streak, best checkpoint, first training loss) is saved in every checkpoint and restored
from it (:meth:`state_dict`), so a resumed run counts on where it stopped.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from pathlib import Path

from lit_seq.fit.checkpoints import CHECKPOINTS, LAST, Resume, discard_partial_writes
from lit_seq.fit.csv_log import RunCSVLogger
from lit_seq.fit.input_checks import check_goals
from lit_seq.fit.phases import PhaseClock
from lit_seq.fit.run_folder import check_not_in_use, check_run, lock_run_dir, run_dir_path
from lit_seq.fit.scoring import RangeEval
from lit_seq.fit.signals import FitInterrupted
from lit_seq.fit.target import StopAtTarget, Target
from lit_seq.fit.wandb_logger import GuardedWandbLogger, start_run_wandb
from lit_seq.fit.wandb_options import WandbOptions
from lit_seq.record import FitResult, diverged_loss
from lit_seq.systems.base import divergence

BOOK_STATE_KEY = "RunBook"  # the book's entry in a checkpoint's ``callbacks``


class Timer:
    """Wall seconds and optimizer steps of the training behind the run's weights.

    A resumed run adds its own to those of the sessions before it, as of the checkpoint it
    resumed from (the work redone after a kill is timed once, in the session that kept it).
    """

    def __init__(self) -> None:
        self._carried = (0.0, 0)  # (seconds, steps) of the sessions before this one
        self._start_time: float | None = None
        self._start_step = self._step = 0

    def start(self, step: int) -> None:
        self._start_time = time.perf_counter()
        self._start_step = self._step = step

    def tick(self, step: int) -> None:
        self._step = step

    def stop(self, step: int) -> None:
        """Training ended at ``step``: the totals stop counting."""
        if self._start_time is not None:
            self._step = step
            self._carried = self.totals()
            self._start_time = None

    def elapsed(self) -> float:
        """Training seconds so far, sessions before this one included."""
        return self.totals()[0]

    def totals(self) -> tuple[float, int]:
        seconds, steps = self._carried
        if self._start_time is not None:
            seconds += time.perf_counter() - self._start_time
            steps += self._step - self._start_step
        return seconds, steps

    def state_dict(self) -> dict:
        seconds, steps = self.totals()
        return {"seconds": seconds, "steps": steps}

    def load_state_dict(self, state: dict) -> None:
        self._carried = (float(state["seconds"]), int(state["steps"]))


def outcome_status(outcome: FitResult | BaseException) -> tuple[str, int]:
    """(W&B status, exit code) of a run that ended with ``outcome``, solo or a member."""
    if isinstance(outcome, FitInterrupted):
        return "interrupted", int(outcome.code)
    if isinstance(outcome, FloatingPointError):  # the divergence rule
        return "diverged", 1
    if isinstance(outcome, FitResult):  # finite in training, maybe not on a test set
        return ("diverged", 1) if diverged_loss(outcome.metrics) else ("ok", 0)
    return "failed", 1


class RunBook:
    """The bookkeeping of one run (see the module's docstring); :meth:`open` makes one.

    ``save`` is set by whatever trains the run: it writes the run's checkpoint to a path
    (a solo fit: its Trainer's; a population: the member's, in the solo format).
    """

    def __init__(
        self,
        run_dir: Path,
        lock,
        resume: Resume | None,
        loggers: list,
        wandb_note: str,
        target: Target,
        range_eval: RangeEval,
        checkpoint_every: int,
        batch_size: int,
        log_model: bool = False,
    ) -> None:
        self.run_dir, self.lock, self.resume = Path(run_dir), lock, resume
        self.loggers, self.wandb_note = loggers, wandb_note
        self.target, self.range_eval = target, range_eval
        self.checkpoint_every, self.batch_size, self.log_model = (
            checkpoint_every,
            batch_size,
            log_model,
        )
        self.save: Callable[[Path], None] | None = None
        self.timer = Timer()
        self.streak = StopAtTarget(target) if target.metric is not None else None
        self.step = resume.step if resume else 0  # optimizer steps taken
        self.first_loss: float | None = None  # what the divergence rule compares with
        self._last_loss = None  # the latest training loss (a tensor: no sync per step)
        self.best_score, self.best_name = math.inf, ""
        self.saved_step = -1  # the step of the newest checkpoint saved in this session
        self.score_weights = "best"  # what the record scores: the best checkpoint or the last
        self.scoring = "full"  # --scoring: every test set and the range, or selection's needs
        self.phases = PhaseClock()  # wall and CPU seconds by phase, for the record

    @classmethod
    def open(
        cls, config, datamodule, model, wandb_mode: str, wandb: WandbOptions, seeds: dict
    ) -> RunBook:
        """Check the config against the built ``model`` and the run folder (reading only: a
        refusal changes nothing), then claim the folder and start the loggers (W&B by
        ``wandb``, its config naming the run's ``seeds``). BadInput on a refusal; the folder
        is free again if anything after the claim fails."""
        target, range_eval = check_goals(config, model)
        run_dir = run_dir_path(config, datamodule.name, model.arch_name)
        check_not_in_use(run_dir)
        check_run(config, run_dir, model)
        lock = lock_run_dir(run_dir)  # one run folder, one fit: held until finish()
        try:
            # again, now that no other fit can change the folder; half-written files go
            resume = check_run(config, run_dir, model, announce=True)
            discard_partial_writes(run_dir)
            csv = RunCSVLogger(run_dir, resume.step if resume else None)
            logger, note = start_run_wandb(
                wandb, wandb_mode, run_dir, model, resuming=resume is not None, seeds=seeds
            )
        except BaseException:
            lock.release()
            raise
        loggers = [csv] if logger is None else [csv, logger]
        checkpoint_every = config.checkpoint_every
        batch_size = datamodule.train_batch_size
        book = cls(
            run_dir, lock, resume, loggers, note, target, range_eval, checkpoint_every,
            batch_size, bool(wandb.log_model),
        )  # fmt: skip
        book.score_weights = config.score_weights
        book.scoring = config.scoring
        return book

    # -- where things are ----------------------------------------------------------------

    @property
    def folder(self) -> Path:
        return self.run_dir / CHECKPOINTS

    @property
    def best_path(self) -> str:
        """The checkpoint of the lowest ``val/loss`` so far; "" before the first validation."""
        return str(self.folder / self.best_name) if self.best_name else ""

    @property
    def wandb(self) -> GuardedWandbLogger | None:
        return next((lg for lg in self.loggers if isinstance(lg, GuardedWandbLogger)), None)

    @property
    def wandb_error(self) -> str:
        """What went wrong with W&B, if anything: at its start, or later."""
        return self.wandb_note or (self.wandb.error if self.wandb else "")

    @property
    def reached(self) -> tuple[int, float] | None:
        return self.streak.reached if self.streak else None

    # -- the verbs of training -----------------------------------------------------------

    def start(self) -> None:
        """Training starts (or resumes) at :attr:`step`."""
        self.timer.start(self.step)

    def log(self, metrics: dict, step: int) -> None:
        for logger in self.loggers:
            logger.log_metrics(metrics, step=step)

    def after_step(self, step: int, loss, validates_next: bool) -> None:
        """Optimizer step ``step`` (steps taken) ended with training ``loss`` (a tensor or a
        float); ``validates_next``: a validation follows, which keeps its own checkpoint."""
        self.step = step
        self.timer.tick(step)
        if self.first_loss is None:
            self.first_loss = float(loss)  # one wait for the device, once
        self._last_loss = loss
        if step % self.checkpoint_every == 0 and not validates_next:
            self.save_last()

    def after_validation(self, scores: dict) -> bool:
        """The validation at :attr:`step` scored ``scores`` (``val/loss``, ...): raise
        FloatingPointError if training diverged, else keep its checkpoints; True when the
        target holds now and the run is to stop."""
        losses = {"val/loss": scores.get("val/loss"), "train/loss": self._last_loss}
        for name, loss in losses.items():
            if loss is not None and (why := divergence(float(loss), self.first_loss)):
                raise FloatingPointError(f"{name} {why} at step {self.step}: training diverged")
        stop = False
        if self.streak is not None:
            value = scores.get(self.target.metric)
            value = None if value is None else float(value)
            stop = self.streak.observe(value, self.step, self.timer.elapsed())
        val_loss = scores.get("val/loss")
        if val_loss is not None and (not self.best_name or float(val_loss) < self.best_score):
            old = self.best_path
            self.best_score, self.best_name = float(val_loss), f"best-step={self.step}.ckpt"
            self._write(self.folder / self.best_name)  # its state names itself the best
            # the one it resumed from stays, as Lightning keeps it: a resume may be repeated
            resumed = self.resume is not None and Path(old).resolve() == self.resume.path.resolve()
            if old and old != self.best_path and not resumed:
                Path(old).unlink(missing_ok=True)
        self._write(self.folder / LAST)
        return stop

    def save_last(self) -> None:
        """Save ``last.ckpt`` of this step unless a checkpoint of it is saved already (at a
        signal, on an error between steps)."""
        if self.step > 0 and self.saved_step != self.step:
            self._write(self.folder / LAST)

    def scored_checkpoint(self) -> str:
        """The checkpoint a fit's record scores, after training: ``best_path`` with
        ``--score_weights best``; with ``last``, ``last.ckpt`` of the final step (saved now
        unless a checkpoint of that step is saved already: the final parameters)."""
        if self.score_weights == "last":
            self.save_last()
            return str(self.folder / LAST)
        return self.best_path

    def end_training(self) -> None:
        """Training stopped (at its end, its target or a divergence): the timer stops, the
        training rows are written to ``metrics.csv`` (those after the last checkpoint too),
        and ``last.ckpt`` is saved unless this session saved a checkpoint already."""
        self.timer.stop(self.step)
        self._save_csv()
        if self.saved_step < 0:
            self.save_last()

    def _save_csv(self) -> None:
        with self.phases.timing("write"):
            for logger in self.loggers:
                if isinstance(logger, RunCSVLogger):
                    logger.save()

    def _write(self, path: Path) -> None:
        self._save_csv()  # the CSV rows first: a resume keeps the rows before its checkpoint
        assert self.save is not None, "nothing trains this run: no save"
        with self.phases.timing("write"):
            self.save(path)
        self.saved_step = self.step

    # -- the end ------------------------------------------------------------------------

    def summary(self, status: str) -> dict:
        """What the W&B runs table shows of a run however it ended: status, steps, speed."""
        seconds, steps = self.timer.totals()
        return {
            "status": status,
            "steps": self.step,
            "train_seconds": round(seconds, 3),
            "samples_per_second": round(steps * self.batch_size / max(seconds, 1e-9), 1),
        }

    def finish(self, outcome: FitResult | BaseException) -> None:
        """Tell W&B how the run ended (``outcome``: its record, or what it failed with) and
        unlock its folder. Also after a failure, so that a later run in this process never
        logs into this one; a non-zero exit code makes W&B show the run as failed."""
        status, exit_code = outcome_status(outcome)
        try:
            if (wandb := self.wandb) is not None:
                wandb.update_summary(self.summary(status))
                if self.log_model and status == "ok":
                    wandb.log_checkpoints({"best": self.best_path, "latest": self.folder / LAST})
                wandb.finish(exit_code=exit_code)
        finally:
            self.lock.release()

    # -- what a checkpoint keeps of the book ---------------------------------------------

    def state_dict(self) -> dict:
        return {
            "timer": self.timer.state_dict(),
            "target": self.streak.state_dict() if self.streak else None,
            "first_train_loss": self.first_loss,
            "best": {"score": self.best_score, "name": self.best_name},
        }

    def load_state_dict(self, state: dict) -> None:
        self.timer.load_state_dict(state["timer"])
        if self.streak is not None and state.get("target") is not None:
            self.streak.load_state_dict(state["target"])
        self.first_loss = state.get("first_train_loss")
        best = state.get("best") or {}
        with contextlib.suppress(TypeError, ValueError):
            self.best_score = float(best.get("score", math.inf))
        # a file name, so a run folder that was moved keeps its best checkpoint
        self.best_name = Path(best.get("name") or "").name
