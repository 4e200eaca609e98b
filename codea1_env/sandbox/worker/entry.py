"""Entry point of a sandbox worker process: ``python -S -s -B entry.py --fd N | --connect PATH``.

Runs inside bubblewrap, namespaces or a container, with the standard library and the worker
files (this script, ``protocol.py``, ``zygote.py``, ``confine.py``, ``probe.py``, ``runner.py``,
``tracer.py``) next to each other; the plain data codec is loaded by path from the
configuration. ``--fd N`` uses an inherited ``SOCK_SEQPACKET`` socket (local backend);
``--connect PATH`` connects to a listening one (Docker backend, through a mounted directory). See
:mod:`.zygote` and :mod:`.runner` for what happens next.
"""

from __future__ import annotations

import builtins
import importlib.util
import os
import socket
import sys
import time

_TRUSTED_MODULES = ("protocol", "tracer", "runner", "confine", "probe", "zygote")
"""The worker files loaded with a private copy of ``builtins``, in order of their imports."""


def load_trusted_modules() -> None:
    """Import the worker modules with a private copy of ``builtins``, made before any job runs.

    Every function of a module resolves builtin names through the ``__builtins__`` of the module
    it was defined in; with a copy there, a program that patches or empties the real ``builtins``
    module (its own view, kept from call to call) cannot change how the runner and the plain-data
    codec report its outcomes. Nothing is copied per job.
    """
    private = dict(builtins.__dict__)
    here = os.path.dirname(os.path.abspath(__file__))
    for name in _TRUSTED_MODULES:
        spec = importlib.util.spec_from_file_location(name, os.path.join(here, f"{name}.py"))
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the worker module {name}")
        module = importlib.util.module_from_spec(spec)
        module.__dict__["__builtins__"] = private
        sys.modules[name] = module
        spec.loader.exec_module(module)


load_trusted_modules()

from protocol import receive_message, send_message  # noqa: E402
from zygote import Zygote  # noqa: E402


def _connect(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    deadline = time.monotonic() + 30.0
    while True:
        try:
            sock.connect(path)
            return sock
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def main(argv: list[str]) -> int:
    """Entry point: ``--fd N`` (inherited socket) or ``--connect PATH`` (listening socket)."""
    if len(argv) != 2 or argv[0] not in ("--fd", "--connect"):
        sys.stderr.write("usage: entry.py --fd N | --connect PATH\n")
        return 2
    if argv[0] == "--fd":
        control = socket.socket(fileno=int(argv[1]))
    else:
        control = _connect(argv[1])
    zygote = Zygote(control)
    config, _fds = receive_message(control)
    if config is None or config.get("op") != "config":
        return 3
    zygote.configure(config)
    send_message(control, {"op": "ready", "facts": zygote.probe(), "pid": os.getpid()})
    zygote.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
