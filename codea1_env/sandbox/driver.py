"""The trusted side of one worker: run jobs on a zygote and turn what children did into results.

A :class:`ZygoteClient` owns the control socket of one zygote (see :mod:`.zygote`) and runs one
job at a time, child by child (see :mod:`.child` for a single child's pipes, deadlines and
record validation).

Per-call semantics in function mode: the program's top level runs once per child, then the calls
in order. If the child dies, exits or times out during call ``i``, call ``i`` gets that status and
calls ``i+1..`` run in a fresh child (the top level runs again there). After
:data:`MAX_TIMEOUTS_PER_JOB` timed-out calls the remaining calls are marked TIMEOUT without
running. A top level that fails (does not compile, raises, exits, times out) makes every call
SETUP_FAILED, with the reason in ``JobResult.setup_error``. Stdio mode runs one child per input.

``JobResult.events`` counts what the trusted side saw: ``child_runs``, ``killed_by_timer`` (a
call's or the setup's time limit, on its CPU or wall clock), ``killed_by_signal`` (any other
signal), ``protocol_violations`` (malformed or out-of-order records), ``lingered_after_last_call``,
``not_run_after_timeouts``, ``stdout_truncated``/``stderr_truncated`` and, per non-OK status,
``calls_<status>`` (for example ``calls_early_exit``).

It also carries the runtime telemetry each child reported (see :mod:`.runner`), summed over the
job's children and capped at :data:`~.protocol.AUDIT_COUNT_CAP`, as ``audit_<key>`` for each key
of :data:`~.protocol.AUDIT_KEYS`: ``audit_kill``, ``audit_spawn``, ``audit_fs_write_outside``,
``audit_fs_read_outside``, ``audit_network``, ``audit_native``, ``audit_tamper``. Unlike the
other counters, these come from inside the untrusted process: best-effort evidence for the
monitor, never used for a verdict.
"""

from __future__ import annotations

import select
import socket
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from codea1_env.sandbox.base import CallResult, CallStatus, Job, JobResult
from codea1_env.sandbox.child import CappedBuffer, ChildRun, ChildSession, WorkerBroken
from codea1_env.sandbox.seccomp_policy import SeccompPrograms
from codea1_env.sandbox.worker.protocol import (
    AUDIT_COUNT_CAP,
    MAX_CONTROL_BYTES,
    MAX_ERROR_CHARS,
    ROUTINE_CONTROL_BYTES,
    receive_message,
    send_message,
)

__all__ = [
    "MAX_TIMEOUTS_PER_JOB",
    "WorkerBroken",
    "ZygoteClient",
    "job_environment",
    "zygote_config",
]

MAX_TIMEOUTS_PER_JOB = 3
"""After this many timed-out calls in one job, the rest are marked TIMEOUT without running."""


def job_environment() -> dict[str, str]:
    """The fixed environment of a job child (the zygote adds ``HOME``, ``TMPDIR``, ``PWD``)."""
    return {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONIOENCODING": "utf-8",
    }


def zygote_config(
    *,
    uid: int | None,
    programs: SeccompPrograms,
    scratch_root: str,
    plain_path: str,
    preimport: Sequence[str],
    probe_limits: dict[str, Any],
    canaries: Sequence[Any],
    writable_canaries: Sequence[str],
    pid_namespace: bool = True,
    unshare: Sequence[Sequence[str]] = (),
    python_paths: Sequence[str] = (),
    mounts: dict[str, list[str]] | None = None,
    prefork: bool = True,
) -> dict[str, Any]:
    """The configuration message a zygote gets before its first job (every backend's).

    Args:
        uid: The uid its job children drop to (also their gid), None to stay the worker's.
        programs: The compiled seccomp filters (empty: none).
        scratch_root: Where job scratch directories go, as the worker sees it.
        plain_path: The plain-data codec's path, as the worker sees it.
        preimport: Modules the zygote imports once.
        probe_limits: The rlimit message of the probe child.
        canaries: Paths (or ``[path, st_dev, st_ino]``) a job must not see.
        writable_canaries: Directories a job must not write.
        pid_namespace: The worker has a pid namespace of its own.
        unshare: Namespace groups the zygote ``unshare(2)``s itself into.
        python_paths: Extra import directories of jobs.
        mounts: What the zygote mounts so that its jobs' uid reaches the Python installation
            (see :func:`~codea1_env.sandbox.confinement.uid_mounts`); None or empty lists: none.
        prefork: Fork each next job's child ahead, while the parent reads the last job's results
            (the zygote does so only where the job seccomp filter loads; see
            :meth:`Zygote._fork_spare`). Saves a job the fork's latency, not its CPU.
    """
    return {
        "uid": uid,
        "gid": uid,
        "seccomp_worker_bpf": programs.worker.hex(),
        "seccomp_job_bpf": programs.job.hex(),
        "scratch_root": scratch_root,
        "pid_namespace": pid_namespace,
        "unshare": [list(group) for group in unshare],
        "plain_path": plain_path,
        "preimport": list(preimport),
        "python_paths": list(python_paths),
        "mounts": dict(mounts or {}),
        "env": job_environment(),
        "canaries": list(canaries),
        "writable_canaries": list(writable_canaries),
        "probe_limits": probe_limits,
        "prefork": bool(prefork),
    }


class ZygoteClient:
    """Runs jobs on one zygote. Not thread-safe: one job at a time."""

    def __init__(self, control: socket.socket, name: str = "worker") -> None:
        self.control = control
        self.name = name
        self._next_id = 0
        self._unsettled: set[int] = set()

    # ----------------------------------------------------------------- control
    def handshake(self, config: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send the configuration and return the zygote's probe facts."""
        send_message(self.control, dict(config, op="config"))
        reply = self._receive(timeout_s, MAX_CONTROL_BYTES)
        if reply.get("op") != "ready":
            raise WorkerBroken(f"{self.name}: unexpected reply to config: {reply!r}")
        facts: dict[str, Any] = reply.get("facts", {})
        return facts

    def request(self, op: str, timeout_s: float = 30.0) -> dict[str, Any]:
        """Send a no-argument control request (``"stats"``) and return the reply."""
        self.settle(timeout_s)
        send_message(self.control, {"op": op})
        while True:
            reply = self._receive(timeout_s)
            if reply.get("op") not in ("exit", "cpu"):  # a late answer to a CPU-time query
                return reply

    def settle(self, timeout_s: float = 30.0) -> None:
        """Wait until the zygote has reaped and cleaned up after every finished job.

        A job is complete for the parent once every record is in and the child's pipes are
        closed; the zygote reports the exit (after killing leftovers and removing the scratch
        directory) a moment later. The pool settles each worker at the end of a batch, so that
        no process or file of the batch outlives :meth:`Sandbox.run`.
        """
        deadline = time.monotonic() + timeout_s
        while self._unsettled:
            message = self._receive(max(0.0, deadline - time.monotonic()))
            if message.get("op") == "exit":
                self._unsettled.discard(message.get("id", -1))

    def _settled(self, job_id: int) -> None:
        self._unsettled.discard(job_id)

    def _receive(self, timeout_s: float, max_bytes: int = ROUTINE_CONTROL_BYTES) -> dict[str, Any]:
        ready, _, _ = select.select([self.control], [], [], timeout_s)
        if not ready:
            raise WorkerBroken(f"{self.name}: no answer within {timeout_s:.0f}s")
        try:
            message, _fds = receive_message(self.control, max_bytes=max_bytes)
        except (OSError, ValueError) as exc:
            raise WorkerBroken(f"{self.name}: control channel failed: {exc}") from None
        if message is None:
            raise WorkerBroken(f"{self.name}: the worker hung up")
        return message

    def quit(self) -> None:
        """Ask the zygote to exit (it also exits when the socket closes)."""
        try:
            send_message(self.control, {"op": "quit"})
        except OSError:
            pass
        self.control.close()

    # ----------------------------------------------------------------- jobs
    def run_job(self, job: Job) -> JobResult:
        """Run one job to completion (re-running children as needed) and return its result."""
        started = time.perf_counter()
        out = CappedBuffer(job.limits.max_output_bytes)
        err = CappedBuffer(job.limits.max_output_bytes)
        events: Counter[str] = Counter()
        if job.mode == "stdio":
            calls, setup_status, setup_error = self._stdio_job(job, err, events)
        else:
            calls, setup_status, setup_error = self._call_job(job, out, err, events)
        for call in calls:
            if call.status is not CallStatus.OK:
                events[f"calls_{call.status.value}"] += 1
        if out.dropped:
            events["stdout_truncated"] += 1
        if err.dropped:
            events["stderr_truncated"] += 1
        return JobResult(
            calls=tuple(calls),
            setup_status=setup_status,
            setup_error=setup_error,
            stdout=out.text(),
            stderr=err.text(),
            wall_s=time.perf_counter() - started,
            tag=job.tag,
            events=dict(events),
        )

    def _call_job(
        self, job: Job, out: CappedBuffer, err: CappedBuffer, events: Counter[str]
    ) -> tuple[list[CallResult], CallStatus, str]:
        n = len(job.calls)
        results: list[CallResult | None] = [None] * n
        start, timeouts, first = 0, 0, True
        setup_status, setup_error = CallStatus.OK, ""
        while True:
            run = self._run_child(job, start, None, out.limit - len(out.data))
            _merge(run, out, err, events)
            if not run.setup_ok:
                status, error = run.setup_outcome(job.limits)
                if first:
                    setup_status, setup_error = status, error
                reason = f"setup failed: {error}" if first else f"setup failed on re-run: {error}"
                for i in range(start, n):
                    results[i] = CallResult(CallStatus.SETUP_FAILED, error=reason[:MAX_ERROR_CHARS])
                break
            first = False
            results[start : start + len(run.results)] = run.results
            current = start + len(run.results)
            if current >= n:
                break
            status, error = run.death(job.limits)
            results[current] = CallResult(
                status, error=error, duration_s=run.tail_s, wall_s=run.tail_s
            )
            timeouts += status is CallStatus.TIMEOUT
            start = current + 1
            if start >= n:
                break
            if timeouts >= MAX_TIMEOUTS_PER_JOB:
                _skip_after_timeouts(results, start, events)
                break
        return [r or CallResult(CallStatus.NOT_RUN) for r in results], setup_status, setup_error

    def _stdio_job(
        self, job: Job, err: CappedBuffer, events: Counter[str]
    ) -> tuple[list[CallResult], CallStatus, str]:
        n = len(job.stdin_inputs)
        results: list[CallResult | None] = [None] * n
        timeouts = 0
        setup_status, setup_error = CallStatus.OK, ""
        for i, text in enumerate(job.stdin_inputs):
            if timeouts >= MAX_TIMEOUTS_PER_JOB:
                _skip_after_timeouts(results, i, events)
                break
            run = self._run_child(job, i, text, job.limits.max_value_bytes)
            _merge(run, None, err, events)
            if not run.setup_ok:
                setup_status, setup_error = run.setup_outcome(job.limits)
                for j in range(i, n):
                    results[j] = CallResult(
                        CallStatus.SETUP_FAILED, error=f"setup failed: {setup_error}"
                    )
                break
            if run.results:
                first_result = run.results[0]
                status, error = first_result.status, first_result.error
                duration, wall = first_result.duration_s, first_result.wall_s
            else:
                status, error = run.death(job.limits, exit_zero_ok=True)
                duration = wall = run.tail_s
            value = None
            if status is CallStatus.OK:
                if run.stdout.dropped:
                    status = CallStatus.NOT_PLAIN
                    error = f"stdout exceeded max_value_bytes ({job.limits.max_value_bytes})"
                else:
                    value = run.stdout.text()
            elif status is CallStatus.TIMEOUT:
                timeouts += 1
            results[i] = CallResult(status, value, error, duration, wall_s=wall)
        return [r or CallResult(CallStatus.NOT_RUN) for r in results], setup_status, setup_error

    def _run_child(self, job: Job, start: int, stdin_text: str | None, out_limit: int) -> ChildRun:
        self._next_id += 1
        session = ChildSession(
            self.control, self.name, self._next_id, job, start, stdin_text, out_limit
        )
        run = session.collect(on_other_exit=self._settled)
        if run.exit is None:
            self._unsettled.add(self._next_id)
        return run


def _merge(
    run: ChildRun, out: CappedBuffer | None, err: CappedBuffer, events: Counter[str]
) -> None:
    """Fold one child's output and trusted-side observations into the job's totals."""
    events["child_runs"] += 1
    if out is not None:
        if run.stdout.data:
            out.add(bytes(run.stdout.data))
        out.dropped += run.stdout.dropped
    if run.stderr.data:
        err.add(bytes(run.stderr.data))
    err.dropped += run.stderr.dropped
    if run.timed_out:
        events["killed_by_timer"] += 1
    if run.violation:
        events["protocol_violations"] += 1
    if run.lingered:
        events["lingered_after_last_call"] += 1
    exit_info = run.exit or {}
    if exit_info.get("signal") is not None and not run.timed_out and not run.lingered:
        events["killed_by_signal"] += 1
    for key, count in run.audit.items():
        name = f"audit_{key}"
        events[name] = min(AUDIT_COUNT_CAP, events[name] + count)


def _skip_after_timeouts(
    results: list[CallResult | None], start: int, events: Counter[str]
) -> None:
    reason = f"not run: {MAX_TIMEOUTS_PER_JOB} calls of this job timed out"
    for i in range(start, len(results)):
        results[i] = CallResult(CallStatus.TIMEOUT, error=reason)
        events["not_run_after_timeouts"] += 1
