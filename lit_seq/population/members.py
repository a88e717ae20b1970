"""Each member of a population is still a run: its own book, called by the population's loop.

A member is built by the fit's own CLI from its own arguments, so it has the
:class:`~lit_seq.fit.book.RunBook` a solo fit has (run folder, lock, CSV log, W&B run,
target, checkpoint policy). :class:`MembersKeeper` is the population's one callback: it
hands each member's book what the shared loop did for that member, with the verbs a solo
fit's ``BookKeeper`` uses, so a member logs, checkpoints (``last.ckpt`` every
``checkpoint_every`` steps, the best by ``val/loss``), counts its target streak, meets the
divergence rule and stops at a signal exactly as its solo run would. A member that stops
(target, divergence) is no longer updated; the others go on.
"""

from __future__ import annotations

import contextlib

import lightning as L
import torch
from lightning.pytorch.callbacks import Checkpoint

from lit_seq.fit.book import BOOK_STATE_KEY, RunBook
from lit_seq.fit.checkpoints import LAST
from lit_seq.fit.keeper import validates_now
from lit_seq.fit.signals import SignalCatcher
from lit_seq.population.system import PopulationSystem, stacked_name


class MembersKeeper(Checkpoint):
    """The population's hooks, handed to every member's book that is still training.

    Args:
        books: the members' books, in row order.
        save: ``save(k, path)`` writes member k's checkpoint (solo format) to ``path``.

    ``errors[k]``: what member k failed with (its divergence), None while it has not.
    """

    def __init__(self, books: list[RunBook], save) -> None:
        self.books = books
        for k, book in enumerate(books):
            book.save = lambda path, k=k: save(k, path)
        self.done = [False] * len(books)  # stopped updating (target reached, diverged)
        self.errors: list[BaseException | None] = [None] * len(books)
        self.signals = SignalCatcher(lambda: (books[0].folder / LAST).is_file())
        self._training = self._in_step = False

    def active(self) -> list[RunBook]:
        return [book for book, done in zip(self.books, self.done, strict=True) if not done]

    def _saved(self, step: int) -> bool:
        return all(book.saved_step == step for book in self.active())

    def _save_active(self) -> None:
        for book in self.active():
            book.save_last()

    def on_train_start(self, trainer: L.Trainer, pl_module) -> None:
        for book in self.books:
            book.start()
        self.signals.start_training()
        self._training = True

    def on_train_batch_start(self, trainer: L.Trainer, pl_module, batch, batch_idx) -> None:
        self._in_step = True
        if self.signals.signum is not None and self._saved(trainer.global_step):
            self.signals.stop(trainer.global_step)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._in_step = False
        adam = pl_module.optimizer
        losses, steps = pl_module.last_losses.tolist(), adam.steps.tolist()  # one copy each
        validates = validates_now(trainer)
        every, last = trainer.log_every_n_steps, trainer.max_steps
        for k, book in enumerate(self.books):
            if self.done[k]:
                continue
            step = steps[k]
            if step % every == 0 or step == last:  # the steps a solo fit writes
                # the rate this step used (current_lrs is already the next step's)
                lr = adam.members[k].lr * adam.members[k].factor(step - 1)
                metrics = {"train/loss": losses[k], "lr": lr, "epoch": trainer.current_epoch}
                book.log(metrics, step=step - 1)
            book.after_step(step, losses[k], validates)
        if self.signals.signum is not None:
            self._save_active()

    def after_validation(self, k: int, scores: dict, epoch: int) -> bool:
        """Member ``k``'s validation ``scores``; True when it stops there."""
        book = self.books[k]
        book.log({**scores, "epoch": epoch}, step=book.step)
        try:
            stop = book.after_validation(scores)
        except FloatingPointError as err:  # the divergence rule: the member fails
            self.errors[k] = err
            book.timer.stop(book.step)
            self.done[k] = True
            return True
        if stop:
            book.end_training()
            self.done[k] = True
        return stop

    def on_validation_end(self, trainer: L.Trainer, pl_module) -> None:
        if self.signals.signum is not None and self._training:
            self._save_active()
            self.signals.stop(trainer.global_step)

    def on_train_end(self, trainer: L.Trainer, pl_module) -> None:
        self._training = self.signals.training = False
        for book in self.active():
            book.end_training()
        if self.signals.signum is not None:
            self._save_active()
            self.signals.stop(trainer.global_step)

    def on_exception(self, trainer: L.Trainer, pl_module, exception: BaseException) -> None:
        if self._training and not self._in_step and not isinstance(exception, FloatingPointError):
            with contextlib.suppress(Exception):  # the error being raised is the one to tell
                self._save_active()
        self._training = self.signals.training = False
        for book in self.active():
            book.timer.stop(book.step)


def member_checkpoint(
    trainer: L.Trainer, population: PopulationSystem, k: int, book: RunBook
) -> dict:
    """Member ``k``'s checkpoint in the solo format: its weights, hyperparameters, optimizer
    and schedule state (torch's Adam / AdamW and LambdaLR, as its solo fit saves them) and
    the loop's position with its own loader's."""
    member = population.sync_member(k)
    adam = population.optimizer
    steps = int(adam.steps[k])
    # the population's Trainer clips nothing itself (each member clips by its own norm):
    # the solo run's optimizer is the one of a run that clips by the population's clip_norm
    optimizer, schedule = member.build_optimizer(
        int(trainer.estimated_stepping_batches), clips=bool(population.clip_norm)
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
        "callbacks": {BOOK_STATE_KEY: book.state_dict()},  # what a solo fit's keeper saves
        "optimizer_states": [optimizer.state_dict()],
        "lr_schedulers": [schedule.state_dict()],
        "hparams_name": "kwargs",
        "hyper_parameters": dict(member.hparams),
    }
