"""Checkpoints a fit resumes from exactly, written so that a kill never spoils one.

- :class:`AtomicCheckpointIO` writes every checkpoint beside its target, fsyncs it and
  renames it into place (then fsyncs the folder): a reader, a resume included, finds the
  old file or the new one, never half of one, on any local filesystem. Loads are
  ``weights_only`` (tensors and plain values, no code unpickled).
- :func:`read_checkpoint`, :func:`check_fits` and :func:`resume_checkpoint` are what a fit
  checks before it resumes: the file is there, is a training checkpoint, fits the model; a
  run's unreadable ``last.ckpt`` gives way to its newest readable checkpoint.
- :func:`rng_states` and :func:`set_rng_states`: what Lightning's checkpoint leaves out of
  an exact resume, the RNG states (``fit.keeper`` saves them with the run's book), a
  GPU's generators included (:class:`DeviceRng`, which a CPU test builds over CPU ones).

Errors are :class:`CheckpointError`, one line naming the file and what is wrong with it.
"""

import contextlib
import io
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO

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


@dataclass(frozen=True)
class DeviceRng:
    """An accelerator's random generators, one per device: whether this process has started
    using them, and how to read and set them all."""

    name: str  # the key of their states among a checkpoint's RNG states ("cuda")
    in_use: Callable[[], bool]
    get_all: Callable[[], list[torch.Tensor]]
    set_all: Callable[[list[torch.Tensor]], None]


CUDA_RNG = DeviceRng(
    "cuda", torch.cuda.is_initialized, torch.cuda.get_rng_state_all, torch.cuda.set_rng_state_all
)


def device_rng() -> DeviceRng | None:
    """This machine's accelerator RNG: CUDA's where CUDA is available, else None."""
    return CUDA_RNG if torch.cuda.is_available() else None


def rng_states(device: DeviceRng | None) -> dict:
    """Every RNG a step may draw from, as tensors and plain values (``weights_only``-safe):
    torch's CPU generator, Python's, NumPy's and, once this process uses ``device`` (a CPU
    fit on a GPU machine never does: reading them would start CUDA), every device
    generator's, under the device's name."""
    name, keys, position, has_gauss, gauss = np.random.get_state()
    states = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": (name, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, gauss),
    }
    if device is not None and device.in_use():
        states[device.name] = device.get_all()
    return states


def set_rng_states(states: dict, device: DeviceRng | None) -> None:
    """Set the RNGs :func:`rng_states` read; ``device``'s where the states hold them (a GPU
    run's checkpoint resumed on a CPU leaves its device states unread)."""
    torch.set_rng_state(states["torch"])
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, position, has_gauss, cached = states["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), position, has_gauss, cached))
    if device is not None and device.name in states:
        device.set_all(states[device.name])
