"""Atomic file writes: readers see the old content or the new, never a mix or a torn file."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "atomic_binary_writer",
    "atomic_writer",
    "fsync_dir",
    "fsync_tree",
    "make_temp_dir",
    "write_text_atomic",
]


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Flush a directory entry (after a rename) where the filesystem allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        # some filesystems refuse fsync on directories; the rename is still atomic
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: str | os.PathLike[str]) -> None:
    """Flush every file and directory under ``root`` (a directory to be renamed into place)."""
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(dirpath)


def _umask() -> int:
    """The process's umask, read without changing it (``os.umask`` sets it, racing threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _mode_for(target: Path) -> int:
    """The mode the new file gets: the old file's, or what ``open()`` would give a new one."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """Open a temporary file beside ``path`` for text; on success fsync and rename it over.

    The file keeps the mode of the one it replaces (a new one gets ``open()``'s, not the
    temporary file's 0600). On any exception the temporary file is removed and ``path`` is left
    untouched. Missing parent folders are created.

    A symbolic link is written through: the file it points to is replaced, the link stays. A
    path that is not a regular file (``/dev/stdout``, a FIFO, a device) is written to directly,
    as ``open(path, "w")`` would: there is no file to tear, and renaming over it would destroy it.

    Raises:
        IsADirectoryError: ``path`` is a directory.
    """
    with _atomic_open(path, binary=False) as handle:
        yield handle


@contextlib.contextmanager
def atomic_binary_writer(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """:func:`atomic_writer` for bytes (a parquet file, say)."""
    with _atomic_open(path, binary=True) as handle:
        yield handle


@contextlib.contextmanager
def _atomic_open(path: str | os.PathLike[str], *, binary: bool) -> Iterator[IO[Any]]:
    """The temporary file of :func:`atomic_writer` and :func:`atomic_binary_writer`."""
    text: dict[str, Any] = {} if binary else {"encoding": "utf-8", "newline": "\n"}
    mode = "wb" if binary else "w"
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    if target.is_dir():
        raise IsADirectoryError(f"{os.fspath(path)}: is a directory")
    if target.exists() and not stat.S_ISREG(target.stat().st_mode):
        with open(target, mode, **text) as direct:
            yield direct
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _mode_for(target))
        with os.fdopen(fd, mode, **text) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def make_temp_dir(parent: str | os.PathLike[str], prefix: str) -> Path:
    """A new directory in ``parent`` with ``mkdir``'s mode, not ``mkdtemp``'s 0700.

    For a directory that is filled and then renamed into place (a checkpoint): once in place it
    must be as readable as one made with ``mkdir`` under the process's umask.
    """
    path = Path(tempfile.mkdtemp(dir=parent, prefix=prefix))
    os.chmod(path, 0o777 & ~_umask())
    return path


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_writer`)."""
    with atomic_writer(path) as handle:
        handle.write(text)
