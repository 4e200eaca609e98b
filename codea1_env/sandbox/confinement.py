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
namespace at all. ``"auto"`` picks the first that works, in that order.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "CONFINEMENTS",
    "SANDBOX_DIR",
    "WORKER_MODULES",
    "LaunchPlan",
    "bwrap_path",
    "hidden_python_dirs",
    "plan_launch",
    "worker_files",
]

CONFINEMENTS = ("auto", "bwrap", "unshare", "none")
"""Accepted values of the ``confinement`` option."""
WORKER_MODULES = ("worker.py", "protocol.py", "zygote.py", "runner.py", "tracer.py")
"""The standard-library-only modules that run inside a worker (entry script first)."""
SANDBOX_DIR = "/sandbox"
"""Where the worker files appear inside bubblewrap."""
_WORKER_ENV = {"PYTHONHASHSEED": "0", "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}


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
    """

    argv: tuple[str, ...]
    env: dict[str, str]
    confinement: str
    plain_path: str
    scratch_root: str | None
    pid_namespace: bool
    unshare: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = field(default=())


def worker_files() -> tuple[Path, ...]:
    """The files a worker runs: the entry script first, its sibling modules, the plain codec last.

    Inside the sandbox they all sit in one directory (:data:`SANDBOX_DIR`), so the entry script
    imports its siblings by their top-level names.
    """
    here = Path(__file__).resolve().parent
    return (*(here / name for name in WORKER_MODULES), here.parent / "plain.py")


def python_binary() -> str:
    """The real interpreter behind ``sys.executable`` (venv links resolved)."""
    return os.path.realpath(sys.executable)


def bwrap_path() -> str | None:
    """Path of a usable ``bwrap`` or None (``CODEA1_BWRAP`` overrides the lookup)."""
    candidate = os.environ.get("CODEA1_BWRAP") or shutil.which("bwrap")
    if not candidate or not os.access(candidate, os.X_OK):
        return None
    return candidate


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
    python = python_binary()
    args = [
        bwrap,
        "--unshare-ipc",
        "--unshare-pid",
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
    prefixes = [sys.base_prefix, sys.base_exec_prefix, os.path.dirname(os.path.dirname(python))]
    for prefix in dict.fromkeys(prefixes):
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
    args += ["--", python, "-S", "-s", "-B", f"{SANDBOX_DIR}/worker.py"]
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
    """
    if confinement not in CONFINEMENTS:
        raise ValueError(f"confinement must be one of {CONFINEMENTS}, got {confinement!r}")
    is_root = os.geteuid() == 0
    bwrap = bwrap_path()
    if confinement == "bwrap" and bwrap is None:
        raise FileNotFoundError("bwrap not found (Debian/Ubuntu: apt-get install bubblewrap)")
    if confinement in ("auto", "bwrap") and bwrap is not None:
        return _bwrap_plan(bwrap, tmp_bytes, python_paths, is_root)
    files = worker_files()
    env = dict(_WORKER_ENV, PATH="/usr/bin:/bin")
    unshare: tuple[tuple[str, ...], ...] = ()
    if confinement in ("auto", "unshare"):
        unshare = (("net", "ipc", "uts"),) if is_root else (("user", "net", "ipc", "uts"),)
    notes = ("bubblewrap not used: jobs see the host's file system through their own uid",)
    return LaunchPlan(
        argv=(python_binary(), "-S", "-s", "-B", str(files[0])),
        env=env,
        confinement="unshare" if unshare else "none",
        plain_path=str(files[-1]),
        scratch_root=None,
        pid_namespace=False,
        unshare=unshare,
        notes=notes,
    )
