"""Run programs on inputs for the scripted testers, always in a sandbox.

Everything a scripted tester runs is untrusted text: the candidate's code, and the problem's
ground-truth (GT) solution too, which may come from a user's ``reset(options={"problem": ...})``
or a ``jsonl:`` file. So nothing here executes, evaluates or imports program text in this
process. :class:`ProgramRunner` sends each program with its inputs to a sandbox, in one batched call
per batch of inputs, and memoises the plain values that come back. The sandbox is, in order of
preference, the one handed in, the sandbox of a :class:`~codea1_env.scoring.referee.Referee` handed
in (shared with an env, started lazily by the referee), or one the runner starts itself on first
use with :func:`codea1_env.sandbox.factory.make_sandbox` and stops in :meth:`ProgramRunner.close`.

A run that raised, timed out, exited, crashed or returned a value that is not plain data is
:data:`RUN_FAILED`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codea1_env.sandbox.base import CallResult, Job, Limits, Sandbox, SandboxUnavailable
from codea1_env.scoring.referee import Referee


class _Failed:
    def __repr__(self) -> str:
        return "<failed>"


RUN_FAILED: Any = _Failed()
"""Marks a run that raised, timed out, exited or returned a non-plain value."""

OWN_BACKEND = "local"
"""The backend a runner starts for itself when no sandbox or referee is handed in."""


@dataclass(frozen=True)
class ProgramRun:
    """One program and the inputs (call expressions, or stdin texts) it may be run on."""

    program: str
    stdio: bool
    inputs: tuple[str, ...]


_Key = tuple[bool, str, str]
"""(stdio mode, program, call expression or stdin text): what one memoised output is of."""


class ProgramRunner:
    """Outputs of programs on inputs: memoised, every one computed in a sandbox.

    Args:
        sandbox: A sandbox to use (not closed by :meth:`close`); a referee whose sandbox is used
            (the referee starts and stops it); or None: start one lazily (closed by
            :meth:`close`).
        limits: Limits of every job.
        owner: Who runs the programs, named in errors (for example ``"BoundaryTester"``).
        memo_size: Most outputs remembered (least recently used ones are dropped).

    """

    def __init__(
        self,
        sandbox: Sandbox | Referee | None,
        limits: Limits,
        owner: str = "a scripted tester",
        memo_size: int = 1 << 16,
    ) -> None:
        if sandbox is not None and not isinstance(sandbox, (Referee, Sandbox)):
            raise TypeError(f"sandbox must be a Sandbox, a Referee or None, got {type(sandbox)}")
        self._given = sandbox
        self._own: Sandbox | None = None
        self._lock = threading.Lock()
        self.limits = limits
        self.owner = owner
        self.memo_size = memo_size
        self._memo: OrderedDict[_Key, Any] = OrderedDict()

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox programs run in (started on first use when none was handed in).

        Raises:
            SandboxUnavailable: no sandbox was handed in and the local one cannot start.
        """
        if isinstance(self._given, Referee):
            return self._given.sandbox
        if self._given is not None:
            return self._given
        with self._lock:
            if self._own is None:
                self._own = _start_own_sandbox(self.owner)
            return self._own

    @property
    def owns_sandbox(self) -> bool:
        """True when this runner started its sandbox (and :meth:`close` stops it)."""
        return self._own is not None

    def close(self) -> None:
        """Stop the sandbox this runner started, if any (a later run starts a new one)."""
        with self._lock:
            own, self._own = self._own, None
        if own is not None:
            own.close()

    def start(self, runs: Sequence[ProgramRun]) -> None:
        """Run every input of ``runs`` not seen before, in one batched sandbox call."""
        jobs: list[Job] = []
        job_keys: list[list[_Key]] = []
        scheduled: set[_Key] = set()
        for run in runs:
            keys = [(run.stdio, run.program, item) for item in run.inputs]
            new = [k for k in dict.fromkeys(keys) if k not in self._memo and k not in scheduled]
            scheduled.update(new)
            if new:
                jobs.append(self._job(run.program, run.stdio, [item for _, _, item in new]))
                job_keys.append(new)
        if not jobs:
            return
        results = self.sandbox.run(jobs)
        for keys_of_job, result in zip(job_keys, results, strict=True):
            self._store(keys_of_job, result.calls)

    def value(self, run: ProgramRun, item: str) -> Any:
        """Return the output of ``run.program`` on ``item`` (``RUN_FAILED`` when it failed)."""
        key = (run.stdio, run.program, item)
        if key not in self._memo:  # evicted since :meth:`start`, or never started: run it alone
            [result] = self.sandbox.run([self._job(run.program, run.stdio, [item])])
            self._store([key], result.calls)
        self._memo.move_to_end(key)
        return self._memo[key]

    def _job(self, program: str, stdio: bool, inputs: Sequence[str]) -> Job:
        if stdio:
            return Job(program, stdin_inputs=tuple(inputs), limits=self.limits)
        return Job(program, calls=tuple(inputs), limits=self.limits)

    def _store(self, keys: Sequence[_Key], calls: Sequence[CallResult]) -> None:
        for i, key in enumerate(keys):
            ok = i < len(calls) and calls[i].ok
            self._memo[key] = calls[i].value if ok else RUN_FAILED
            self._memo.move_to_end(key)
        while len(self._memo) > self.memo_size:
            self._memo.popitem(last=False)


def _start_own_sandbox(owner: str) -> Sandbox:
    """Start the runner's own sandbox, or say clearly what failed and what to do instead."""
    from codea1_env.sandbox.factory import make_sandbox

    try:
        return make_sandbox(OWN_BACKEND)
    except Exception as exc:
        raise SandboxUnavailable(
            f"{owner} runs the problem's GT solution and the candidate's code only in a sandbox; "
            f"none was handed in and starting one with make_sandbox({OWN_BACKEND!r}) failed "
            f"({type(exc).__name__}: {exc}). Pass sandbox= a running Sandbox (for example "
            "make_sandbox('docker')) or the env's referee (env.unwrapped.referee)."
        ) from exc
