"""The primitives that confine a process: ``prctl``, seccomp, rlimits, descriptors, mounts.

Runs inside the sandbox (loaded by ``entry.py`` as the top-level ``confine``; standard library
only). The zygote (:mod:`zygote`) uses them on itself at start-up (namespaces, the mounts that
keep the Python installation within the jobs' reach, the worker seccomp filter) and on each job
child it forks, before the child reads anything (descriptors, rlimits, the job filter, the
scratch directory). Nothing here holds state: the zygote keeps what it configured.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import resource
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
_PR_SET_SECCOMP = 22
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_MODE_FILTER = 2
_CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 1, 2, 4, 8, 32
_MS_NOATIME, _MS_NODIRATIME, _MS_BIND, _MS_REC = 1024, 2048, 4096, 16384
_MS_PRIVATE, _MS_RELATIME = 1 << 18, 1 << 21
_MNT_DETACH = 2
_SAFE = _MS_NOSUID | _MS_NODEV
_CLONE_FLAGS = {
    "net": 0x40000000,
    "ipc": 0x08000000,
    "uts": 0x04000000,
    "user": 0x10000000,
}


def libc() -> ctypes.CDLL:
    """The C library, with ``errno`` kept for :func:`ctypes.get_errno`."""
    return ctypes.CDLL(None, use_errno=True)


def prctl(lib: ctypes.CDLL, option: int, arg: Any = 0) -> int:
    """``prctl(option, arg, 0, 0, 0)``; its return value."""
    return int(lib.prctl(ctypes.c_int(option), arg, ctypes.c_ulong(0), ctypes.c_ulong(0), 0))


class SockFprog(ctypes.Structure):
    """``struct sock_fprog``: a BPF program's length (in instructions) and address."""

    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


BpfFilter = tuple[Any, SockFprog, tuple[Any, ...]]
"""A loadable BPF program: ``(buffer, sock_fprog, prctl arguments)`` (see :func:`bpf_filter`)."""


def prctl_args(option: int, arg: int) -> tuple[Any, ...]:
    """The five ctypes arguments of ``prctl(option, arg, 0, 0, 0)``."""
    zero = ctypes.c_ulong(0)
    return (ctypes.c_int(option), ctypes.c_ulong(arg), zero, zero, zero)


def bpf_filter(hex_program: str) -> BpfFilter | None:
    """A loadable BPF program: ``(buffer, sock_fprog, prctl arguments)``.

    The buffer must outlive the ``sock_fprog``; the arguments are those of
    ``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &sock_fprog, 0, 0)``.
    """
    program = bytes.fromhex(hex_program)
    if not program:
        return None
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    args = (
        ctypes.c_int(_PR_SET_SECCOMP),
        ctypes.c_ulong(_SECCOMP_MODE_FILTER),
        ctypes.byref(fprog),
        ctypes.c_ulong(0),
        ctypes.c_ulong(0),
    )
    return buffer, fprog, args


def unshare(lib: ctypes.CDLL, names: list[str], notes: list[str], unshared: list[str]) -> None:
    """Move this process into new namespaces (``"net"``, ``"ipc"``, ``"uts"``, ``"user"``).

    A failure is appended to ``notes``; on success the names (``"user"`` left out) are appended
    to ``unshared``. In a new user namespace the current uid and gid map to themselves.
    """
    flags = 0
    for name in names:
        flags |= _CLONE_FLAGS[name]
    uid, gid = os.getuid(), os.getgid()
    if lib.unshare(ctypes.c_int(flags)) != 0:
        err = ctypes.get_errno()
        notes.append(f"unshare({'+'.join(names)}) failed: {os.strerror(err)}")
        return
    if "user" in names:
        with open("/proc/self/setgroups", "w") as fh:
            fh.write("deny")
        with open("/proc/self/uid_map", "w") as fh:
            fh.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as fh:
            fh.write(f"{gid} {gid} 1")
    unshared.extend(n for n in names if n != "user")


def _mount(
    lib: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int
) -> None:
    data = b"mode=0755,size=1m" if fstype == "tmpfs" else None
    args = [None if text is None else text.encode() for text in (source, target, fstype)]
    if lib.mount(args[0], args[1], args[2], ctypes.c_ulong(flags), data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount on {target} failed: {os.strerror(err)}")


def cover(lib: ctypes.CDLL, mounts: dict[str, list[str]], unshared: list[str]) -> None:
    """Build the covers of :func:`~codea1_env.sandbox.confinement.uid_mounts`' ``mounts``.

    In a new mount namespace (``"mnt"`` appended to ``unshared`` once made), each cover becomes
    an empty read-only tmpfs holding binds of the paths below it that jobs need (read-only, the
    writable ones as they are), with the ``hide`` directories covered by empty ones. On failure
    every mount made is undone and the :class:`OSError` raised.
    """
    if lib.unshare(ctypes.c_int(_CLONE_NEWNS)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(mnt) failed: {os.strerror(err)}")
    unshared.append("mnt")
    _mount(lib, None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing propagates to the host
    binds = [(path, False) for path in mounts.get("read_only", [])]
    binds += [(path, True) for path in mounts.get("writable", [])]
    handles: dict[str, int] = {}  # the originals, to bind once the covers hide them
    made: list[str] = []
    try:
        for path, _ in binds:
            handles[path] = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        for covered in mounts["covers"]:
            _mount(lib, "tmpfs", covered, "tmpfs", _SAFE | _MS_NOEXEC)
            made.append(covered)
        for path, _ in binds:
            _make_dirs(path)
            _mount(lib, f"/proc/self/fd/{handles[path]}", path, None, _MS_BIND | _MS_REC)
            made.append(path)
        for hidden in mounts.get("hide", []):
            _mount(lib, "tmpfs", hidden, "tmpfs", _SAFE | _MS_NOEXEC | _MS_RDONLY)
            made.append(hidden)
        for path, writable in binds:
            if not writable:
                _mount(lib, None, path, None, _readonly_remount_flags(path))
        for covered in mounts["covers"]:
            _mount(lib, None, covered, None, _MS_REMOUNT | _MS_RDONLY | _SAFE | _MS_NOEXEC)
    except OSError:
        for target in reversed(made):
            lib.umount2(target.encode(), _MNT_DETACH)
        raise
    finally:
        for fd in handles.values():
            os.close(fd)


def traversable(path: str) -> bool:
    """Whether any user can get to ``path``: every directory above it has ``o+x``.

    ``path``'s own mode is left out: it is the same inode with bubblewrap or without.
    """
    current = "/"
    for part in [p for p in path.split("/") if p][:-1]:
        current = os.path.join(current, part)
        try:
            if not os.stat(current).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def _make_dirs(path: str) -> None:
    """Create the missing directories on the way to ``path``, mode 0755 whatever the umask."""
    current = "/"
    for part in [p for p in path.split("/") if p]:
        current = os.path.join(current, part)
        if not os.path.isdir(current):
            os.mkdir(current)
            os.chmod(current, 0o755)


def _readonly_remount_flags(path: str) -> int:
    """Flags that remount the bind mount at ``path`` read-only, keeping its other flags.

    In a user namespace, flags of a mount inherited from outside are locked (they can be added,
    not cleared), so those already set are kept.
    """
    flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _SAFE
    current = os.statvfs(path).f_flag
    for st_flag, ms_flag in (
        (os.ST_NOEXEC, _MS_NOEXEC),
        (os.ST_NOATIME, _MS_NOATIME),
        (os.ST_NODIRATIME, _MS_NODIRATIME),
        (os.ST_RELATIME, _MS_RELATIME),
    ):
        if current & st_flag:
            flags |= ms_flag
    return flags


def set_rlimits(limits: dict[str, Any], uid: int | None) -> None:
    """Set a job's rlimits from its ``limits``; a process cap only when it gets its own ``uid``."""
    cpu = max(1, int(limits.get("cpu_s", 20) + 0.999))
    pairs = [
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_FSIZE, int(limits.get("file_size_bytes", 16 << 20)), None),
        (resource.RLIMIT_NOFILE, int(limits.get("open_files", 64)), None),
    ]
    memory = int(limits.get("memory_bytes", 1 << 30))
    if memory > 0:
        pairs.append((resource.RLIMIT_AS, memory, None))
    if uid is not None:
        pairs.append((resource.RLIMIT_NPROC, int(limits.get("processes", 16)), None))
    for which, soft, hard in pairs:
        resource.setrlimit(which, (soft, soft if hard is None else hard))


def dup_high(fd: int) -> int:
    """Duplicate ``fd`` to a number above the standard ones, then close the original."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return new


def max_fd() -> int:
    """The highest descriptor number this process may have, plus one."""
    try:
        return int(os.sysconf("SC_OPEN_MAX"))
    except (ValueError, OSError):
        return 65536


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path: str) -> bool:
    """Remove ``path`` and everything under it, however deep; False when something is left.

    Iterative and descriptor-relative, holding one directory open at a time: a job may leave a
    tree nested deeper than the recursion limit (``shutil.rmtree`` would raise RecursionError)
    or than ``PATH_MAX`` allows to name.
    """
    try:
        fd = os.open(path, _DIR_FLAGS)
    except FileNotFoundError:
        return True
    except OSError:  # not a directory (or a link to one): a plain unlink
        try:
            os.unlink(path)
        except OSError:
            return not os.path.lexists(path)
        return True
    trail: list[str] = []  # names from ``path`` down to the directory ``fd`` holds
    try:
        while True:
            child = _empty_into(fd)
            if child is not None:
                below = os.open(child, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = below
                trail.append(child)
            elif trail:
                above = os.open("..", _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = above
                os.rmdir(trail.pop(), dir_fd=fd)
            else:
                break
    except OSError:
        return False
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        return not os.path.lexists(path)
    return True


def _empty_into(fd: int) -> str | None:
    """Unlink every non-directory in directory ``fd``; the name of a subdirectory, if any."""
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                return entry.name
            os.unlink(entry.name, dir_fd=fd)
    return None
