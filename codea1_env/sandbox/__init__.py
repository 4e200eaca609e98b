"""Sandboxed execution of untrusted programs: jobs in, plain values out (see :mod:`.base`)."""

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

__all__ = [
    "CallResult",
    "CallStatus",
    "IsolationReport",
    "Job",
    "JobResult",
    "Limits",
    "Sandbox",
    "SandboxUnavailable",
]
