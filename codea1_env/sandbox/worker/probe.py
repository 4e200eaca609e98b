"""The isolation probe's payload: what a child confined like a job child can see of itself.

Runs inside the sandbox (loaded by ``entry.py`` as the top-level ``probe``; standard library
only). At start-up the zygote forks one child, confines it exactly as it confines job children
and calls :func:`observe` in it (see ``Zygote.probe``); the trusted parent turns the facts into
the isolation report (:mod:`codea1_env.sandbox.layers`). Observing only: nothing here confines.
"""

from __future__ import annotations

import errno
import os
import resource
import socket
import sys
from typing import Any

_NAMESPACES = ("net", "pid", "mnt", "ipc", "uts")


def _ns_inode(name: str) -> int:
    try:
        return os.stat(f"/proc/self/ns/{name}").st_ino
    except OSError:
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


def observe(config: dict[str, Any]) -> dict[str, Any]:
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
        "python": ".".join(map(str, sys.version_info[:3])),  # what runs the programs (the report)
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
