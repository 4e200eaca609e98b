"""The wire protocol between the trusted parent, the zygote and job children (stdlib only).

This module is imported twice under two names: as ``codea1_env.sandbox.worker.protocol`` by the
trusted parent, and as the top-level ``protocol`` by the worker scripts inside the sandbox (which
see only the standard library and the worker files). It must therefore import nothing else.

* Control messages (parent <-> zygote) are JSON objects, one per ``SOCK_SEQPACKET`` packet, with
  descriptors attached to ``spawn`` messages (``SCM_RIGHTS``).
* Job headers (parent -> child, on the child's stdin pipe) and result records (child -> parent,
  on descriptor :data:`RESULT_FD`) are length-prefixed JSON frames: a 4-byte big-endian length,
  then the JSON text. Result values inside records are tagged JSON
  (:mod:`codea1_env.sandbox.worker.plain`).

Result records, as a child writes them:

* ``{"k": "setup", "i": -1, "s": STATUS, "e": ERROR}`` - the program's top level ran (or not);
* ``{"k": "call", "i": INDEX, "s": STATUS, "e": ERROR, "d": SECONDS, "v": VALUE}`` - one call,
  in order; ``d`` is how long the call took by the child's clock (the parent only keeps it within
  the interval its own clock allows);
* ``{"k": "audit", "c": {KEY: COUNT, ...}}`` - runtime telemetry: the child's running totals of
  the audit events its program raised (:data:`AUDIT_KEYS`), sent before a status record when
  they changed, and at once the first time a kind is seen. Audit records may come at any point
  before the last status record; they never advance the sequence nor reset a deadline. They are
  reported by the untrusted process itself, so they are best-effort monitoring data, never
  evidence for a verdict.

In a coverage job (header ``"coverage": true``) every setup and call record also carries
``"cov": [FROM, TO, FROM, TO, ...]``: the arcs of the program's own code traced since the previous
record (see ``tracer.py``), at most :data:`MAX_COVERAGE_ARCS` of them, every line number a
non-zero int within the program's line count (the parent rejects anything else as a malformed
record). Like audit counts they are reported by the untrusted process: data for coverage
metrics, never a verdict.
"""

from __future__ import annotations

import array
import builtins
import json
import os
import socket
import struct
from typing import Any

__all__ = [
    "AUDIT_COUNT_CAP",
    "AUDIT_KEYS",
    "AUDIT_RECORD",
    "CHILD_STATUSES",
    "COVERAGE_ARC_BYTES",
    "EXIT_RUNNER_ERROR",
    "EXIT_RUNNER_MEMORY",
    "FRAME",
    "MAX_CONTROL_BYTES",
    "MAX_COVERAGE_ARCS",
    "MAX_ERROR_CHARS",
    "RESULT_FD",
    "ROUTINE_CONTROL_BYTES",
    "pack_frame",
    "read_exact",
    "read_frame",
    "receive_message",
    "send_message",
    "send_packet",
]

FRAME = struct.Struct(">I")
"""Length prefix of job headers and result records."""
RESULT_FD = 3
"""Descriptor on which a job child writes its result records."""
MAX_CONTROL_BYTES = 1 << 20
"""Largest control message (the configuration carries the seccomp program)."""
ROUTINE_CONTROL_BYTES = 1 << 16
"""Largest control message after the handshake (``spawn``, ``kill``, ``exit``, ``stats``...).

Receiving into a buffer this size reuses heap memory; a :data:`MAX_CONTROL_BYTES` buffer is a
fresh ``mmap`` (and a page fault) for every message, on the path of every job."""
EXIT_RUNNER_ERROR = 70
"""Exit code of a child whose runner could not continue (for example, its result pipe broke)."""
EXIT_RUNNER_MEMORY = 71
"""Exit code of a child whose runner ran out of memory outside the untrusted code."""
CHILD_STATUSES = ("ok", "exception", "early_exit", "memory", "not_plain")
"""Statuses a child may report; timeouts and crashes are decided by the trusted side only."""
MAX_ERROR_CHARS = 1000
"""Longest error text a child reports."""
AUDIT_RECORD = "audit"
"""Record kind (``"k"``) of runtime telemetry records."""
AUDIT_KEYS = (
    "kill",
    "spawn",
    "fs_write_outside",
    "fs_read_outside",
    "network",
    "native",
    "tamper",
)
"""Kinds of audit events a child counts; the parent reports them as ``audit_<key>`` events."""
AUDIT_COUNT_CAP = 1_000_000
"""Largest count the parent accepts per kind and child (larger claims are clamped)."""
MAX_COVERAGE_ARCS = 1 << 15
"""Most arcs one record of a coverage job carries (the tracer sends no more; the parent accepts
no more)."""
COVERAGE_ARC_BYTES = 24
"""Record bytes the parent allows per arc of a coverage record, beyond a value's allowance."""


def pack_frame(payload: bytes) -> bytes:
    """Return ``payload`` with its 4-byte big-endian length prefix."""
    return FRAME.pack(len(payload)) + payload


def read_exact(fd: int, size: int) -> bytes:
    """Read exactly ``size`` bytes from ``fd`` (never more); raise EOFError when it ends early."""
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            raise EOFError(f"stream ended with {left} of {size} bytes missing")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def trusted_builtins() -> dict[str, Any]:
    """The builtins dictionary the trusted worker modules resolve names through.

    Inside a worker, ``entry.py`` loads its trusted modules with ``__builtins__`` set to a
    private copy of ``builtins.__dict__`` made before any job ran, so that a program that patches
    or empties the real ``builtins`` module changes only its own view. Returns that copy there;
    anywhere else, a fresh copy.
    """
    own = globals().get("__builtins__")
    if type(own) is dict and own is not builtins.__dict__:
        return own
    return dict(builtins.__dict__)


def read_frame(fd: int, max_bytes: int) -> bytes:
    """Read one length-prefixed frame from ``fd``."""
    (size,) = FRAME.unpack(read_exact(fd, FRAME.size))
    if size > max_bytes:
        raise ValueError(f"frame of {size} bytes exceeds {max_bytes}")
    return read_exact(fd, size)


_ENCODE_COMPACT = json.JSONEncoder(separators=(",", ":")).encode


def send_message(
    sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None
) -> None:
    """Send one JSON control message, with descriptors attached when given."""
    send_packet(sock, _ENCODE_COMPACT(message).encode(), fds)


def send_packet(sock: socket.socket, data: bytes, fds: list[int] | None = None) -> None:
    """Send one control message already encoded as compact JSON (see :func:`send_message`)."""
    if fds:
        sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.send(data)


def receive_message(
    sock: socket.socket, max_fds: int = 0, max_bytes: int = MAX_CONTROL_BYTES
) -> tuple[dict[str, Any] | None, list[int]]:
    """Receive one control message of at most ``max_bytes``; ``(None, [])`` at end of stream.

    A longer message is cut short (one message per packet) and so fails to decode.
    """
    if max_fds:
        data, fds, _flags, _addr = socket.recv_fds(sock, max_bytes, max_fds)
    else:
        data, fds = sock.recv(max_bytes), []
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("control message is not a JSON object")
    return message, list(fds)
