"""Run programs on inputs for the scripted testers: in-process (trusted GT) or in a sandbox.

:class:`_Runner` memoises the output of each (program, input) pair. With a sandbox every program
runs there, in one batched call per batch of inputs. Without one, only the *trusted* GT may run:
in this process, in a fresh namespace under a short ``SIGALRM`` deadline, with its output captured
(see :mod:`codea1_env.scripted` for when that is acceptable). A failed run is :data:`_FAILED`.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import signal
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

from codea1_env.plain import PlainDataError, dumps, loads
from codea1_env.sandbox.base import CallResult, Job, Limits, Sandbox


class _DeadlineExceeded(BaseException):
    """Raised by the alarm; a BaseException so that ``except Exception`` cannot swallow it."""


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`_DeadlineExceeded` in this thread after ``seconds`` of wall time."""
    armed = [True]

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        if armed[0]:
            raise _DeadlineExceeded

    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_delay, previous_interval = signal.getitimer(signal.ITIMER_REAL)
    started = time.monotonic()
    delay = min(seconds, previous_delay) if previous_delay > 0 else seconds
    signal.setitimer(signal.ITIMER_REAL, delay)
    try:
        yield
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay > 0:  # give an outer timer (pytest-timeout, ...) its remaining time
            remaining = max(previous_delay - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, remaining, previous_interval)


def _require_alarm() -> None:
    """Fail clearly where :func:`_deadline` cannot work (no SIGALRM, or not the main thread)."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        raise RuntimeError(
            "running the GT in-process needs SIGALRM in the main thread; pass a sandbox"
        )


@contextlib.contextmanager
def _captured(stdin_text: str = "") -> Iterator[io.StringIO]:
    """Give the code run inside its own stdin, and capture its stdout (yielded) and stderr."""
    out = io.StringIO()
    stdin = io.TextIOWrapper(io.BytesIO(stdin_text.encode("utf-8")), encoding="utf-8")
    saved_stdin, sys.stdin = sys.stdin, stdin
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            yield out
    finally:
        sys.stdin = saved_stdin


class _Failed:
    def __repr__(self) -> str:
        return "<failed>"


_FAILED: Any = _Failed()
"""Marks a run that raised, timed out, exited or returned a non-plain value."""

_FAILURES = (Exception, SystemExit, _DeadlineExceeded)


class _InProcessProgram:
    """A trusted program run in this process on demand: set up once, then one call at a time."""

    def __init__(self, program: str, timeout_s: float) -> None:
        self.program = program
        self.timeout_s = timeout_s
        self._namespace: dict[str, Any] | None = None
        self._broken = False

    def call(self, expression: str) -> Any:
        """Return the value of ``expression`` in the program's namespace, or ``_FAILED``."""
        namespace = self._module()
        if namespace is None:
            return _FAILED
        try:
            code = compile(expression, "<call>", "eval", dont_inherit=True)
            with _captured(), _deadline(self.timeout_s):
                value = eval(code, namespace)
            return loads(dumps(value))  # a snapshot, and plain data only
        except (*_FAILURES, PlainDataError):
            return _FAILED

    def stdio(self, text: str) -> Any:
        """Return what the program prints when run as ``__main__`` on ``text``, or ``_FAILED``."""
        try:
            code = compile(self.program, "<gt>", "exec", dont_inherit=True)
            with _captured(text) as out:
                try:
                    with _deadline(self.timeout_s):
                        exec(code, {"__name__": "__main__", "__builtins__": builtins})
                except SystemExit as exc:
                    if exc.code not in (None, 0):
                        return _FAILED
            return out.getvalue()
        except _FAILURES:
            return _FAILED

    def _module(self) -> dict[str, Any] | None:
        if self._namespace is None and not self._broken:
            namespace: dict[str, Any] = {"__name__": "__codea1_gt__", "__builtins__": builtins}
            try:
                code = compile(self.program, "<gt>", "exec", dont_inherit=True)
                with _captured(), _deadline(4 * self.timeout_s):
                    exec(code, namespace)
                self._namespace = namespace
            except _FAILURES:
                self._broken = True
        return self._namespace


@dataclass(frozen=True)
class _Run:
    """One program and the inputs (call expressions, or stdin texts) it may be run on."""

    program: str
    stdio: bool
    inputs: tuple[str, ...]


_Key = tuple[bool, str, str]
"""(stdio mode, program, call expression or stdin text): what one memoised output is of."""


class _Runner:
    """Outputs of programs on inputs: memoised, from the sandbox or (trusted GT) in-process.

    With a sandbox, :meth:`start` runs every input not seen before in one batched call. Without
    one, each input runs in-process when :meth:`value` first asks for it, so inputs that are not
    needed (the pools are larger than the suites) cost nothing.
    """

    def __init__(
        self, sandbox: Sandbox | None, limits: Limits, timeout_s: float, memo_size: int = 1 << 16
    ) -> None:
        self.sandbox = sandbox
        self.limits = limits
        self.timeout_s = timeout_s
        self.memo_size = memo_size
        self._memo: OrderedDict[_Key, Any] = OrderedDict()
        self._live: dict[str, _InProcessProgram] = {}

    def start(self, runs: Sequence[_Run]) -> None:
        """Prepare a batch: run every new input in the sandbox, or check in-process is possible."""
        self._live.clear()
        if self.sandbox is None:
            _require_alarm()
            return
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
        results = self.sandbox.run(jobs) if jobs else []
        for keys_of_job, result in zip(job_keys, results, strict=True):
            self._store(keys_of_job, result.calls)

    def value(self, run: _Run, item: str) -> Any:
        """Return the output of ``run.program`` on ``item`` (``_FAILED`` when it failed)."""
        key = (run.stdio, run.program, item)
        if key in self._memo:
            self._memo.move_to_end(key)
            return self._memo[key]
        if self.sandbox is not None:  # evicted since :meth:`start`: run it alone
            self._store(
                [key], self.sandbox.run([self._job(run.program, run.stdio, [item])])[0].calls
            )
            return self._memo[key]
        program = self._live.setdefault(run.program, _InProcessProgram(run.program, self.timeout_s))
        self._remember(key, program.stdio(item) if run.stdio else program.call(item))
        return self._memo[key]

    def _job(self, program: str, stdio: bool, inputs: Sequence[str]) -> Job:
        if stdio:
            return Job(program, stdin_inputs=tuple(inputs), limits=self.limits)
        return Job(program, calls=tuple(inputs), limits=self.limits)

    def _store(self, keys: Sequence[_Key], calls: Sequence[CallResult]) -> None:
        for i, key in enumerate(keys):
            ok = i < len(calls) and calls[i].ok
            self._remember(key, calls[i].value if ok else _FAILED)

    def _remember(self, key: _Key, value: Any) -> None:
        self._memo[key] = value
        while len(self._memo) > self.memo_size:
            self._memo.popitem(last=False)
