"""Sandboxed execution of untrusted programs: jobs in, plain values out (see :mod:`.base`).

Backends: :class:`LocalSandbox` (default; a warm fork server per core), ``DockerSandbox`` (one
container per worker; the ``docker`` extra) and ``RaySandbox`` (a pool of actors running the local
backend; the ``ray`` extra), all built by :func:`make_sandbox`. What is isolated and how:
``ISOLATION.md`` beside this file.

* :mod:`.base`: the interface every backend shares (jobs, limits, results);
* :mod:`.factory`: a backend by name;
* :mod:`.local`: the local backend, warm fork servers (zygotes), one per core;
* :mod:`.pool`: a batch of jobs run in parallel, one job per worker at a time;
* :mod:`.driver`: the trusted side of one worker;
* :mod:`.child`: the trusted side of one job child (pipes, deadlines, records);
* :mod:`.confinement`: how a worker process starts (bubblewrap, namespaces, or bare);
* :mod:`.layers`: the isolation layers and how a probe proves each active;
* :mod:`.seccomp_policy`: the job children's seccomp policy, compiled once by the parent;
* :mod:`.uids`: leases of unprivileged user ids, one per worker;
* :mod:`.docker_backend`: one container per worker, running the same zygote;
* :mod:`.ray_backend`: a pool of Ray actors, each running the local backend on its node;
* :mod:`.worker`: what runs inside the sandbox (the zygote, the job runner).
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
