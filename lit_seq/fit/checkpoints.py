"""Checkpoints a fit resumes from exactly, written so that a kill never spoils one.

- :class:`AtomicCheckpointIO` writes every checkpoint beside its target, fsyncs it and
  renames it into place (then fsyncs the folder): a reader, a resume included, finds the
  old file or the new one, never half of one, on any local filesystem. Loads are
  ``weights_only`` (tensors and plain values, no code unpickled).
- :func:`read_checkpoint`, :func:`check_fits` and :func:`resume_checkpoint` are what a fit
  checks before it resumes: the file is there, is a training checkpoint, fits the model; a
  run's unreadable ``last.ckpt`` gives way to its newest readable checkpoint.
- :class:`ResumeState` saves what Lightning's checkpoint leaves out of an exact resume, the
  RNG states, and flushes the CSV log first, so every row logged before a checkpoint is on
  disk whenever the checkpoint is (``lit_seq.fit.csv_log`` continues that log on resume instead
  of deleting it); :class:`RunCheckpoint` is a ModelCheckpoint whose state follows a run
  folder that was moved.

Errors are :class:`CheckpointError`, one line naming the file and what is wrong with it.
"""

import contextlib
import io
import os
import random
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import numpy as np
import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger

from lit_seq.util.errors import error_line
from lit_seq.util.io import atomic_write_bytes

CHECKPOINTS = "checkpoints"  # in a run folder
LAST = "last.ckpt"
# what a checkpoint needs to continue training (a weights-only one holds state_dict alone)
TRAINING_KEYS = ("state_dict", "global_step", "loops", "optimizer_states")


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed from, as one line naming the file."""


# ---- writing and loading ---------------------------------------------------------------


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (filesystems that cannot fsync a folder: skipped)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class AtomicCheckpointIO(TorchCheckpointIO):
    """``torch.save`` to a temp file beside the target, fsync, rename; ``weights_only`` loads.

    Lightning's own write goes through an fsspec transaction, which for a local path writes
    a temp file in the system's temp folder and moves it into place without an fsync: a
    copy, not a rename, when that is another filesystem, so a kill mid-copy (or a crash
    before the data reached the disk) can leave a truncated checkpoint.
    """

    def save_checkpoint(self, checkpoint: dict, path, storage_options=None) -> None:
        if storage_options is not None:
            raise TypeError(f"{type(self).__name__} takes no storage_options")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        # serialised first, as Lightning does: a full disk is then an OSError (ENOSPC) of the
        # write, not torch's "PytorchStreamWriter failed"
        data = io.BytesIO()
        torch.save(checkpoint, data)
        atomic_write_bytes(path, data.getbuffer())
        _fsync_folder(path.parent)

    def load_checkpoint(self, path, map_location=None, weights_only: bool | None = True) -> dict:
        return super().load_checkpoint(
            path,
            map_location=map_location or (lambda storage, loc: storage),
            weights_only=True if weights_only is None else weights_only,
        )


def discard_partial_writes(run_dir: Path) -> None:
    """Delete the temp files of checkpoint writes that a kill cut short."""
    for stale in Path(run_dir, CHECKPOINTS).glob(".*.tmp"):
        stale.unlink(missing_ok=True)


def read_checkpoint(path: Path) -> dict:
    """The training checkpoint at ``path`` (tensors and plain values only); else CheckpointError."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"ckpt_path={str(path)!r} does not exist")
    if not path.is_file():
        raise CheckpointError(f"ckpt_path={str(path)!r} is not a file")
    if path.stat().st_size == 0:
        raise CheckpointError(f"ckpt_path={str(path)!r} is not a checkpoint: the file is empty")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch names no common type: zip, pickle, EOF, size errors
        reason = error_line(err, limit=160)  # "KeyError: 101" says more than "101"
        raise CheckpointError(
            f"ckpt_path={str(path)!r} is not a readable checkpoint ({reason})"
        ) from None
    missing = [k for k in TRAINING_KEYS if not isinstance(checkpoint, dict) or k not in checkpoint]
    if missing:
        raise CheckpointError(
            f"ckpt_path={str(path)!r} is not a training checkpoint of lit_seq.fit "
            f"(no {', '.join(missing)})"
        )
    return checkpoint


def _names(keys: list[str], limit: int = 3) -> str:
    more = f" (+{len(keys) - limit} more)" if len(keys) > limit else ""
    return ", ".join(keys[:limit]) + more


def check_fits(checkpoint: dict, model: torch.nn.Module, path: Path) -> None:
    """CheckpointError naming the parameters that differ unless ``checkpoint`` fits ``model``."""
    theirs, ours = checkpoint["state_dict"], model.state_dict()
    missing = [k for k in ours if k not in theirs]
    unexpected = [k for k in theirs if k not in ours]
    reshaped = [
        f"{k} {tuple(theirs[k].shape)} there, {tuple(ours[k].shape)} here"
        for k in ours
        if k in theirs and tuple(getattr(theirs[k], "shape", ())) != tuple(ours[k].shape)
    ]
    problems = []
    if missing:
        problems.append(f"missing {_names(missing)}")
    if unexpected:
        problems.append(f"unexpected {_names(unexpected)}")
    if reshaped:
        problems.append(f"shapes differ: {_names(reshaped, 2)}")
    if problems:
        raise CheckpointError(
            f"ckpt_path={str(path)!r} is a checkpoint of another model: {'; '.join(problems)}"
        )


@dataclass
class Resume:
    """The checkpoint a fit resumes from, and why it is not the one asked for (if it is not)."""

    path: Path
    step: int  # its global step
    note: str = ""


def checked_checkpoint(path: Path, model: torch.nn.Module, note: str = "") -> Resume:
    """``path`` as a :class:`Resume` of ``model``; CheckpointError unless it is one."""
    checkpoint = read_checkpoint(path)
    check_fits(checkpoint, model, path)
    return Resume(Path(path), int(checkpoint["global_step"]), note)


def resume_checkpoint(run_dir: Path, model: torch.nn.Module) -> Resume:
    """What ``--ckpt_path last`` resumes ``run_dir`` from: ``checkpoints/last.ckpt``, or when
    that one is unreadable the readable checkpoint of the highest step there (with a note
    saying so). CheckpointError when the run has nothing to resume (never a silent fresh
    start) or its checkpoint is of another model."""
    last = Path(run_dir) / CHECKPOINTS / LAST
    try:
        checkpoint = read_checkpoint(last)
    except CheckpointError as err:
        path, step = _newest_readable(Path(run_dir), str(err))
        note = f"{err}; resuming from {path.name} (step {step}), the newest readable one"
        return checked_checkpoint(path, model, note)
    check_fits(checkpoint, model, last)
    return Resume(last, int(checkpoint["global_step"]))


def _newest_readable(run_dir: Path, why_not_last: str) -> tuple[Path, int]:
    """(path, step) of the readable checkpoint of the highest step besides last.ckpt."""
    folder = run_dir / CHECKPOINTS
    found = []
    for path in sorted(folder.glob("[!.]*.ckpt")) if folder.is_dir() else []:
        if path.name == LAST:
            continue
        with contextlib.suppress(CheckpointError, OSError):
            found.append((int(read_checkpoint(path)["global_step"]), path.stat().st_mtime, path))
    if not found:
        raise CheckpointError(
            f"run_dir={str(run_dir)!r} has nothing to resume: {why_not_last}, and no other "
            f"readable checkpoint is in {CHECKPOINTS}/; start it without --ckpt_path"
        )
    step, _, path = max(found)
    return path, step


# ---- what an exact resume needs beyond Lightning's checkpoint --------------------------


def _rng_states() -> dict:
    """Every RNG a step may draw from, as tensors and plain values (``weights_only``-safe)."""
    name, keys, position, has_gauss, gauss = np.random.get_state()
    states = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": (name, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, gauss),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def _set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, position, has_gauss, cached = states["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, cached))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


class ResumeState(L.Callback):
    """Saves the RNG states with every checkpoint and restores them as a resumed fit starts
    training (after everything that draws at set-up), so dropout masks continue as they
    would have. Before each checkpoint it flushes the CSV log, which otherwise writes only
    every 100 steps: the rows a resume keeps are then on disk whenever the checkpoint is."""

    def __init__(self) -> None:
        self._restore: dict | None = None

    def state_dict(self) -> dict:
        return {"rng": _rng_states()}

    def load_state_dict(self, state_dict: dict) -> None:
        self._restore = state_dict.get("rng")

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._restore is not None:
            _set_rng_states(self._restore)
            self._restore = None

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module, checkpoint: dict) -> None:
        for logger in trainer.loggers:
            if isinstance(logger, CSVLogger):
                logger.save()


class RunCheckpoint(ModelCheckpoint):
    """ModelCheckpoint of a run folder that may have moved since its checkpoints were saved.

    Lightning drops the best score and the last path it restores when the checkpoint folder
    has another path than when it saved (then writes ``last-v1.ckpt`` beside a stale
    ``last.ckpt``). When this folder holds the files the state names, they are taken as
    its own. The state key stays ModelCheckpoint's, so older checkpoints restore too.
    """

    @property
    def state_key(self) -> str:
        return super().state_key.replace(type(self).__qualname__, "ModelCheckpoint", 1)

    def load_state_dict(self, state_dict: dict) -> None:
        old, new = state_dict.get("dirpath"), self.dirpath
        best = state_dict.get("best_model_path")
        if old and new and old != new and (not best or Path(new, Path(best).name).is_file()):
            state_dict = _moved(state_dict, new)
        super().load_state_dict(state_dict)


def _moved(state: dict, folder: str) -> dict:
    """ModelCheckpoint ``state`` with its file paths in ``folder`` (same file names)."""

    def here(path: str | None) -> str | None:
        return str(Path(folder, Path(path).name)) if path else path

    paths = ("best_model_path", "kth_best_model_path", "last_model_path")
    return {
        **state,
        "dirpath": folder,
        **{key: here(state.get(key)) for key in paths if key in state},
        "best_k_models": {here(p): v for p, v in (state.get("best_k_models") or {}).items()},
    }


class EarlyLast(L.Callback):
    """Keeps ``last.ckpt`` from early on: every ``every_n_steps`` optimizer steps, and when
    the fit raises between steps, so that ``--ckpt_path last`` resumes near where a fit
    stopped, not from its last validation (and a fit killed before its first validation
    has something to resume).

    A step that is followed by a validation is left to the validation's own checkpoint
    (saved after it: a resume then neither repeats nor skips that validation), and an error
    inside a training step or a diverged fit (``FloatingPointError``) saves nothing: the
    previous checkpoint is then the last state known to be whole.
    """

    def __init__(self, last_checkpoint: Path, every_n_steps: int) -> None:
        self.last_checkpoint = Path(last_checkpoint)
        self.every_n_steps = every_n_steps
        self._saved_step = -1  # global step of the latest checkpoint saved in this fit
        self._training = self._in_step = False

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module, checkpoint: dict) -> None:
        self._saved_step = trainer.global_step  # any checkpoint: the ModelCheckpoint's too

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._training = True

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._training = False

    def on_train_batch_start(self, trainer: L.Trainer, pl_module, batch, batch_idx) -> None:
        self._in_step = True

    def on_train_batch_end(self, trainer: L.Trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._in_step = False
        step = trainer.global_step
        if step % self.every_n_steps == 0 and not _validates_now(trainer):
            self._save(trainer)

    def on_exception(self, trainer: L.Trainer, pl_module, exception: BaseException) -> None:
        if self._training and not self._in_step and not isinstance(exception, FloatingPointError):
            with contextlib.suppress(Exception):  # the error being raised is the one to tell
                self._save(trainer)

    def save_final(self, trainer: L.Trainer) -> None:
        """After the fit: ``last.ckpt`` at the final step, unless one was saved there already
        (overwriting that would change what a resume from it restores)."""
        self._save(trainer)

    def _save(self, trainer: L.Trainer) -> None:
        if trainer.global_step > 0 and self._saved_step != trainer.global_step:
            trainer.save_checkpoint(self.last_checkpoint, weights_only=False)


def _validates_now(trainer: L.Trainer) -> bool:
    """Whether Lightning validates after the training step that just ended (when unsure:
    True, which leaves the checkpoint to the validation)."""
    loop = trainer.fit_loop
    try:
        return bool(loop.epoch_loop._should_check_val_fx(loop._data_fetcher))
    except Exception:  # noqa: BLE001 - Lightning internals: a later version may differ
        return True
