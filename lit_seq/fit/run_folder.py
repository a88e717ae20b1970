"""The run folder of a fit: which one, whether a fit may start there, and its lock.

One run folder, one fit: the fit that uses a folder holds an exclusive lock on its
``.lock`` for its whole life (released even by kill -9), so a second fit into a folder in
use is refused in one line. Every check here only reads until the lock is taken, so a
refused fit changes nothing: a finished run is never overwritten, a folder holding an
unfinished fit's checkpoints is resumed (``--ckpt_path last``), never silently restarted,
and a resume of a finished run that has nothing left to train is refused.
"""

import contextlib
import os
import secrets
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from filelock import Timeout, UnixFileLock

from lit_seq.fit.checkpoints import (
    CHECKPOINTS,
    CheckpointError,
    Resume,
    checked_checkpoint,
    resume_checkpoint,
)
from lit_seq.record import METRICS_FILE
from lit_seq.systems import SequenceSystem
from lit_seq.util.checks import BadInput
from lit_seq.util.io import atomic_write_text

LOCK_FILE = ".lock"  # in a run folder: held by the fit that uses it
WANDB_ID_FILE = "wandb_id"  # in a run folder: the W&B run that a resume continues


def run_dir_path(config, task: str, arch: str) -> Path:
    """The run folder: ``--run_dir``, else a new one ``runs/<task>-<arch>-<time>``; BadInput
    for a name its file system does not take (checked first: the OS refuses even to look)."""
    if config.run_dir:
        check_folder_names("run_dir", Path(config.run_dir))
        return Path(config.run_dir)
    if config.ckpt_path == "last":
        raise BadInput("ckpt_path='last' resumes the fit of --run_dir; give its run folder")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return Path("runs") / f"{task}-{arch}-{stamp}"


def check_run(config, run_dir: Path, model: SequenceSystem, announce: bool = False):
    """BadInput unless a fit of ``config`` may start in ``run_dir``; the Resume it starts
    from (None for a fresh fit). Reads only; ``announce`` prints a resume's note."""
    _check_run_dir(config, run_dir)
    resume = None
    if config.ckpt_path:
        resume = _resume(config.ckpt_path, run_dir, model)
        if announce and resume.note:
            print(f"lit_seq.fit: warning: {resume.note}", file=sys.stderr)
    _check_something_to_do(config, run_dir, resume)
    return resume


def name_max(folder: Path) -> int:
    """The longest file name (in bytes) the file system of ``folder`` takes (255 if unknown)."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def check_folder_names(option: str, path: Path) -> None:
    """BadInput naming ``option`` if a part of ``path`` is a longer name than its file system
    takes (the OS would refuse it mid-set-up, with a traceback). Walks down from the root, so
    no longer name is ever handed to the OS."""
    folder, made = Path(path.absolute().anchor), True
    for part in path.absolute().parts[1:]:
        limit = name_max(folder)
        if len(part.encode()) > limit:
            shown = part if len(part) <= 40 else f"{part[:20]}...{part[-12:]}"
            raise BadInput(
                f"{option}={shown!r}: that name is {len(part.encode())} bytes, and the file "
                f"system of {str(folder)!r} takes names of at most {limit}; give a shorter one"
            )
        made = made and (folder / part).is_dir()
        folder = folder / part if made else folder  # a folder still to make: its parent's


def _check_run_dir(config, run_dir: Path) -> None:
    """BadInput if a fit of ``config`` must not start in ``run_dir`` whatever it resumes from."""
    if run_dir.exists() and not run_dir.is_dir():
        raise BadInput(
            f"run_dir={str(run_dir)!r} is a file; give a folder (a new one, or a run folder "
            "to resume)"
        )
    parent = next((p for p in run_dir.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise BadInput(f"run_dir={str(run_dir)!r}: {str(parent)!r} is a file, not a folder")
    folder = run_dir / CHECKPOINTS
    if config.ckpt_path == "last" and not folder.is_dir():
        raise BadInput(
            f"run_dir={str(run_dir)!r} has nothing to resume (no {CHECKPOINTS}/ folder); "
            "start it without --ckpt_path"
        )
    if config.ckpt_path:
        return
    if (run_dir / METRICS_FILE).exists():
        raise BadInput(
            f"run_dir={str(run_dir)!r} already holds a finished run; choose another run_dir "
            "(nothing was overwritten)"
        )
    if folder.is_dir() and any(folder.glob("[!.]*.ckpt")):
        raise BadInput(
            f"run_dir={str(run_dir)!r} holds the checkpoints of an unfinished fit; resume it "
            "with --ckpt_path last, or choose another run_dir (nothing was changed)"
        )


def _folder_lock(run_dir: Path, on_acquired: Callable[[int], None] | None = None) -> UnixFileLock:
    """The lock on ``run_dir``'s ``.lock``: flock, which the kernel lets go when the holding
    process ends (kill -9 too), never a soft lock file that a killed fit would leave behind.
    Not a singleton, so a second fit in this process is refused like one in another."""
    return UnixFileLock(
        run_dir / LOCK_FILE,
        blocking=False,  # in use: refuse at once, never wait for the other fit to end
        thread_local=False,  # whichever thread ends the fit lets the folder go
        fallback_to_soft=False,
        on_acquired=on_acquired,
    )


def _write_pid(fd: int) -> None:
    """Leave this process's pid in the lock file, for the refusal of a second fit to name."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def _take_lock(lock: UnixFileLock, run_dir: Path) -> None:
    """Acquire ``lock`` (the run folder's); BadInput if a fit holds it."""
    try:
        lock.acquire()
    except Timeout:
        holder = ""
        with contextlib.suppress(OSError):
            holder = (run_dir / LOCK_FILE).read_text().strip()
        by = f" (pid {holder})" if holder.isdigit() else ""
        raise BadInput(
            f"run_dir={str(run_dir)!r} is in use by another fit{by}; wait for it to end or "
            "choose another run_dir"
        ) from None


def check_not_in_use(run_dir: Path) -> None:
    """BadInput if a fit holds ``run_dir`` now (reads only: the lock is let go at once)."""
    if not (run_dir / LOCK_FILE).is_file():
        return  # no fit ever held the folder (and no folder is made here)
    lock = _folder_lock(run_dir)
    try:
        _take_lock(lock, run_dir)
    except OSError:
        return  # the lock file cannot be opened for writing: lock_run_dir says so
    lock.release()


def lock_run_dir(run_dir: Path) -> UnixFileLock:
    """Create ``run_dir`` if needed and hold an exclusive lock on it until the returned lock
    is released (or this process ends); BadInput if a fit in another process (or another fit
    in this one) holds it, or it cannot be written."""
    lock = _folder_lock(run_dir, on_acquired=_write_pid)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        _take_lock(lock, run_dir)
    except OSError as err:
        raise BadInput(f"run_dir={str(run_dir)!r} is not writable: {err.strerror}") from None
    return lock


def _resume(ckpt_path: str, run_dir: Path, model: SequenceSystem) -> Resume:
    """The checkpoint ``--ckpt_path`` names, checked to be a training checkpoint of ``model``.

    'last' is the run folder's ``last.ckpt``, or its newest readable checkpoint when that
    one is unreadable (the Resume's note says so).
    """
    try:
        if ckpt_path == "last":
            return resume_checkpoint(run_dir, model)
        return checked_checkpoint(Path(ckpt_path), model)
    except CheckpointError as err:
        raise BadInput(str(err)) from None


def _check_something_to_do(config, run_dir: Path, resume: Resume | None) -> None:
    """BadInput for a resume of a finished run that has no step left to train: it would
    only test again and overwrite ``metrics.json`` with the same metrics."""
    max_steps = config.trainer.get("max_steps")
    if (
        resume is not None
        and (run_dir / METRICS_FILE).exists()
        and max_steps not in (None, -1)
        and resume.step >= max_steps
    ):
        raise BadInput(
            f"run_dir={str(run_dir)!r} is finished: {resume.path.name} is at step {resume.step} "
            f"of trainer.max_steps={max_steps}, nothing to resume (nothing was changed; a "
            "larger --trainer.max_steps trains on)"
        )


def wandb_run_id(run_dir: Path, resuming: bool) -> str:
    """The W&B run id of the fit in ``run_dir``: on a resume the one its first session kept
    in ``wandb_id`` (so W&B continues that run instead of opening a second one of the same
    name), else a new one, kept there for the resumes to come."""
    path = Path(run_dir) / WANDB_ID_FILE
    if resuming:
        with contextlib.suppress(OSError):
            if kept := path.read_text().strip():
                return kept
    run_id = secrets.token_hex(4)  # 8 characters of [0-9a-f], as W&B's own ids are
    keep_wandb_run_id(run_dir, run_id)
    return run_id


def keep_wandb_run_id(run_dir: Path, run_id: str) -> None:
    """Keep ``run_id`` in ``run_dir``'s ``wandb_id``: the W&B run its resumes continue (under a
    sweep, the id the agent gave ``wandb.init``, which only it knows)."""
    atomic_write_text(Path(run_dir) / WANDB_ID_FILE, run_id + "\n")
