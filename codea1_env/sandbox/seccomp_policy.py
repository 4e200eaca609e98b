"""The seccomp policy of job children, compiled once by the trusted parent into BPF programs.

The parent builds the filters with ``pyseccomp`` (libseccomp) and exports raw BPF programs; the
worker needs neither libseccomp nor any package outside the standard library. The policy comes
in two stacked parts, so that a child pays almost nothing to load it:

* the **worker filter** (:data:`DENIED_SYSCALLS` and the argument rules) is loaded once by the
  zygote on itself, after ``no_new_privs``; every child inherits it through ``fork``;
* the **job filter** (:data:`JOB_DENIED_SYSCALLS`: leaving the process group, raising limits) is
  loaded by each child right after it has called ``setsid`` and set its rlimits.

Both are a deny-list on top of an allow-by-default filter, aimed at what untrusted Python has no
business doing (a denied call fails with ``EPERM``, ``EACCES`` or ``ENOSYS``; it is not killed):

* networking: ``socket`` fails for every address family (no TCP/UDP, no netlink, no connecting to
  host daemons over Unix sockets); ``socketpair`` works for ``AF_UNIX`` only; ``io_uring`` is off
  (it can issue network and file operations that bypass syscall filtering);
* leaving the process group or session: ``setsid`` and ``setpgid`` (so a SIGKILL of the job's
  group reaches every process the job started);
* raising limits: ``setrlimit`` and ``prlimit64`` with a new limit;
* namespaces and mounts: ``unshare``, ``setns``, namespace flags on ``clone`` (``clone3`` answers
  ``ENOSYS`` so that the C library falls back to ``clone``), ``mount``, ``umount2``,
  ``pivot_root``, ``chroot`` and the new mount API;
* looking into or steering other processes: ``ptrace``, ``process_vm_readv/writev``,
  ``pidfd_getfd``, ``kcmp``, ``perf_event_open``;
* kernel-level operations: ``bpf``, ``userfaultfd``, ``keyctl``/``add_key``/``request_key``,
  module loading, ``kexec``, ``reboot``, swap, clock setting, ``iopl``/``ioperm``, ``syslog``,
  ``open_by_handle_at``, ``quotactl``, ``acct``, ``fanotify_init``, host and domain names.

System calls made with a foreign architecture's numbering (for example the 32-bit ``int 0x80``
interface) kill the process, libseccomp's default for a non-native architecture.
"""

from __future__ import annotations

import contextlib
import errno
import tempfile
from typing import Any, NamedTuple

__all__ = [
    "DENIED_SYSCALLS",
    "JOB_DENIED_SYSCALLS",
    "SeccompPrograms",
    "SeccompUnavailable",
    "compile_policy",
    "compile_policy_or_none",
]

DENIED_SYSCALLS: tuple[str, ...] = (
    "socket",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "perf_event_open",
    "bpf",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "iopl",
    "ioperm",
    "syslog",
    "open_by_handle_at",
    "name_to_handle_at",
    "quotactl",
    "acct",
    "fanotify_init",
    "lookup_dcookie",
    "vhangup",
)
"""System calls the worker filter denies (``EPERM``; ``socket``: ``EACCES``)."""

JOB_DENIED_SYSCALLS: tuple[str, ...] = ("setsid", "setpgid", "setrlimit")
"""System calls the job filter denies (``EPERM``), with ``prlimit64`` given a new limit."""

_AF_UNIX = 1
_CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)


class SeccompUnavailable(RuntimeError):
    """libseccomp (through ``pyseccomp``) cannot build the filter on this machine."""


class SeccompPrograms(NamedTuple):
    """The two compiled filters and the denied names this system does not know."""

    worker: bytes
    job: bytes
    skipped: tuple[str, ...]


def compile_policy() -> SeccompPrograms:
    """Build the worker and job filters (see the module docstring).

    Raises:
        SeccompUnavailable: ``pyseccomp`` or libseccomp is missing or refuses a filter.
    """
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as exc:  # OSError: libseccomp.so not found by ctypes
        raise SeccompUnavailable(f"pyseccomp/libseccomp not usable: {exc}") from None
    skipped: list[str] = []
    try:
        worker = _new_filter(sc)
        _deny(sc, worker, DENIED_SYSCALLS, skipped)
        worker.add_rule(sc.ERRNO(errno.EACCES), "socketpair", sc.Arg(0, sc.NE, _AF_UNIX))
        for flag in _CLONE_NAMESPACE_FLAGS:
            worker.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        try:
            worker.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
        except (OSError, ValueError, RuntimeError):
            skipped.append("clone3")
        job = _new_filter(sc)
        _deny(sc, job, JOB_DENIED_SYSCALLS, skipped)
        job.add_rule(sc.ERRNO(errno.EPERM), "prlimit64", sc.Arg(2, sc.NE, 0))
        programs = SeccompPrograms(_export(worker), _export(job), tuple(skipped))
    except (OSError, ValueError, RuntimeError) as exc:
        raise SeccompUnavailable(f"libseccomp could not build the filter: {exc}") from None
    for program in programs[:2]:
        if not program or len(program) % 8:
            raise SeccompUnavailable(f"libseccomp exported a malformed program ({len(program)} B)")
    return programs


def _new_filter(sc: Any) -> Any:
    policy = sc.SyscallFilter(sc.ALLOW)
    # A binary tree over syscall numbers: shorter to run, and to cache when loaded. An older
    # libseccomp refuses the attribute; its linear program works the same, a bit slower.
    with contextlib.suppress(OSError, ValueError, RuntimeError, AttributeError):
        policy.set_attr(sc.Attr.CTL_OPTIMIZE, 2)
    return policy


def _deny(sc: Any, policy: Any, names: tuple[str, ...], skipped: list[str]) -> None:
    for name in names:
        action = sc.ERRNO(errno.EACCES if name == "socket" else errno.EPERM)
        try:
            policy.add_rule(action, name)
        except (OSError, ValueError, RuntimeError):
            skipped.append(name)


def _export(policy: Any) -> bytes:
    with tempfile.TemporaryFile() as fh:
        policy.export_bpf(fh)
        fh.seek(0)
        return fh.read()


def compile_policy_or_none(notes: list[str]) -> SeccompPrograms:
    """:func:`compile_policy`, or empty programs (no filter) with the reason added to ``notes``.

    System calls this libseccomp does not know are noted too (they go unfiltered).
    """
    try:
        programs = compile_policy()
    except SeccompUnavailable as exc:
        notes.append(f"seccomp: {exc}")
        return SeccompPrograms(b"", b"", ())
    if programs.skipped:
        notes.append(f"seccomp: not known here, so not filtered: {', '.join(programs.skipped)}")
    return programs
