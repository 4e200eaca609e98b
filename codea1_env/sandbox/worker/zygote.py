"""The zygote: a clean fork server that never sees job data, and the confinement of its children.

Runs inside the sandbox (imported by ``entry.py`` as the top-level ``zygote``; standard library
only). It receives a configuration message, pre-imports common modules, probes the isolation a
child actually gets, then answers control messages: ``spawn`` (with four descriptors attached),
``kill``, ``stats`` and ``quit``. It never reads a job's program, inputs or outputs,
so a forked child cannot find other jobs' data in inherited memory (the zygote rule). After each
child exits it kills whatever the job left behind, removes the scratch directory and reports the
exit status and CPU time.

The zygote runs under the worker seccomp filter itself (loaded last at start-up), so every child
inherits it for free. A freshly forked job child then confines itself
(:meth:`Zygote.confine_child`) before it reads anything: its own session, descriptors 0-3 only,
a private scratch directory, rlimits, an unprivileged uid, the small job seccomp filter and a
scrubbed environment. Only then does the runner (:mod:`runner`) install its audit hook, which
counts what the program does for the monitor (runtime telemetry, never a verdict), and read the
job. The zygote itself installs no hook, so its own work is never counted.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import ctypes
import errno
import fcntl
import gc
import importlib.util
import json
import os
import resource
import select
import signal
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from protocol import (
    EXIT_RUNNER_ERROR,
    EXIT_RUNNER_MEMORY,
    RESULT_FD,
    ROUTINE_CONTROL_BYTES,
    receive_message,
    send_message,
    trusted_builtins,
)
from runner import JobRunner, describe_exception, prepare_interpreter, real_exit, real_write

_PR_SET_PDEATHSIG = 1
_PR_SET_SECCOMP = 22
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
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
_NAMESPACES = ("net", "pid", "mnt", "ipc", "uts")


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(libc: ctypes.CDLL, option: int, arg: Any = 0) -> int:
    return int(libc.prctl(ctypes.c_int(option), arg, ctypes.c_ulong(0), ctypes.c_ulong(0), 0))


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _prctl_args(option: int, arg: int) -> tuple[Any, ...]:
    """The five ctypes arguments of ``prctl(option, arg, 0, 0, 0)``."""
    zero = ctypes.c_ulong(0)
    return (ctypes.c_int(option), ctypes.c_ulong(arg), zero, zero, zero)


def _filter(hex_program: str) -> tuple[Any, _SockFprog, tuple[Any, ...]] | None:
    """A loadable BPF program: ``(buffer, sock_fprog, prctl arguments)``.

    The buffer must outlive the ``sock_fprog``; the arguments are those of
    ``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &sock_fprog, 0, 0)``.
    """
    program = bytes.fromhex(hex_program)
    if not program:
        return None
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    args = (
        ctypes.c_int(_PR_SET_SECCOMP),
        ctypes.c_ulong(_SECCOMP_MODE_FILTER),
        ctypes.byref(fprog),
        ctypes.c_ulong(0),
        ctypes.c_ulong(0),
    )
    return buffer, fprog, args


def _ns_inode(name: str) -> int:
    try:
        return os.stat(f"/proc/self/ns/{name}").st_ino
    except OSError:
        return 0


class Zygote:
    """The clean fork server. Holds only configuration, never job data."""

    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.libc = _libc()
        self.config: dict[str, Any] = {}
        self.children: dict[int, dict[str, Any]] = {}  # pid -> {"id", "scratch", "killed"}
        self.scratch = ""  # every job's scratch path while none is left behind (configure())
        self.runner: JobRunner | None = None  # built for that path, inherited by children
        self.uid: int | None = None
        self.gid: int | None = None
        self.plain_encode: Callable[[Any], Any] | None = None
        self.plain_error: type[Exception] = ValueError
        self.job_filter: tuple[Any, _SockFprog, tuple[Any, ...]] | None = None
        self.no_new_privs = False  # set in the zygote, so inherited by every child
        # prctl arguments, built once: ctypes conversions are dear in a freshly forked child
        self.pdeathsig_args = _prctl_args(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        self.notes: list[str] = []
        self.unshared: list[str] = []
        # How the loop learns that a child exited: a pidfd per child (Linux 5.3+), else
        # SIGCHLD through a wake-up pipe (which costs every child a handler reset).
        self.pidfd = False
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)

    # ----------------------------------------------------------------- start-up
    def configure(self, config: dict[str, Any]) -> None:
        """Apply the configuration sent by the parent before any job arrives."""
        self.config = config
        self.uid = config.get("uid")
        self.gid = config.get("gid", self.uid)
        _prctl(self.libc, _PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1))
        _prctl(self.libc, _PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL))
        for names in config.get("unshare", []):
            self._unshare(names)
        self.job_filter = _filter(config.get("seccomp_job_bpf", ""))
        try:  # only the zygote (root) may create entries next to the job scratch dirs
            os.chmod(config["scratch_root"], 0o711)
        except OSError as exc:
            self.notes.append(f"cannot restrict {config['scratch_root']}: {exc.strerror}")
        self._load_plain(config["plain_path"])  # before the mounts, which may hide its directory
        self._reach_python(config.get("mounts") or {})
        self.scratch = os.path.join(config["scratch_root"], "job")
        self.runner = JobRunner(self.plain_encode, self.plain_error, os.path.realpath(self.scratch))
        for name in config.get("preimport", []):
            try:
                __import__(name)
            except Exception as exc:  # noqa: BLE001 - report, keep going
                self.notes.append(f"pre-import of {name} failed: {exc}")
        sys.path[:] = [p for p in sys.path[1:] if p] + list(config.get("python_paths", []))
        prepare_interpreter()
        # One job at a time, each removed before the next starts: every job gets the same
        # scratch path, so HOME, TMPDIR and PWD are set once here instead of in every child.
        _remove_tree(self.scratch)  # left by a worker that died mid-job (bare mode only)
        os.environ.clear()
        os.environ.update(config.get("env", {}))
        os.environ.update(HOME=self.scratch, TMPDIR=self.scratch, PWD=self.scratch)
        _reseed()  # job children reseed too (random reseeds at fork): see runner.Runner.run
        self.pidfd = _pidfd_works()
        if not self.pidfd:  # exits wake the loop through SIGCHLD and the wake-up pipe instead
            signal.signal(signal.SIGCHLD, lambda *_: None)
            signal.set_wakeup_fd(self.wake_w)
        # Children share the zygote's pages copy-on-write; keep the garbage collector from
        # walking (and so copying) every inherited object in each child. Freed memory goes back
        # to the system first: every page the zygote maps is one more to copy a table entry for
        # at each fork (measured: fork 390 -> 330 us with ~1 MB less resident).
        gc.collect()
        trim = getattr(self.libc, "malloc_trim", None)  # glibc only
        if trim is not None:
            trim(0)
        gc.freeze()
        worker_filter = _filter(config.get("seccomp_worker_bpf", ""))
        if worker_filter is not None:  # last: it also binds the zygote, and children inherit it
            try:
                self._load_filter(worker_filter)
                self.no_new_privs = True
            except OSError as exc:
                self.job_filter = None
                self.notes.append(f"seccomp: the worker filter did not load: {exc}")

    def _unshare(self, names: list[str]) -> None:
        flags = 0
        for name in names:
            flags |= _CLONE_FLAGS[name]
        uid, gid = os.getuid(), os.getgid()
        if self.libc.unshare(ctypes.c_int(flags)) != 0:
            err = ctypes.get_errno()
            self.notes.append(f"unshare({'+'.join(names)}) failed: {os.strerror(err)}")
            return
        if "user" in names:
            with open("/proc/self/setgroups", "w") as fh:
                fh.write("deny")
            with open("/proc/self/uid_map", "w") as fh:
                fh.write(f"{uid} {uid} 1")
            with open("/proc/self/gid_map", "w") as fh:
                fh.write(f"{gid} {gid} 1")
        self.unshared.extend(n for n in names if n != "user")

    def _reach_python(self, mounts: dict[str, list[str]]) -> None:
        """Keep the Python installation within reach of the jobs' uid (no bubblewrap).

        ``mounts`` comes from :func:`~codea1_env.sandbox.confinement.uid_mounts`: when a
        directory jobs read lies under one other users cannot traverse (an interpreter in
        ``/root``), the zygote moves into a mount namespace of its own and covers that directory
        with an empty read-only tmpfs holding only read-only binds of what jobs need. Should
        that be impossible (no ``CAP_SYS_ADMIN``), job children keep the worker's uid instead:
        a missing ``unprivileged_uid`` layer is reported, a correct program never fails on an
        import it cannot read.
        """
        if self.uid is None or not mounts.get("covers"):
            return
        try:
            self._cover(mounts)
        except OSError as exc:
            self.notes.append(f"cannot keep the Python installation within the jobs' reach: {exc}")
        needed = [*mounts.get("read_only", []), *mounts.get("writable", [])]
        blocked = [path for path in needed if not _traversable(path)]
        if blocked:
            self.notes.append(
                "unprivileged_uid: jobs keep the worker's uid, since another uid cannot reach "
                f"{', '.join(blocked)} (install Python outside a private home directory, allow "
                "mount namespaces, or use bubblewrap)"
            )
            self.uid = self.gid = None

    def _mount(self, source: str | None, target: str, fstype: str | None, flags: int) -> None:
        data = b"mode=0755,size=1m" if fstype == "tmpfs" else None
        args = [None if text is None else text.encode() for text in (source, target, fstype)]
        if self.libc.mount(args[0], args[1], args[2], ctypes.c_ulong(flags), data) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"mount on {target} failed: {os.strerror(err)}")

    def _cover(self, mounts: dict[str, list[str]]) -> None:
        """Build the covers of :meth:`_reach_python`; on failure, undo every mount made."""
        if self.libc.unshare(ctypes.c_int(_CLONE_NEWNS)) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"unshare(mnt) failed: {os.strerror(err)}")
        self.unshared.append("mnt")
        self._mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing propagates to the host
        binds = [(path, False) for path in mounts.get("read_only", [])]
        binds += [(path, True) for path in mounts.get("writable", [])]
        handles: dict[str, int] = {}  # the originals, to bind once the covers hide them
        made: list[str] = []
        try:
            for path, _ in binds:
                handles[path] = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            for cover in mounts["covers"]:
                self._mount("tmpfs", cover, "tmpfs", _SAFE | _MS_NOEXEC)
                made.append(cover)
            for path, _ in binds:
                _make_dirs(path)
                self._mount(f"/proc/self/fd/{handles[path]}", path, None, _MS_BIND | _MS_REC)
                made.append(path)
            for hidden in mounts.get("hide", []):
                self._mount("tmpfs", hidden, "tmpfs", _SAFE | _MS_NOEXEC | _MS_RDONLY)
                made.append(hidden)
            for path, writable in binds:
                if not writable:
                    self._mount(None, path, None, _readonly_remount_flags(path))
            for cover in mounts["covers"]:
                self._mount(None, cover, None, _MS_REMOUNT | _MS_RDONLY | _SAFE | _MS_NOEXEC)
        except OSError:
            for target in reversed(made):
                self.libc.umount2(target.encode(), _MNT_DETACH)
            raise
        finally:
            for fd in handles.values():
                os.close(fd)

    def _load_plain(self, path: str) -> None:
        spec = importlib.util.spec_from_file_location("codea1_plain", path)
        if spec is None or spec.loader is None:
            raise RuntimeError(f"cannot load the plain-data codec from {path}")
        module = importlib.util.module_from_spec(spec)
        # The encoder resolves builtins through the trusted copy, so a job that patches
        # ``builtins`` cannot change how its own values are encoded.
        module.__dict__["__builtins__"] = trusted_builtins()
        sys.modules["codea1_plain"] = module
        spec.loader.exec_module(module)
        self.plain_encode = module.encode
        self.plain_error = module.PlainDataError

    # ----------------------------------------------------------------- main loop
    def serve(self) -> None:
        """Answer control messages until the parent hangs up."""
        while True:
            try:
                watched = [self.control.fileno(), self.wake_r]
                watched += [c["pidfd"] for c in self.children.values() if c["pidfd"] >= 0]
                ready, _, _ = select.select(watched, [], [])
            except InterruptedError:
                continue
            if self.wake_r in ready:
                self._drain_wakeups()
            self._reap()
            if self.control.fileno() in ready:
                message, fds = receive_message(self.control, 8, ROUTINE_CONTROL_BYTES)
                if message is None or message.get("op") == "quit":
                    self._shutdown()
                    return
                self._handle(message, fds)

    def _handle(self, message: dict[str, Any], fds: list[int]) -> None:
        op = message.get("op")
        if op == "spawn" and len(fds) == 4:
            self._spawn(message, fds)
        elif op == "kill":
            for pid, child in self.children.items():
                if child["id"] == message.get("id"):
                    child["killed"] = True
                    self._kill_group(pid)
            for fd in fds:
                os.close(fd)
        elif op == "stats":
            for fd in fds:
                os.close(fd)
            send_message(self.control, {"op": "stats", "rss_kb": _rss_kb(), "pid": os.getpid()})
        else:
            for fd in fds:
                os.close(fd)
            send_message(self.control, {"op": "error", "reason": f"bad control message {op!r}"})

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self.wake_r, 4096):
                pass
        except BlockingIOError:
            return

    def _reap(self) -> None:
        """Collect every child that has exited (job children and re-parented orphans)."""
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self._finished(pid, status, usage)

    def _finished(self, pid: int, status: int, usage: resource.struct_rusage) -> None:
        child = self.children.pop(pid, None)
        if child is None:
            return  # an orphan re-parented to us (we are a subreaper): reaped, done
        if child["pidfd"] >= 0:
            os.close(child["pidfd"])
        self._cleanup(pid, child)
        report: dict[str, Any] = {
            "op": "exit",
            "id": child["id"],
            "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "maxrss_kb": usage.ru_maxrss,
            "killed": child["killed"],
        }
        send_message(self.control, report)

    def _retire_children(self) -> None:
        """Before a new job: end the previous one for good.

        The parent may finish a job as soon as it has every record and its pipes are closed,
        a moment before the child is reaped here; a child that closed its pipes and kept running
        is past its job too. Either way it is killed, reaped and cleaned up now, so that the
        clean-up can never touch the next job's child.
        """
        self._reap()
        for pid in list(self.children):
            self.children[pid]["killed"] = True
            self._kill_group(pid)
            while True:
                try:
                    _, status, usage = os.wait4(pid, 0)
                    break
                except InterruptedError:
                    continue
            self._finished(pid, status, usage)

    # ----------------------------------------------------------------- children
    def _spawn(self, message: dict[str, Any], fds: list[int]) -> None:
        self._retire_children()
        job_id = int(message["id"])
        scratch = self.scratch
        if os.path.lexists(scratch):  # the last clean-up failed: never reuse what is left there
            scratch = os.path.join(self.config["scratch_root"], f"job-{job_id}")
        pid = os.fork()
        if pid == 0:
            try:
                self.confine_child(fds, scratch, message.get("limits", {}))
                if scratch == self.scratch and self.runner is not None:
                    self.runner.run()
                JobRunner(self.plain_encode, self.plain_error, os.getcwd()).run()
            except MemoryError:
                real_exit(EXIT_RUNNER_MEMORY)
            except BaseException:  # noqa: BLE001 - a child must never return into the zygote
                real_exit(EXIT_RUNNER_ERROR)
            real_exit(0)
        for fd in fds:
            os.close(fd)
        pidfd = self._watch(pid)
        self.children[pid] = {"id": job_id, "scratch": scratch, "killed": False, "pidfd": pidfd}
        if pidfd < 0 and not self.pidfd:
            self._reap()  # the child may have exited before SIGCHLD was armed

    def _watch(self, pid: int) -> int:
        """A pidfd the loop can wait on for ``pid``'s exit; -1 (and SIGCHLD for good) if none."""
        if not self.pidfd:
            return -1
        try:
            return int(os.pidfd_open(pid))
        except OSError as exc:
            self.notes.append(f"pidfd_open failed ({exc.strerror}): exits signalled by SIGCHLD")
            self.pidfd = False
            signal.signal(signal.SIGCHLD, lambda *_: None)
            signal.set_wakeup_fd(self.wake_w)
            return -1

    def confine_child(self, fds: list[int], scratch: str, limits: dict[str, Any]) -> None:
        """Confine the freshly forked child. Runs before any job data is read."""
        if not self.pidfd:
            signal.set_wakeup_fd(-1)
        # ``_signal`` directly: ``signal.signal`` converts through enums, which costs a job
        # child ~80 us per call in copy-on-write faults on a freshly forked interpreter.
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            _signal.signal(int(sig), int(signal.SIG_DFL))
        os.setsid()
        self.control.detach()  # the descriptor is closed below; the object must not own it
        if min(fds) <= RESULT_FD:  # received descriptors are above 3 unless 0-3 were closed
            fds = [_dup_high(fd) for fd in fds]
        for target, fd in zip((0, RESULT_FD, 1, 2), fds):
            os.dup2(fd, target)
        os.closerange(RESULT_FD + 1, _max_fd())
        try:
            os.mkdir(scratch, 0o700)
        except FileExistsError:  # left by a worker that died mid-job (bare mode only)
            _remove_tree(scratch)
            os.mkdir(scratch, 0o700)
        if self.uid is not None:
            os.chown(scratch, self.uid, self.gid if self.gid is not None else self.uid)
        os.chdir(scratch)
        self._set_rlimits(limits)
        if self.uid is not None:
            os.setgroups([])
            os.setgid(self.gid if self.gid is not None else self.uid)
            os.setuid(self.uid)
        self.libc.prctl(*self.pdeathsig_args)  # after setuid, which clears it
        if self.job_filter is not None:
            self._load_filter(self.job_filter)
        elif not self.no_new_privs:
            _prctl(self.libc, _PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1))
        if scratch != self.scratch:  # the probe, or a job after a failed clean-up
            environ = os.environ  # item by item: ``update`` goes through the Mapping ABCs
            environ["HOME"] = environ["TMPDIR"] = environ["PWD"] = scratch

    def _load_filter(self, bpf_filter: tuple[Any, _SockFprog, tuple[Any, ...]]) -> None:
        if not self.no_new_privs:  # a filter needs it (and it is inherited: set once)
            _prctl(self.libc, _PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1))
        if self.libc.prctl(*bpf_filter[2]) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"loading a seccomp filter failed: {os.strerror(err)}")

    def _set_rlimits(self, limits: dict[str, Any]) -> None:
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
        if self.uid is not None:
            pairs.append((resource.RLIMIT_NPROC, int(limits.get("processes", 16)), None))
        for which, soft, hard in pairs:
            resource.setrlimit(which, (soft, soft if hard is None else hard))

    def _kill_group(self, pid: int) -> bool:
        """SIGKILL the job's process group; False when the group was already empty."""
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def _cleanup(self, pid: int, child: dict[str, Any]) -> None:
        """Kill everything the job left behind, then remove its scratch directory."""
        group_alive = self._kill_group(pid)
        # With seccomp on, nothing the job starts can leave its group (setsid/setpgid are
        # denied), so an empty group means nothing is left; otherwise look everywhere.
        if group_alive or self.job_filter is None:
            if self.config.get("pid_namespace"):
                self._kill_namespace()
            elif self.uid is not None:
                self._kill_uid()
            self._reap()  # killed orphans were re-parented to us: collect them before reporting
        try:
            os.rmdir(child["scratch"])  # the usual case: the job left its directory empty
        except FileNotFoundError:
            pass
        except OSError:
            _remove_tree(child["scratch"])

    def _kill_namespace(self) -> None:
        """Inside our own pid namespace: SIGKILL every process but init and the zygote."""
        me = os.getpid()
        for _ in range(50):
            alive = []
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) in (1, me):
                    continue
                try:
                    with open(f"/proc/{entry}/stat", "rb") as fh:
                        state = fh.read().rsplit(b")", 1)[1].split()[0]
                except (OSError, IndexError):
                    continue
                if state not in (b"Z", b"X"):
                    alive.append(int(entry))
            if not alive:
                return
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.001)

    def _kill_uid(self) -> None:
        """Without a pid namespace: SIGKILL every process of the worker's uid, and collect them.

        The zygote is a subreaper: whatever the job left is re-parented to it as its parents
        die, so the job is over when the zygote has no child left (bounded: two seconds of
        renewed kills at most).
        """
        deadline = time.monotonic() + 2.0
        while True:
            self._signal_uid()
            if not self._reap_all() or time.monotonic() > deadline:
                return
            time.sleep(0.001)

    def _signal_uid(self) -> None:
        """SIGKILL every process of the worker's uid, from a helper running as that uid."""
        helper = os.fork()
        if helper == 0:
            try:
                os.setuid(self.uid if self.uid is not None else os.getuid())
                for _ in range(3):
                    os.kill(-1, signal.SIGKILL)
            except BaseException:  # noqa: BLE001
                real_exit(1)
            real_exit(0)
        while True:
            try:
                os.waitpid(helper, 0)
                return
            except InterruptedError:
                continue
            except ChildProcessError:
                return

    def _reap_all(self) -> bool:
        """Collect every child that has exited; whether any child is still running."""
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            self._finished(pid, status, usage)

    def _shutdown(self) -> None:
        for pid, child in list(self.children.items()):
            self._kill_group(pid)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            self._cleanup(pid, child)
            if child["pidfd"] >= 0:
                os.close(child["pidfd"])
        self.children.clear()

    # ----------------------------------------------------------------- probe
    def probe(self) -> dict[str, Any]:
        """Fork a child confined exactly like a job child and report what it observes."""
        read_end, write_end = os.pipe()
        null = os.open(os.devnull, os.O_RDWR)
        scratch = os.path.join(self.config["scratch_root"], "probe")
        pid = os.fork()
        if pid == 0:
            try:
                os.close(read_end)
                self.confine_child(
                    [os.dup(null), write_end, os.dup(null), os.dup(null)],
                    scratch,
                    self.config.get("probe_limits", {}),
                )
                facts = _observe(self.config)
                real_write(RESULT_FD, json.dumps(facts).encode())
            except BaseException as exc:  # noqa: BLE001
                try:
                    real_write(RESULT_FD, json.dumps({"error": describe_exception(exc)}).encode())
                except BaseException:  # noqa: BLE001
                    pass
                real_exit(EXIT_RUNNER_ERROR)
            real_exit(0)
        os.close(write_end)
        os.close(null)
        chunks = []
        while True:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read_end)
        while True:
            try:
                os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        self._cleanup(pid, {"scratch": scratch})
        try:
            facts = json.loads(b"".join(chunks) or b"{}")
        except ValueError:
            facts = {"error": "unreadable probe output"}
        facts["zygote_notes"] = self.notes
        facts["unshared"] = self.unshared
        facts["zygote_rss_kb"] = _rss_kb()
        return dict(facts)


def _traversable(path: str) -> bool:
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


def _pidfd_works() -> bool:
    """Whether this kernel (and the seccomp filter) let us wait for children through pidfds."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


def _dup_high(fd: int) -> int:
    """Duplicate ``fd`` to a number above the standard ones, then close the original."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return new


def _max_fd() -> int:
    try:
        return int(os.sysconf("SC_OPEN_MAX"))
    except (ValueError, OSError):
        return 65536


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _remove_tree(path: str) -> bool:
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


def _reseed() -> None:
    module = sys.modules.get("random")
    if module is not None:
        module.seed(0)


def _rss_kb() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _visible(canaries: list[Any]) -> list[str]:
    """The canaries this process can see.

    A canary is a path, or ``[path, st_dev, st_ino]``: the host file itself, which counts as
    seen only if the path leads to that very file (the sandbox's own ``/tmp`` is not the
    host's ``/tmp``).
    """
    seen = []
    for canary in canaries:
        path, identity = (canary, None) if isinstance(canary, str) else (canary[0], canary[1:])
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if identity is None or [info.st_dev, info.st_ino] == list(identity):
            seen.append(path)
    return seen


def _unreachable(paths: list[str]) -> list[str]:
    """The import directories this process cannot read (missing ones are not counted)."""
    found = []
    for path in paths:
        if not path:
            continue
        try:
            os.stat(path)
        except FileNotFoundError:
            continue
        except OSError:
            found.append(path)
            continue
        if os.path.isdir(path) and not os.access(path, os.R_OK | os.X_OK):
            found.append(path)
    return found


def _observe(config: dict[str, Any]) -> dict[str, Any]:
    """Facts a confined child can see about itself (the probe's payload)."""
    facts: dict[str, Any] = {
        "uid": os.getuid(),
        "euid": os.geteuid(),
        "own_session": os.getsid(0) == os.getpid() and os.getpgid(0) == os.getpid(),
        "rlimits": {
            name: list(resource.getrlimit(getattr(resource, name)))
            for name in ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_NOFILE")
        },
        "namespaces": {name: _ns_inode(name) for name in _NAMESPACES},
        "env_keys": sorted(os.environ),
        "visible": _visible(config.get("canaries", [])),
        "cwd": os.getcwd(),
        "stdlib_readable": os.access(os.path.dirname(os.__file__), os.R_OK | os.X_OK),
        "unreachable_paths": _unreachable(sys.path),
    }
    status = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            status[key] = value.strip()
    facts["seccomp_mode"] = status.get("Seccomp", "0")
    facts["no_new_privs"] = status.get("NoNewPrivs", "0")
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.close()
        facts["inet_socket"] = "created"
    except OSError as exc:
        facts["inet_socket"] = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    try:
        with open("/proc/net/dev") as fh:
            lines = fh.read().splitlines()[2:]
        facts["interfaces"] = sorted(line.split(":")[0].strip() for line in lines)
    except OSError:
        facts["interfaces"] = None
    writable = []
    for directory in dict.fromkeys(["/", "/tmp", "/dev/shm", *config.get("writable_canaries", [])]):
        target = os.path.join(directory, f".codea1-probe-{os.getpid()}")
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            continue
        os.close(fd)
        os.unlink(target)
        writable.append(directory)
    facts["writable_outside_scratch"] = writable
    try:
        fd = os.open("probe-file", os.O_WRONLY | os.O_CREAT, 0o600)
        os.close(fd)
        facts["scratch_writable"] = True
    except OSError:
        facts["scratch_writable"] = False
    facts["stdin_empty"] = os.read(0, 1) == b""
    return facts
