"""The machine a run gets: CPUs, GPUs, how many torch threads to use on them, and its disk.

Shared by the grid's local workers and its Ray tasks, which must set threads the same way:
two 2-thread torch processes on 2 shared cores run far slower than two 1-thread ones, and
OpenMP threads that spin while they wait make a busy machine crawl (measured 20x). And how
a process that loaded torch ends: :func:`exit_now`, :func:`end_with`.
"""

import atexit
import contextlib
import logging
import os
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

# OpenMP reads this when torch loads it: set it in the environment of a process to come
QUIET_OPENMP = {"OMP_WAIT_POLICY": "PASSIVE"}


def cpu_count() -> int:
    """CPUs this process may use (the affinity mask, which containers narrow)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def gpu_devices() -> list[str]:
    """The ids to put in a worker's ``CUDA_VISIBLE_DEVICES``, one per visible GPU
    (:func:`lit_seq.util.devices.visible_gpu_ids` of this machine)."""
    import torch

    from lit_seq.util.devices import visible_gpu_ids

    available = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return visible_gpu_ids(available, os.environ.get("CUDA_VISIBLE_DEVICES"))


def use_threads(n: int) -> None:
    """Make this process's torch use ``n`` intra-op threads and one inter-op thread."""
    os.environ["OMP_NUM_THREADS"] = str(n)  # for whatever reads it from here on
    import torch

    torch.set_num_threads(n)
    with contextlib.suppress(RuntimeError):  # only settable before inter-op work starts
        torch.set_num_interop_threads(1)


# below this, a failed write is taken for a full disk (libraries report it in their own words:
# OSError ENOSPC from Python, "PytorchStreamWriter failed writing file" from torch.save)
DISK_FULL_BYTES = 1 << 20


def disk_full(path: Path) -> bool:
    """Whether the filesystem holding ``path`` (or its nearest existing parent) is full."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return shutil.disk_usage(path).free < DISK_FULL_BYTES
    except OSError:
        return False


# the loggers quiet_libraries turns down to warnings (why: there)
QUIET_LOGGERS = ("lightning.fabric.utilities.seed", "lightning.pytorch.utilities.rank_zero")


def quiet_libraries() -> None:
    """Silence what a fit's terminal does not need. Process-wide: the commands call it in
    their ``main()`` (fit, ablate and its workers, evaluate, positions, bench), never on import."""
    # main() hands sys.argv over as ``args``, which is exactly what this warning is about
    warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
    # "Seed set to 0" on every run is noise, the seed is in the saved config; and Lightning's
    # info lines (GPU available, tips, "Restoring states from ..."): the header of a fit says
    # what matters (fit_header), in five lines
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # the CSV log continues its file on a resume and a new folder holds only the lock:
    # nothing is ever deleted, whatever this says
    warnings.filterwarnings("ignore", message=".*Previous log files in this directory will be")
    # lit_seq logs on exactly the steps that get written (SequenceSystem._written_this_step)
    warnings.filterwarnings("ignore", message=".*is smaller than the logging interval")
    # a deprecation inside Lightning itself (its _pytree), nothing a user can change
    warnings.filterwarnings("ignore", message=".*isinstance\\(treespec, LeafSpec\\)")


@contextlib.contextmanager
def quieted() -> Iterator[None]:
    """:func:`quiet_libraries` for the length of a ``with``, the warning filters and the
    loggers' levels as they were after it: for in-process callers (``lit_seq.api``, called
    from a notebook or a script), whose process is not lit_seq's to change for good."""
    loggers = [logging.getLogger(name) for name in QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    with warnings.catch_warnings():
        quiet_libraries()
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels, strict=True):
                logger.setLevel(level)


def exit_now(code: int) -> None:
    """End this process with ``code`` after the atexit handlers (W&B's, logging's,
    multiprocessing's) and a flush of stdout and stderr, skipping the interpreter's teardown
    of its modules: with torch and Lightning loaded that teardown alone took 1.3 s (0.6 s for
    torch), measured on the 2-core CPU, after the last line a command printed and at the end
    of every grid worker. Only for a process whose own files are all closed: a command after
    its ``main`` returned, a grid worker between runs. The handlers run through
    ``atexit._run_exitfuncs``, CPython's private hook that the interpreter's own exit calls
    (atexit has no public way to run them early); ``os._exit`` then skips the rest."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # closed, or a pipe the reader has left
            stream.flush()
    os._exit(code)


def end_with(main: Callable[[], int | None]) -> None:
    """Run a command's ``main`` and end the process with its status through
    :func:`exit_now`: the ``__main__`` of the commands that load torch (fit, ablate,
    evaluate, bench and its memory children). ``SystemExit`` sets the status as it would
    (``sys.exit("message")``: the message on stderr, status 1); any other exception takes
    the interpreter's usual way out."""
    try:
        status = main()
    except SystemExit as stop:
        status = stop.code
    if status is not None and not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
    exit_now(status or 0)
