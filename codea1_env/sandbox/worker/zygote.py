"""The zygote: a clean fork server that never sees job data.

Runs inside the sandbox (imported by ``entry.py`` as the top-level ``zygote``; standard library
only). It receives a configuration message, pre-imports common modules, probes the isolation a
child actually gets, then answers control messages: ``spawn`` (with four descriptors attached),
``kill``, ``cpu`` (a running child's CPU time, for the trusted side's CPU timeouts), ``stats`` and
``quit``. It never reads a job's program, inputs or outputs,
so a forked child cannot find other jobs' data in inherited memory (the zygote rule). After each
child exits it kills whatever the job left behind, removes the scratch directory and reports the
exit status and CPU time.

The zygote runs under the worker seccomp filter itself (loaded last at start-up), so every child
inherits it for free. A freshly forked job child then confines itself
(:meth:`Zygote.confine_child`, with the primitives of :mod:`confine`) before it reads anything:
its own session, descriptors 0-3 only, a private scratch directory, rlimits, an unprivileged uid,
the small job seccomp filter and a scrubbed environment. Only then does the runner
(:mod:`runner`) install its audit hook, which counts what the program does for the monitor
(runtime telemetry, never a verdict), and read the job. The zygote itself installs no hook, so
its own work is never counted. At start-up one child confined the same way reports what it can
see (:meth:`Zygote.probe`; the payload is :mod:`probe`'s).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import ctypes
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

from confine import (
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    BpfFilter,
    bpf_filter,
    cover,
    dup_high,
    libc,
    max_fd,
    prctl,
    prctl_args,
    remove_tree,
    set_rlimits,
    traversable,
    unshare,
)
from probe import observe
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

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class Zygote:
    """The clean fork server. Holds only configuration, never job data."""

    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.libc = libc()
        self.config: dict[str, Any] = {}
        self.children: dict[int, dict[str, Any]] = {}  # pid -> {"id", "scratch", "killed"}
        self.spare: dict[str, Any] | None = None  # {"pid", "sock"}: the next job's child
        self.prefork = False  # set by configure(): only with the job seccomp filter
        self.scratch = ""  # every job's scratch path while none is left behind (configure())
        self.runner: JobRunner | None = None  # built for that path, inherited by children
        self.uid: int | None = None
        self.gid: int | None = None
        self.plain_encode: Callable[[Any], Any] | None = None
        self.plain_error: type[Exception] = ValueError
        self.job_filter: BpfFilter | None = None
        self.no_new_privs = False  # set in the zygote, so inherited by every child
        # prctl arguments, built once: ctypes conversions are dear in a freshly forked child
        self.pdeathsig_args = prctl_args(PR_SET_PDEATHSIG, int(signal.SIGKILL))
        self.notes: list[str] = []
        self.unshared: list[str] = []
        # How the loop learns that a child exited: a pidfd per child (Linux 5.3+), else
        # SIGCHLD through a wake-up pipe (which costs every child a handler reset).
        self.pidfd = False
        self.own_proc = False  # set by configure(): /proc is this process's pid namespace's
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)

    # ----------------------------------------------------------------- start-up
    def configure(self, config: dict[str, Any]) -> None:
        """Apply the configuration sent by the parent before any job arrives."""
        self.config = config
        self.uid = config.get("uid")
        self.gid = config.get("gid", self.uid)
        prctl(self.libc, PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1))
        prctl(self.libc, PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL))
        for names in config.get("unshare", []):
            unshare(self.libc, names, self.notes, self.unshared)
        # Not dumpable, and so neither is any child it forks (the spare, every job): a process of
        # the same uid (a job, where no unprivileged uid can be had) can then neither open the
        # zygote's nor another job's /proc/PID/mem, which would let it rewrite the process that
        # forks every later job, or a job running beside it. Only CAP_SYS_PTRACE passes that.
        # After the unshares: a user namespace's maps are written through /proc/self, which a
        # process that is not dumpable no longer owns.
        if prctl(self.libc, PR_SET_DUMPABLE, ctypes.c_ulong(0)) != 0:
            self.notes.append("cannot mark the zygote not dumpable: same-uid jobs may reach it")
        self.job_filter = bpf_filter(config.get("seccomp_job_bpf", ""))
        self.own_proc = _proc_is_own()
        if not self.own_proc:
            self.notes.append("/proc is not this pid namespace's: time limits use the wall clock")
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
        remove_tree(self.scratch)  # left by a worker that died mid-job (bare mode only)
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
        worker_filter = bpf_filter(config.get("seccomp_worker_bpf", ""))
        if worker_filter is not None:  # last: it also binds the zygote, and children inherit it
            try:
                self._load_filter(worker_filter)
                self.no_new_privs = True
            except OSError as exc:
                self.job_filter = None
                self.notes.append(f"seccomp: the worker filter did not load: {exc}")
        # A spare child waits for each next job only where the job filter keeps a job's
        # processes in its group: otherwise every clean-up sweeps all processes, spare too.
        self.prefork = self.job_filter is not None and bool(config.get("prefork", True))

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
            cover(self.libc, mounts, self.unshared)
        except OSError as exc:
            self.notes.append(f"cannot keep the Python installation within the jobs' reach: {exc}")
        needed = [*mounts.get("read_only", []), *mounts.get("writable", [])]
        blocked = [path for path in needed if not traversable(path)]
        if blocked:
            self.notes.append(
                "unprivileged_uid: jobs keep the worker's uid, since another uid cannot reach "
                f"{', '.join(blocked)} (install Python outside a private home directory, allow "
                "mount namespaces, or use bubblewrap)"
            )
            self.uid = self.gid = None

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
        elif op == "cpu":
            for fd in fds:
                os.close(fd)
            job_id = message.get("id")
            reply = {"op": "cpu", "id": job_id, "cpu_s": self._cpu_of(job_id)}
            send_message(self.control, reply)
        elif op == "stats":
            for fd in fds:
                os.close(fd)
            send_message(self.control, {"op": "stats", "rss_kb": _rss_kb(), "pid": os.getpid()})
        else:
            for fd in fds:
                os.close(fd)
            send_message(self.control, {"op": "error", "reason": f"bad control message {op!r}"})

    def _cpu_of(self, job_id: Any) -> float | None:
        """CPU seconds the job's child has used (all its threads), None when it cannot be read.

        Read from ``/proc/PID/stat`` (user + system time, in clock ticks), which the child
        cannot forge. None when the child is gone, or when the ``/proc`` mounted here is not of
        this process's pid namespace (checked once at start-up, and the entry's parent must be
        this zygote): the trusted side then keeps the wall-clock deadline.
        """
        if not self.own_proc:
            return None
        for pid, child in self.children.items():
            if child["id"] != job_id or child["killed"]:
                continue
            fields = _stat_fields(pid)
            try:
                if fields is None or int(fields[1]) != os.getpid():
                    return None
                return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
            except (IndexError, ValueError):
                return None
        return None

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
            if self.spare is not None and self.spare["pid"] == pid:  # died waiting
                self.spare["sock"].close()
                self.spare = None
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
        self._fork_spare()  # while the parent reads the results and prepares the next job

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
        limits = message.get("limits", {})
        pid = self._hand_to_spare(fds, scratch, limits)
        if pid is None:
            pid = os.fork()
            if pid == 0:
                self._child_main(fds, scratch, limits, prepared=False)
        for fd in fds:
            os.close(fd)
        pidfd = self._watch(pid)
        self.children[pid] = {"id": job_id, "scratch": scratch, "killed": False, "pidfd": pidfd}
        if pidfd < 0 and not self.pidfd:
            self._reap()  # the child may have exited before SIGCHLD was armed

    def _child_main(
        self, fds: list[int], scratch: str, limits: dict[str, Any], *, prepared: bool
    ) -> None:
        """A job child's whole life after the fork: confine, run the job, exit. Never returns."""
        try:
            self.confine_child(fds, scratch, limits, prepared=prepared)
            if scratch == self.scratch and self.runner is not None:
                self.runner.run()
            JobRunner(self.plain_encode, self.plain_error, os.getcwd()).run()
        except MemoryError:
            real_exit(EXIT_RUNNER_MEMORY)
        except BaseException:  # noqa: BLE001 - a child must never return into the zygote
            real_exit(EXIT_RUNNER_ERROR)
        real_exit(0)

    # ----------------------------------------------------------------- the spare child
    def _fork_spare(self) -> None:
        """Fork the next job's child now, so that a job does not wait for a fork.

        The spare does the job-independent part of a child's confinement (its own session,
        no descriptor but its socket to the zygote) and then blocks until :meth:`_spawn` hands
        it a job's descriptors and limits; from there it is a job child like any other. It
        is forked from the zygote, which never holds job data, so it inherits none.
        """
        if self.spare is not None or not self.prefork:
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                ours.detach()
                self._wait_as_spare(theirs)
            except MemoryError:
                real_exit(EXIT_RUNNER_MEMORY)
            except BaseException:  # noqa: BLE001 - a child must never return into the zygote
                real_exit(EXIT_RUNNER_ERROR)
            real_exit(0)
        theirs.close()
        self.spare = {"pid": pid, "sock": ours}

    def _wait_as_spare(self, sock: socket.socket) -> None:
        self._leave_zygote()
        self.libc.prctl(*self.pdeathsig_args)  # it waits: it must not outlive us meanwhile
        keep = sock.fileno()
        os.closerange(0, keep)
        os.closerange(keep + 1, max_fd())
        message, fds = receive_message(sock, 4, ROUTINE_CONTROL_BYTES)
        sock.detach()
        os.close(keep)
        if message is None or len(fds) != 4:
            real_exit(EXIT_RUNNER_ERROR)
        self._child_main(fds, str(message["scratch"]), dict(message["limits"]), prepared=True)

    def _hand_to_spare(self, fds: list[int], scratch: str, limits: dict[str, Any]) -> int | None:
        """Give a job to the waiting spare; its pid, or None when there is none to take it."""
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        sock: socket.socket = spare["sock"]
        try:
            send_message(sock, {"scratch": scratch, "limits": limits}, fds)
        except OSError:  # it died while waiting: end it, and fork the child the usual way
            sock.close()
            self._end_spare(spare)
            return None
        sock.close()
        return int(spare["pid"])

    def _retire_spare(self) -> None:
        """Kill and collect the waiting spare (before a clean-up that waits for every child)."""
        spare, self.spare = self.spare, None
        if spare is not None:
            spare["sock"].close()
            self._end_spare(spare)

    def _end_spare(self, spare: dict[str, Any]) -> None:
        try:
            os.kill(spare["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:
            try:
                os.waitpid(spare["pid"], 0)
                return
            except InterruptedError:
                continue
            except ChildProcessError:
                return

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

    def _leave_zygote(self) -> None:
        """A child's first steps: the zygote's signal set-up undone, a session of its own."""
        if not self.pidfd:
            signal.set_wakeup_fd(-1)
        # ``_signal`` directly: ``signal.signal`` converts through enums, which costs a job
        # child ~80 us per call in copy-on-write faults on a freshly forked interpreter.
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            _signal.signal(int(sig), int(signal.SIG_DFL))
        os.setsid()
        self.control.detach()  # the descriptor is closed later; the object must not own it

    def confine_child(
        self, fds: list[int], scratch: str, limits: dict[str, Any], *, prepared: bool = False
    ) -> None:
        """Confine the freshly forked child. Runs before any job data is read.

        ``prepared``: the child is a spare that already left the zygote (:meth:`_leave_zygote`).
        """
        if not prepared:
            self._leave_zygote()
        if min(fds) <= RESULT_FD:  # received descriptors are above 3 unless 0-3 were closed
            fds = [dup_high(fd) for fd in fds]
        for target, fd in zip((0, RESULT_FD, 1, 2), fds):
            os.dup2(fd, target)
        os.closerange(RESULT_FD + 1, max_fd())
        try:
            os.mkdir(scratch, 0o700)
        except FileExistsError:  # left by a worker that died mid-job (bare mode only)
            remove_tree(scratch)
            os.mkdir(scratch, 0o700)
        if self.uid is not None:
            os.chown(scratch, self.uid, self.gid if self.gid is not None else self.uid)
        os.chdir(scratch)
        set_rlimits(limits, self.uid)
        if self.uid is not None:
            os.setgroups([])
            os.setgid(self.gid if self.gid is not None else self.uid)
            os.setuid(self.uid)
        self.libc.prctl(*self.pdeathsig_args)  # after setuid, which clears it
        if self.job_filter is not None:
            self._load_filter(self.job_filter)
        elif not self.no_new_privs:
            prctl(self.libc, PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1))
        if scratch != self.scratch:  # the probe, or a job after a failed clean-up
            environ = os.environ  # item by item: ``update`` goes through the Mapping ABCs
            environ["HOME"] = environ["TMPDIR"] = environ["PWD"] = scratch

    def _load_filter(self, program: BpfFilter) -> None:
        if not self.no_new_privs:  # a filter needs it (and it is inherited: set once)
            prctl(self.libc, PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1))
        if self.libc.prctl(*program[2]) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"loading a seccomp filter failed: {os.strerror(err)}")

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
            self._retire_spare()  # the sweep below kills or waits for every other process
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
            remove_tree(child["scratch"])

    def _kill_namespace(self) -> None:
        """Inside our own pid namespace: SIGKILL every process but init and the zygote."""
        me = os.getpid()
        for _ in range(50):
            alive = []
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) in (1, me):
                    continue
                fields = _stat_fields(int(entry))
                if fields and fields[0] not in (b"Z", b"X"):
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
        self._retire_spare()
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
                facts = observe(self.config)
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


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), None if unread.

    The name is cut at the last ``)``: a process may name itself with spaces and parentheses.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields or None


def _proc_is_own() -> bool:
    """Whether the ``/proc`` mounted here shows this process's pid namespace."""
    try:
        return os.readlink("/proc/self") == str(os.getpid())
    except OSError:
        return False


def _pidfd_works() -> bool:
    """Whether this kernel (and the seccomp filter) let us wait for children through pidfds."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


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
