"""The local backend: warm fork servers (zygotes) on this machine, one per core.

What is isolated and how (each item is a layer name reported by :meth:`LocalSandbox.isolation`):

* ``process_group`` - every job child calls ``setsid``: its own session and process group. The
  seccomp filter forbids ``setsid``/``setpgid`` afterwards, so everything it starts stays in the
  group, and the group is SIGKILLed when the job ends or times out.
* ``wall_timeout`` - deadlines are kept by the trusted parent, per call and for setup; at a
  deadline the zygote SIGKILLs the group. Nothing inside the job can catch or delay it.
* ``rlimits`` - RLIMIT_CPU (CPU seconds; SIGXCPU then SIGKILL), RLIMIT_AS (address space:
  ``MemoryError``), RLIMIT_FSIZE (``EFBIG``), RLIMIT_NOFILE and RLIMIT_CORE=0, set below the hard
  limit so the job cannot raise them (and seccomp denies ``setrlimit``/``prlimit``).
* ``process_limit`` - RLIMIT_NPROC caps processes and threads. It counts per uid, so it is only
  set when the job has a uid of its own.
* ``unprivileged_uid`` - when the sandbox runs as root, each worker leases its own uid from
  60000-64999 (unique on the machine, see :mod:`.uids`) and job children drop to it (groups
  cleared). It cannot signal, trace or write to anything of another uid.
* ``seccomp``, ``no_new_privs`` - filters compiled once by the parent (see
  :mod:`.seccomp_policy`), loaded by the zygote on itself (children inherit it) plus a small one
  per child: no sockets, no namespaces, no ptrace, no mounts, no leaving the process group, no
  raising limits, no ``io_uring``, no kernel-level calls.
* ``no_network`` - the filter denies ``socket``; with bubblewrap the job is also in a network
  namespace with nothing but a downed loopback (``net_namespace``).
* ``pid_namespace``, ``ipc_namespace``, ``mount_namespace`` - with bubblewrap the whole worker
  runs in new namespaces, so jobs cannot see host processes (nor the trusted parent). Without
  it, a zygote whose jobs' uid cannot reach the Python installation (one under ``/root``) makes
  a mount namespace that shows them only that, read-only (see :func:`.confinement.uid_mounts`).
* ``filesystem_view``, ``readonly_host`` - with bubblewrap the worker's root is an empty tmpfs with
  read-only ``/usr``, the Python installation (its ``site-packages`` hidden), the linker cache
  and the worker files. The package's data files, ``/etc``, home directories, the checkout and
  the host's ``/tmp`` do not exist there; nothing outside the scratch directory is writable.
* ``private_scratch`` - each job gets a fresh 0700 directory (its cwd, ``HOME`` and ``TMPDIR``),
  owned by its uid, removed with everything in it after the job. Under bubblewrap it lives on a
  size-capped tmpfs private to the worker, so filling it cannot fill the host disk.
* ``scrubbed_env`` - the environment is replaced by ``PATH``, ``HOME``, ``TMPDIR``, ``PWD``,
  ``LANG``, ``PYTHONHASHSEED`` and ``PYTHONIOENCODING``.
* ``closed_stdin`` - function-mode jobs read an empty stdin; stdio jobs read their input only.
* ``output_cap`` - stdout and stderr go to pipes read by the parent, which keeps at most
  ``Limits.max_output_bytes`` and discards the rest.

After every job the zygote kills what is left (the group, then every process in the worker's pid
namespace, or every process of the worker's uid without one), removes the scratch directory and
the parent closes all pipe ends: no leftover processes, files or descriptors.

Besides these layers, each job child counts what its program attempts (signals, spawning, files
outside the scratch directory, network, ``ctypes``, audit-hook or trace tampering) with a Python
audit hook and reports the totals as ``audit_*`` entries of ``JobResult.events``. That is
telemetry from inside the untrusted process, for the reward-hacking monitor only: it enforces
nothing and decides no verdict (see :mod:`.runner`).

The sandbox refuses to start when a required layer is missing (default
:data:`~codea1_env.sandbox.layers.DEFAULT_REQUIRED_LAYERS`: ``process_group``, ``rlimits`` and
``seccomp``). Opt out with ``LocalSandbox(require=())`` or ``CODEA1_SANDBOX_REQUIRE=none`` (or
name your own minimum, comma-separated, in either place).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from codea1_env.sandbox.base import IsolationReport, Limits, SandboxUnavailable
from codea1_env.sandbox.child import WorkerBroken, limits_message
from codea1_env.sandbox.confinement import (
    ConfinementUnavailable,
    LaunchPlan,
    plan_launch,
    uid_mounts,
)
from codea1_env.sandbox.driver import ZygoteClient, job_environment, zygote_config
from codea1_env.sandbox.layers import (
    DEFAULT_REQUIRED_LAYERS,
    REQUIRE_ENV,
    layers_from_probes,
    python_versions,
    resolve_required,
)
from codea1_env.sandbox.pool import PooledSandbox, WorkerPool
from codea1_env.sandbox.seccomp_policy import SeccompPrograms, compile_policy_or_none
from codea1_env.sandbox.uids import UidLease, lease_uids

__all__ = ["DEFAULT_PREIMPORT", "DEFAULT_REQUIRED_LAYERS", "LocalSandbox", "job_environment"]

DEFAULT_PREIMPORT: tuple[str, ...] = (
    "typing",
    "collections",
    "itertools",
    "functools",
    "math",
    "re",
    "heapq",
    "bisect",
    "string",
    "random",
    "operator",
    "copy",
    "fractions",
    "decimal",
)
"""Modules imported once by each zygote so that jobs importing them start instantly."""


class _LocalWorker:
    """One zygote process (inside bubblewrap or bare) and its control connection."""

    def __init__(self, name: str, plan: LaunchPlan, config: dict[str, Any], timeout_s: float):
        self.name = name
        self.plan = plan
        self.config = config
        self.timeout_s = timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self.facts: dict[str, Any] = {}
        self.cpu: int | None = None  # the core its whole process tree is pinned to
        self._client: ZygoteClient | None = None
        self._log: IO[bytes] | None = None

    @property
    def client(self) -> ZygoteClient:
        if self._client is None:
            raise SandboxUnavailable(f"{self.name} is not running")
        return self._client

    def launch(self) -> None:
        """Start the process (the handshake follows in :meth:`handshake`)."""
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._log = tempfile.TemporaryFile(prefix="codea1-worker-log-")
        try:
            self.process = subprocess.Popen(
                [*self.plan.argv, "--fd", str(child_end.fileno())],
                pass_fds=(child_end.fileno(),),
                env=self.plan.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                start_new_session=True,
            )
        except OSError as exc:
            parent_end.close()
            raise SandboxUnavailable(f"{self.name}: cannot start the worker: {exc}") from None
        finally:
            child_end.close()
        self._client = ZygoteClient(parent_end, self.name)

    def handshake(self) -> dict[str, Any]:
        """Configure the zygote and return its probe facts."""
        try:
            self.facts = self.client.handshake(self.config, self.timeout_s)
        except (WorkerBroken, OSError) as exc:
            detail = self.log_tail()
            self.stop()
            raise SandboxUnavailable(f"{self.name} failed to start: {exc}. {detail}") from None
        return self.facts

    def pin(self, cores: set[int]) -> None:
        """Keep the worker (launcher, zygote, and so every job child it forks) on ``cores``.

        Done after the handshake, before any job child exists; children inherit it.

        Raises:
            OSError: the affinity of a worker process cannot be set.
        """
        for pid in self.tree_pids():
            try:
                os.sched_setaffinity(pid, cores)
            except ProcessLookupError:
                continue  # a probe child that just exited

    def log_tail(self) -> str:
        """The last lines the worker process wrote to stderr."""
        if self._log is None:
            return ""
        self._log.seek(0)
        text = self._log.read().decode("utf-8", "replace").strip()
        return f"worker stderr: {text[-2000:]}" if text else ""

    def restart(self) -> None:
        self.stop()
        self.launch()
        self.handshake()
        if self.cpu is not None:
            try:
                self.pin({self.cpu})
            except OSError:
                self.cpu = None  # it worked at start; floating is still correct

    def stop(self) -> None:
        tree = self.tree_pids()[1:]
        if self._client is not None:
            self._client.quit()
            self._client = None
        if self.process is not None:
            try:
                self.process.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5.0)
            self.process = None
        # The launcher can be reaped a moment before the processes of its namespace are gone.
        _wait_gone(tree, 2.0)
        if self._log is not None:
            self._log.close()
            self._log = None

    def tree_pids(self) -> list[int]:
        """Host pids of the worker process and all its descendants."""
        if self.process is None:
            return []
        return process_tree(self.process.pid)

    def server_pids(self) -> list[int]:
        """:meth:`tree_pids` down to the zygote: its forked children (jobs, spare) left out.

        The launchers (bubblewrap, unshare) form a chain whose first Python process is the
        zygote; :func:`process_tree` lists a chain in order, and every process after the zygote
        descends from it.
        """
        tree = self.tree_pids()
        for at, pid in enumerate(tree):
            if _runs_python(pid):
                return tree[: at + 1]
        return tree


def process_tree(root: int) -> list[int]:
    """``root`` and the pids of all its live descendants (read from ``/proc``)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _proc_stat(int(entry))
        if len(fields) > 1:
            parents[int(entry)] = int(fields[1])
    found, frontier = [root], [root]
    while frontier:
        current = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == current and pid not in found:
                found.append(pid)
                frontier.append(pid)
    return found


def _runs_python(pid: int) -> bool:
    """The process's command line starts with a Python interpreter (not a launcher)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            first = fh.read().split(b"\0", 1)[0]
    except OSError:
        return False
    return os.path.basename(first).startswith(b"python")


def _wait_gone(pids: list[int], timeout_s: float) -> None:
    """Wait (at most ``timeout_s``) until none of ``pids`` runs any more (gone or a zombie)."""
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while time.monotonic() < deadline and _proc_stat(pid)[:1] not in ([], [b"Z"]):
            time.sleep(0.002)


def _proc_stat(pid: int) -> list[bytes]:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid...); [] if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _canaries() -> tuple[list[list[Any]], list[str]]:
    """Host files a confined job must not see, and host directories it must not write.

    Files are ``[path, st_dev, st_ino]``: a path that leads elsewhere inside the sandbox (such as
    the sandbox's own ``/tmp`` when the host's working directory is ``/tmp``) does not count.
    """
    package = str(Path(__file__).resolve().parents[1])
    exposed = {sys.base_prefix, sys.base_exec_prefix, "/usr"}
    candidates = [package, os.getcwd(), "/etc/passwd", os.path.expanduser("~")]
    hidden = []
    for path in candidates:
        if not os.path.exists(path) or path in hidden:
            continue
        if any(e == path or e.startswith(path.rstrip("/") + "/") for e in exposed):
            continue  # an ancestor of what must stay visible (for example "/" or the pyenv root)
        hidden.append(path)
    identified = []
    for path in hidden:
        info = os.lstat(path)
        identified.append([path, info.st_dev, info.st_ino])
    writable = [tempfile.gettempdir(), "/var/tmp", package, os.getcwd()]
    return identified, [w for w in dict.fromkeys(writable) if os.path.isdir(w)]


def _scratch_base() -> str | None:
    """Where job scratch directories go without bubblewrap: a tmpfs when there is one.

    Creating and removing a directory per job costs far less on tmpfs than on a journaling
    file system. None means the default temporary directory.
    """
    try:
        with open("/proc/mounts") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) > 2 and fields[1] == "/dev/shm" and fields[2] == "tmpfs":
                    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    except OSError:
        pass
    return None


def _pin(workers: list[_LocalWorker], cores: list[int], notes: list[str]) -> None:
    """Pin worker ``i`` to ``cores[i]`` (round robin); leave all floating if one cannot be."""
    try:
        for i, worker in enumerate(workers):
            worker.cpu = cores[i % len(cores)]
            worker.pin({worker.cpu})
    except OSError as exc:
        notes.append(f"workers not pinned to cores: {exc.strerror}")
        for worker in workers:
            worker.cpu = None
            with contextlib.suppress(OSError):
                worker.pin(set(cores))


def _stop_all(workers: list[_LocalWorker], leases: list[UidLease], scratch: list[str]) -> None:
    for worker in workers:
        worker.stop()
    for lease in leases:
        lease.release()
    for root in scratch:
        shutil.rmtree(root, ignore_errors=True)


class LocalSandbox(PooledSandbox):
    """Run jobs in warm, confined fork servers on this machine.

    Args:
        workers: Number of worker processes (parallel jobs); default ``os.cpu_count()``.
        require: Layers that must be active or the constructor raises
            :class:`SandboxUnavailable`. None means ``$CODEA1_SANDBOX_REQUIRE`` if set, else
            :data:`DEFAULT_REQUIRED_LAYERS`; ``()`` requires nothing.
        confinement: ``"auto"`` (bubblewrap if installed and a trial run of it works, else
            namespaces via ``unshare``, with the reason in the report's notes),
            ``"bwrap"``, ``"unshare"`` or ``"none"`` (see :mod:`.confinement`).
        tmp_mb: Size of each worker's private ``/tmp`` tmpfs under bubblewrap (all scratch
            directories of that worker live there).
        python_paths: Extra directories made visible read-only and importable by jobs (for
            example a directory of third-party packages); by default jobs see only the standard
            library.
        preimport: Modules each zygote imports once at start-up.
        start_timeout_s: How long a worker may take to start.
        pin_cpus: Keep each worker and its job children on a core of its own (worker ``i`` on
            the ``i``-th core this process may use). None (default) pins when the workers take
            every such core one to one: then nothing else is meant to run there, and pinning
            saves the migrations and cross-core TLB flushes of forking (measured on 2 cores:
            +15% jobs/s with 2 workers). With fewer workers than cores they float, leaving the
            scheduler free to share the cores with the caller (a trainer, say). A core that
            cannot be assigned leaves the workers floating, with a note in the report.
        prefork: Each worker forks its next job's child while the caller is still reading the
            last job's results, so a job does not wait for a fork (where the job seccomp filter
            loads; without it a clean-up may sweep every process, and children are forked per
            job). The spare holds nothing of any job. Measured on 2 cores: one env on all of
            HumanEval +8-31% episodes/s (``bench_env.py --source humaneval --compare-prefork``).

    Raises:
        SandboxUnavailable: a worker cannot start, or a required layer is missing (the message
            lists the missing layers, why, and how to opt out).
        ValueError: bad arguments.

    Example:
        >>> with LocalSandbox(workers=2) as sandbox:                       # doctest: +SKIP
        ...     [result] = sandbox.run([Job("def f(x): return x + 1", calls=("f(1)",))])
        >>> result.calls[0].value                                          # doctest: +SKIP
        2
    """

    def __init__(
        self,
        workers: int | None = None,
        require: Sequence[str] | None = None,
        *,
        confinement: str = "auto",
        tmp_mb: int = 256,
        python_paths: Sequence[str] = (),
        preimport: Sequence[str] = DEFAULT_PREIMPORT,
        start_timeout_s: float = 30.0,
        pin_cpus: bool | None = None,
        prefork: bool = True,
    ) -> None:
        count = (os.cpu_count() or 1) if workers is None else int(workers)
        if count < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if tmp_mb < 1:
            raise ValueError(f"tmp_mb must be at least 1, got {tmp_mb}")
        self.required = resolve_required(require)
        self._workers: list[_LocalWorker] = []
        self._leases: list[UidLease] = []
        self._scratch: list[str] = []  # the host scratch root, made only without bubblewrap
        self._closed = False
        self._finalizer = weakref.finalize(
            self, _stop_all, self._workers, self._leases, self._scratch
        )
        notes: list[str] = []
        programs = compile_policy_or_none(notes)
        if os.geteuid() == 0:
            try:
                self._leases.extend(lease_uids(count))
            except OSError as exc:
                notes.append(f"unprivileged_uid: no uid available: {exc}")
        try:
            self._start(
                count,
                confinement,
                tmp_mb,
                tuple(python_paths),
                preimport,
                programs,
                timeout_s=start_timeout_s,
                notes=notes,
                pin_cpus=pin_cpus,
                prefork=prefork,
            )
        except BaseException:
            self.close()
            raise

    def _start(
        self,
        count: int,
        confinement: str,
        tmp_mb: int,
        python_paths: tuple[str, ...],
        preimport: Sequence[str],
        programs: SeccompPrograms,
        *,
        timeout_s: float,
        notes: list[str],
        pin_cpus: bool | None,
        prefork: bool,
    ) -> None:
        for path in python_paths:
            if not os.path.isdir(path):
                raise ValueError(f"python_paths entry {path!r} is not a directory")
        try:
            plan = plan_launch(confinement, tmp_bytes=tmp_mb << 20, python_paths=python_paths)
        except (FileNotFoundError, ConfinementUnavailable) as exc:
            raise SandboxUnavailable(str(exc)) from None
        probe_limits = limits_message(Limits())
        hidden, writable = _canaries()
        for i in range(count):
            uid = self._leases[i].uid if i < len(self._leases) else None
            scratch_root = plan.scratch_root
            if scratch_root is None:
                scratch_root = os.path.join(self._host_scratch(), f"w{i}")
                os.mkdir(scratch_root, 0o711)
            mounts = None
            if uid is not None and plan.job_paths:  # no bubblewrap: the uid must reach Python
                mounts = uid_mounts(plan.job_paths, [scratch_root])
            config = zygote_config(
                uid=uid,
                programs=programs,
                scratch_root=scratch_root,
                plain_path=plan.plain_path,
                preimport=preimport,
                probe_limits=probe_limits,
                canaries=hidden,
                writable_canaries=writable,
                pid_namespace=plan.pid_namespace,
                unshare=plan.unshare,
                python_paths=python_paths,
                mounts=mounts,
                prefork=prefork,
            )
            self._workers.append(_LocalWorker(f"local worker {i}", plan, config, timeout_s))
        for worker in self._workers:
            worker.launch()
        facts = [(worker.handshake(), worker.config["uid"]) for worker in self._workers]
        cores = sorted(os.sched_getaffinity(0))
        if pin_cpus or (pin_cpus is None and count > 1 and count == len(cores)):
            _pin(self._workers, cores, notes)
        all_notes = list(plan.notes) + notes
        combined = layers_from_probes(
            facts,
            probe_limits,
            None if os.geteuid() == 0 else os.geteuid(),
            all_notes,
        )
        self._report = IsolationReport(
            backend=f"local/{plan.confinement}",
            layers=combined,
            notes=tuple(all_notes),
            python=python_versions(f.get("python") for f, _ in facts),
        )
        missing = self._report.missing(self.required)
        if missing:
            raise SandboxUnavailable(
                f"the local sandbox cannot provide required isolation layer(s) {missing}.\n"
                + "\n".join(f"  - {note}" for note in all_notes)
                + f"\nOpt out with LocalSandbox(require=()) or {REQUIRE_ENV}=none, or require "
                f"fewer layers (for example {REQUIRE_ENV}=process_group,rlimits)."
            )
        self._pool = WorkerPool(self._workers)

    def _host_scratch(self) -> str:
        if not self._scratch:
            root = tempfile.mkdtemp(prefix="codea1-sandbox-", dir=_scratch_base())
            os.chmod(root, 0o711)  # the job directories inside are private to their uid
            self._scratch.append(root)
        return self._scratch[0]

    # ----------------------------------------------------------------- Sandbox protocol
    # ----------------------------------------------------------------- introspection
    @property
    def cpus(self) -> tuple[int | None, ...]:
        """The core each worker is pinned to (None: it floats); see ``pin_cpus``."""
        return tuple(worker.cpu for worker in self._workers)

    @property
    def uids(self) -> tuple[int, ...]:
        """The uids job children run as (empty when not running as root)."""
        return tuple(lease.uid for lease in self._leases)

    def server_rss_kb(self) -> list[int]:
        """Resident memory (KiB) of each idle worker: the zygote plus its launcher processes.

        The zygote's children (the waiting spare, running jobs) are left out: they share its
        pages copy-on-write, and their resident sets would count those pages again.
        """
        return [sum(_rss_kb(pid) for pid in worker.server_pids()) for worker in self._workers]

    @property
    def scratch_root(self) -> str | None:
        """The host directory of job scratch directories (None under bubblewrap: private tmpfs)."""
        return self._scratch[0] if self._scratch else None

    def worker_pids(self) -> list[int]:
        """Host pids of the worker processes: launchers and zygotes, not their children.

        A zygote's children (running jobs, the waiting spare) come and go with every job; the
        zygote's CPU time includes theirs once they are reaped.
        """
        return [pid for worker in self._workers for pid in worker.server_pids()]
