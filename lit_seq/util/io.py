"""Crash-safe file writes: a reader sees the old file or the new one, never half of one."""

import json
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    """This process's umask, read without changing it where Linux tells it (no window in
    which another thread would create files with a different one)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file: 0o666 less the umask.

    ``mkstemp`` creates its files 0o600 whatever the umask, which would make a shared
    output folder unreadable to collaborators; files renamed into place get this mode.
    """
    return 0o666 & ~_umask()


def atomic_write_bytes(path: Path, data: bytes | memoryview) -> None:
    """Write ``data`` to a temp file in the same folder, fsync it, then rename it over ``path``.

    The file gets the usual permissions (:func:`new_file_mode`), not ``mkstemp``'s 0o600.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), new_file_mode())
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """:func:`atomic_write_bytes` of ``text`` (UTF-8)."""
    atomic_write_bytes(path, text.encode())


def atomic_write_json(path: Path, data: dict) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: Path) -> dict:
    with open(path) as handle:
        return json.load(handle)
