"""How a local worker process is started: inside bubblewrap, in its own namespaces, or bare.

``"bwrap"`` starts the whole worker (zygote and every job child it forks) in one bubblewrap
sandbox: new network, pid, IPC, UTS and cgroup namespaces and a new mount namespace whose root is
an empty tmpfs holding, read-only, only ``/usr`` (with the usual ``/bin``, ``/lib`` symlinks), the
Python installation with its ``site-packages`` directories hidden, the dynamic-linker cache and
the worker files (:data:`WORKER_MODULES` and the plain-data codec); plus a private ``/dev``,
``/proc`` and a size-capped ``/tmp``. The package's data files, the host's home directories,
``/etc`` and every other path simply do not exist there.

``"unshare"`` starts the worker bare and lets the zygote move itself into new network, IPC and UTS
namespaces with ``unshare(2)`` (as root; other users through a user namespace). ``"none"`` adds no
namespace for isolation (but see :func:`uid_mounts`). ``"auto"`` picks the first that works, in
that order: a ``bwrap`` binary is *run* once (:func:`bwrap_failure`) before it is trusted, so one
that exists but cannot work (user namespaces refused, as in many containers, or not a binary at
all) leaves the worker on the ``"unshare"`` path, with the reason in the isolation report's notes.

Without bubblewrap, a job child that drops to its own uid may be unable to reach the Python
installation (an interpreter under a private home directory such as ``/root``, mode 0700).
:func:`uid_mounts` then names what the zygote mounts in a mount namespace of its own: a
read-only, empty tmpfs over the private ancestor, holding nothing but read-only bind mounts of the
directories jobs need (see ``ISOLATION.md``).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CONFINEMENTS",
    "SANDBOX_DIR",
    "WORKER_MODULES",
    "ConfinementUnavailable",
    "LaunchPlan",
    "bwrap_failure",
    "bwrap_path",
    "hidden_python_dirs",
    "usable_bwrap",
    "plan_launch",
    "python_prefixes",
    "uid_mounts",
    "worker_files",
]

CONFINEMENTS = ("auto", "bwrap", "unshare", "none")
"""Accepted values of the ``confinement`` option."""
WORKER_MODULES = (
    "entry.py",
    "protocol.py",
    "zygote.py",
    "confine.py",
    "probe.py",
    "runner.py",
    "tracer.py",
)
"""The standard-library-only modules that run inside a worker (entry script first), all in
:mod:`codea1_env.sandbox.worker`."""
SANDBOX_DIR = "/sandbox"
"""Where the worker files appear inside bubblewrap."""
_WORKER_ENV = {"PYTHONHASHSEED": "0", "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
BWRAP_PROBE_TIMEOUT_S = 10.0
"""How long the trial run of ``bwrap`` may take before it counts as unable to run."""


class ConfinementUnavailable(OSError):
    """The confinement asked for explicitly (``"bwrap"``) exists but cannot run here."""


@dataclass(frozen=True)
class LaunchPlan:
    """A command that starts one worker, and what it provides.

    Attributes:
        argv: Command line up to (not including) the worker's ``--fd N`` arguments.
        env: Complete environment of the worker process.
        confinement: ``"bwrap"``, ``"unshare"`` or ``"none"``.
        plain_path: Path of the plain-data codec as the worker sees it.
        scratch_root: Directory (as the worker sees it) under which job scratch dirs are made;
            None when the backend must provide host directories (no private ``/tmp``).
        pid_namespace: The worker runs in its own pid namespace.
        unshare: Namespace groups the zygote should ``unshare(2)`` itself into.
        notes: Human-readable remarks for the isolation report.
        job_paths: Without bubblewrap, the host directories jobs read (the Python installation
            and ``python_paths``): what :func:`uid_mounts` must keep within the jobs' reach.
    """

    argv: tuple[str, ...]
    env: dict[str, str]
    confinement: str
    plain_path: str
    scratch_root: str | None
    pid_namespace: bool
    unshare: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = field(default=())
    job_paths: tuple[str, ...] = ()


def worker_files() -> tuple[Path, ...]:
    """The files a worker runs: the entry script first, its sibling modules, the plain codec last.

    Inside the sandbox they all sit in one directory (:data:`SANDBOX_DIR`), so the entry script
    imports its siblings by their top-level names.
    """
    here = Path(__file__).resolve().parent / "worker"
    return (*(here / name for name in WORKER_MODULES), here / "plain.py")


def python_binary() -> str:
    """The real interpreter behind ``sys.executable`` (venv links resolved)."""
    return os.path.realpath(sys.executable)


def bwrap_path() -> str | None:
    """Path of an installed ``bwrap`` or None (``CODEA1_BWRAP`` overrides the lookup).

    Installed is not usable: :func:`plan_launch` also runs it once (:func:`bwrap_failure`).
    """
    candidate = os.environ.get("CODEA1_BWRAP") or shutil.which("bwrap")
    if not candidate or not os.access(candidate, os.X_OK) or not os.path.isfile(candidate):
        return None
    return candidate


_BWRAP_TRIALS: dict[tuple[Any, ...], str | None] = {}


def usable_bwrap() -> str | None:
    """:func:`bwrap_path` if the worker's bubblewrap command also runs here, else None.

    What ``confinement="auto"`` will use; an installed ``bwrap`` that cannot run (user
    namespaces refused, not a binary) gives None.
    """
    bwrap = bwrap_path()
    if bwrap is None:
        return None
    plan = _bwrap_plan(bwrap, 256 << 20, (), os.geteuid() == 0)
    return bwrap if bwrap_failure(plan.argv) is None else None


def bwrap_failure(argv: Sequence[str]) -> str | None:
    """Run a worker's bubblewrap command once with a trivial program; why it fails, or None.

    ``argv`` is a bubblewrap launch command (:attr:`LaunchPlan.argv` of a ``"bwrap"`` plan):
    everything before its ``--`` (namespaces, mounts, capabilities) is kept, and the interpreter
    checks that it sees the worker files. Results are cached per command and per identity of the
    ``bwrap`` file, so a process pays for the trial once (a few milliseconds).
    """
    command = list(argv)
    cut = command.index("--") if "--" in command else len(command)
    check = f"import os, sys; sys.exit(0 if os.path.isfile({SANDBOX_DIR + '/entry.py'!r}) else 3)"
    trial = [*command[:cut], "--", python_binary(), "-S", "-s", "-B", "-c", check]
    try:
        info = os.stat(command[0])
        key: tuple[Any, ...] = (tuple(trial), info.st_dev, info.st_ino, info.st_mtime_ns)
    except OSError as exc:
        return f"cannot stat {command[0]}: {exc.strerror}"
    if key not in _BWRAP_TRIALS:
        _BWRAP_TRIALS[key] = _try_bwrap(trial)
    return _BWRAP_TRIALS[key]


def _try_bwrap(trial: list[str]) -> str | None:
    try:
        done = subprocess.run(
            trial,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=BWRAP_PROBE_TIMEOUT_S,
            start_new_session=True,
            check=False,
        )
    except OSError as exc:
        return f"cannot execute it: {exc.strerror or exc}"
    except subprocess.TimeoutExpired:
        return f"a trial run took over {BWRAP_PROBE_TIMEOUT_S:g} s"
    if done.returncode == 0:
        return None
    text = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()
    detail = text[-1][:300].rstrip(".") if text else "no message"
    return f"a trial run exited with status {done.returncode}: {detail}"


def python_prefixes() -> list[str]:
    """The directories of the Python installation that jobs need (interpreter, stdlib)."""
    python = python_binary()
    prefixes = [sys.base_prefix, sys.base_exec_prefix, os.path.dirname(os.path.dirname(python))]
    return list(dict.fromkeys(os.path.realpath(p) for p in prefixes))


def _private_ancestor(path: str) -> str | None:
    """The topmost strict ancestor of ``path`` that other users cannot traverse (no ``o+x``)."""
    parts = Path(path).parts
    for depth in range(2, len(parts)):
        ancestor = str(Path(*parts[:depth]))
        try:
            mode = os.stat(ancestor).st_mode
        except OSError:
            return None
        if not mode & stat.S_IXOTH:
            return ancestor
    return None


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def uid_mounts(read_only: Sequence[str], writable: Sequence[str] = ()) -> dict[str, list[str]]:
    """What a worker without bubblewrap mounts so that its jobs' uid reaches ``read_only`` paths.

    A path is out of reach when one of its ancestors is not traversable by other users (a
    Python installation in ``/root``, mode 0700). For each such topmost ancestor (a *cover*) the
    zygote, in a mount namespace of its own, mounts an empty read-only tmpfs (mode 0755) over it
    and binds back into it, and only into it, the paths below it that the worker needs:
    ``read_only`` read-only, ``writable`` (the job scratch root) as they are. The site-packages
    directories found in there are hidden, as under bubblewrap. The rest of the private directory
    (the home directory's files) is then absent for the jobs and for the zygote alike.

    Args:
        read_only: Directories jobs read (the Python installation, ``python_paths``).
        writable: Directories the zygote writes after the mounts (the scratch root).

    Returns:
        ``{"covers": [...], "read_only": [...], "writable": [...], "hide": [...]}``, every list
        empty when nothing is out of reach.
    """
    covers: list[str] = []
    for path in [*read_only, *writable]:
        cover = _private_ancestor(os.path.realpath(path))
        if cover is not None and cover not in covers:
            covers.append(cover)
    under = [c for c in covers if not any(o != c and _within(c, o) for o in covers)]

    def needed(paths: Sequence[str]) -> list[str]:
        real = [os.path.realpath(p) for p in paths if os.path.isdir(p)]
        return list(dict.fromkeys(p for p in real if any(_within(p, c) for c in under)))

    ro = needed(read_only)
    ro = [p for p in ro if not any(o != p and _within(p, o) for o in ro)]  # outermost only
    rw = [p for p in needed(writable) if p not in ro]
    hide = [h for h in hidden_python_dirs() if any(_within(h, p) and h != p for p in ro)]
    return {"covers": under if ro or rw else [], "read_only": ro, "writable": rw, "hide": hide}


def hidden_python_dirs() -> list[str]:
    """Existing site-packages directories of the base interpreter (hidden inside bubblewrap)."""
    found: list[str] = []
    base_vars = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    for scheme in sysconfig.get_scheme_names():
        if not scheme.startswith("posix"):
            continue
        try:
            paths = sysconfig.get_paths(scheme=scheme, vars=base_vars)
        except KeyError:
            continue
        for key in ("purelib", "platlib"):
            path = paths.get(key)
            if path and os.path.isdir(path) and path not in found:
                found.append(path)
    version = f"python{sys.version_info.major}"
    for path in (f"/usr/lib/{version}/dist-packages", f"/usr/local/lib/{version}/dist-packages"):
        if os.path.isdir(path) and path not in found:
            found.append(path)
    return found


def _bwrap_supports_size(bwrap: str) -> bool:
    try:
        out = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in out.stdout + out.stderr


def _root_entries() -> list[str]:
    """``/bin``-style top-level entries: symlinks are recreated, directories bound."""
    args: list[str] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _traversable_parents(path: str, made: set[str]) -> list[str]:
    """``--dir`` arguments that create ``path``'s ancestors world-traversable (mode 0755).

    bubblewrap copies the host's modes for the directories it creates on the way to a bind
    mount, so an installation under ``/root`` (mode 0700) would be unreachable for the job's uid.
    """
    args: list[str] = []
    parts = Path(path).parts
    for depth in range(2, len(parts)):
        parent = str(Path(*parts[:depth]))
        if parent not in made:
            made.add(parent)
            args += ["--perms", "0755", "--dir", parent]
    return args


def _bwrap_plan(
    bwrap: str, tmp_bytes: int, python_paths: tuple[str, ...], is_root: bool
) -> LaunchPlan:
    args = [
        bwrap,
        "--unshare-ipc",
        "--unshare-pid",
        "--as-pid-1",  # the zygote is the namespace's init: no reaper a job could reach
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
    ]
    if is_root:
        args += ["--cap-drop", "ALL"]
        for cap in ("SETUID", "SETGID", "KILL", "CHOWN", "DAC_OVERRIDE", "FOWNER"):
            args += ["--cap-add", f"CAP_{cap}"]
    else:
        args += ["--unshare-user"]
    args += ["--ro-bind", "/usr", "/usr", *_root_entries()]
    bound = ["/usr"]
    made: set[str] = set()
    for prefix in python_prefixes():
        if not any(prefix == b or prefix.startswith(b + os.sep) for b in bound):
            args += [*_traversable_parents(prefix, made), "--ro-bind", prefix, prefix]
            bound.append(prefix)
    for hidden in hidden_python_dirs():
        if any(hidden.startswith(b + os.sep) for b in bound):
            args += ["--tmpfs", hidden]
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    for module in worker_files():
        args += ["--ro-bind", str(module), f"{SANDBOX_DIR}/{module.name}"]
    args += [
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    if _bwrap_supports_size(bwrap):
        args += ["--size", str(tmp_bytes)]
        notes: tuple[str, ...] = ()
    else:
        notes = ("this bwrap has no --size: /tmp inside the sandbox is not size-capped",)
    args += ["--tmpfs", "/tmp"]
    for path in python_paths:  # after /tmp, which would hide a path below it
        args += [*_traversable_parents(path, made), "--ro-bind", path, path]
    args += ["--chdir", "/tmp", "--clearenv"]
    for key, value in _WORKER_ENV.items():
        args += ["--setenv", key, value]
    args += ["--", python_binary(), "-S", "-s", "-B", f"{SANDBOX_DIR}/entry.py"]
    return LaunchPlan(
        argv=tuple(args),
        env={"PATH": "/usr/bin:/bin"},
        confinement="bwrap",
        plain_path=f"{SANDBOX_DIR}/plain.py",
        scratch_root="/tmp",
        pid_namespace=True,
        notes=notes,
    )


def plan_launch(
    confinement: str,
    *,
    tmp_bytes: int = 256 << 20,
    python_paths: tuple[str, ...] = (),
) -> LaunchPlan:
    """Return how to start a worker under ``confinement`` (see the module docstring).

    Args:
        confinement: One of :data:`CONFINEMENTS`.
        tmp_bytes: Size cap of the sandbox's ``/tmp`` under bubblewrap.
        python_paths: Extra directories made visible read-only and importable by jobs.

    Raises:
        ValueError: unknown ``confinement``.
        FileNotFoundError: ``"bwrap"`` was asked for and no ``bwrap`` is installed.
        ConfinementUnavailable: ``"bwrap"`` was asked for and it cannot run here (``"auto"``
            then starts without it and says why in :attr:`LaunchPlan.notes`).
    """
    if confinement not in CONFINEMENTS:
        raise ValueError(f"confinement must be one of {CONFINEMENTS}, got {confinement!r}")
    is_root = os.geteuid() == 0
    bwrap = bwrap_path()
    if confinement == "bwrap" and bwrap is None:
        raise FileNotFoundError("bwrap not found (Debian/Ubuntu: apt-get install bubblewrap)")
    notes: tuple[str, ...] = ("bubblewrap not used: jobs see the host's file system",)
    if confinement in ("auto", "bwrap") and bwrap is not None:
        plan = _bwrap_plan(bwrap, tmp_bytes, python_paths, is_root)
        failure = bwrap_failure(plan.argv)
        if failure is None:
            return plan
        if confinement == "bwrap":
            raise ConfinementUnavailable(f"{bwrap} cannot run here: {failure}")
        notes = (
            f"bubblewrap ({bwrap}) cannot run here ({failure}), so it is not used: "
            "jobs see the host's file system",
        )
    files = worker_files()
    env = dict(_WORKER_ENV, PATH="/usr/bin:/bin")
    unshare: tuple[tuple[str, ...], ...] = ()
    if confinement in ("auto", "unshare"):
        unshare = (("net", "ipc", "uts"),) if is_root else (("user", "net", "ipc", "uts"),)
    elif not is_root:
        notes = (
            *notes,
            "confinement none as an ordinary user: jobs run under your uid and can reach your "
            "other processes (their /proc/PID/mem); use bubblewrap, unshare or root",
        )
    return LaunchPlan(
        argv=(python_binary(), "-S", "-s", "-B", str(files[0])),
        env=env,
        confinement="unshare" if unshare else "none",
        plain_path=str(files[-1]),
        scratch_root=None,
        pid_namespace=False,
        unshare=unshare,
        notes=notes,
        job_paths=(*python_prefixes(), *python_paths),
    )
