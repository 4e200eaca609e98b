"""Sandboxed execution of untrusted programs: jobs in, plain values out (see :mod:`.base`).

Backends: :class:`LocalSandbox` (default; a warm fork server per core), ``DockerSandbox`` (one
container per worker; the ``docker`` extra) and ``RaySandbox`` (a pool of actors running the local
backend; the ``ray`` extra), all built by :func:`make_sandbox`. What is isolated and how:
``ISOLATION.md`` beside this file.
"""

from codea1_env.sandbox.base import (
    CallResult,
    CallStatus,
    IsolationReport,
    Job,
    JobResult,
    Limits,
    Sandbox,
    SandboxUnavailable,
)
from codea1_env.sandbox.factory import BACKENDS, make_sandbox
from codea1_env.sandbox.layers import DEFAULT_REQUIRED_LAYERS, LAYERS, REQUIRE_ENV
from codea1_env.sandbox.local import LocalSandbox

__all__ = [
    "BACKENDS",
    "DEFAULT_REQUIRED_LAYERS",
    "LAYERS",
    "REQUIRE_ENV",
    "CallResult",
    "CallStatus",
    "IsolationReport",
    "Job",
    "JobResult",
    "Limits",
    "LocalSandbox",
    "Sandbox",
    "SandboxUnavailable",
    "make_sandbox",
]
