"""Leases of unprivileged user ids, one per worker, unique on the machine while held.

``RLIMIT_NPROC`` counts processes per user id across the whole machine, and the clean-up after a
job may kill every process of the worker's uid. Two workers (of one sandbox, or of two sandboxes in
different processes) must therefore never share a uid. A lease is an exclusive ``flock`` on a
per-uid lock file in a root-only directory; the kernel releases it when the holder exits, so a
crashed process never leaks a uid.
"""

from __future__ import annotations

import fcntl
import os
import tempfile

__all__ = ["FIRST_UID", "LAST_UID", "UidLease", "lease_uids"]

FIRST_UID = 60000
"""First uid handed to workers."""
LAST_UID = 64999
"""Last uid handed to workers."""


class UidLease:
    """An exclusive hold on one uid; release it with :meth:`release` (idempotent)."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd: int | None = fd

    def release(self) -> None:
        """Give the uid back."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __repr__(self) -> str:
        return f"UidLease(uid={self.uid}, held={self._fd is not None})"


def _lock_dir() -> str:
    for base in ("/run", tempfile.gettempdir()):
        path = os.path.join(base, "codea1-sandbox-uids")
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError:
            continue
        info = os.stat(path)
        if info.st_uid == os.geteuid() and not info.st_mode & 0o022:
            return path
    raise OSError("no private directory for uid lock files (tried /run and the temp dir)")


def lease_uids(count: int, first: int = FIRST_UID, last: int = LAST_UID) -> list[UidLease]:
    """Lease ``count`` distinct uids in ``[first, last]``.

    Raises:
        OSError: the lock directory cannot be created or the range is exhausted.
    """
    directory = _lock_dir()
    leases: list[UidLease] = []
    try:
        for uid in range(first, last + 1):
            if len(leases) == count:
                break
            fd = os.open(os.path.join(directory, f"{uid}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            leases.append(UidLease(uid, fd))
        if len(leases) < count:
            raise OSError(f"only {len(leases)} of {count} uids free in [{first}, {last}]")
    except BaseException:
        for lease in leases:
            lease.release()
        raise
    return leases
