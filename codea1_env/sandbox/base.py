"""The sandbox interface shared by every backend: jobs in, plain outcomes out.

The sandbox knows nothing of problems, tests or rewards. A :class:`Job` is "this program, these
calls (or these stdin inputs), these limits"; a :class:`JobResult` holds one :class:`CallResult`
per call with the plain-data value the call returned (or the stdout it printed), never a verdict.
Verdicts are decided by the trusted caller, which compares values with
:func:`codea1_env.sandbox.worker.plain.values_equal`.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "CallResult",
    "CallStatus",
    "IsolationReport",
    "Job",
    "JobResult",
    "Limits",
    "LimitsError",
    "Sandbox",
    "SandboxUnavailable",
]


class SandboxUnavailable(RuntimeError):
    """A backend cannot start, or cannot provide the isolation it was asked for."""


class CallStatus(str, enum.Enum):
    """How one call (or one stdin run) ended."""

    OK = "ok"
    """Returned a plain value (function mode) or exited 0 (stdio mode)."""
    EXCEPTION = "exception"
    """Raised an exception; ``CallResult.error`` holds ``"Type: message"``."""
    TIMEOUT = "timeout"
    """Ran past a time limit and was killed: the call's or the setup's (on the limits'
    ``timeout_clock``, or their wall-clock backstop), or the job's CPU limit (``cpu_time_s``)."""
    MEMORY = "memory"
    """Exceeded its memory limit (``MemoryError`` or killed by the memory limit)."""
    CRASH = "crash"
    """The process died from a signal or produced an unreadable result."""
    EARLY_EXIT = "early_exit"
    """The process exited (``sys.exit``, ``os._exit``, ...) before the call returned."""
    NOT_PLAIN = "not_plain"
    """Returned a value that is not plain data of exact builtin types, or one too large."""
    SETUP_FAILED = "setup_failed"
    """The program itself did not compile or raised/exited at import, so the call never ran."""
    NOT_RUN = "not_run"
    """Never started (for example, the job was cancelled)."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for one job. Every limit is enforced outside the untrusted code's reach.

    Each field's docstring is its documentation (and the help text of the ``codea1 train`` flag
    of the same name).
    """

    call_timeout_s: float = 2.0
    """Seconds for one call (or one stdin run), on the ``timeout_clock``; the write-up's
    guidance: 1-5 s."""
    setup_timeout_s: float = 5.0
    """Seconds to compile and execute the program's top level (imports, definitions), on the
    ``timeout_clock``."""
    timeout_clock: Literal["cpu", "wall"] = "cpu"
    """What the call and setup timeouts count: ``cpu``, the program's own CPU time (read by the
    trusted side from the kernel), so a loaded machine gives the verdicts of an idle one as long
    as it slows a call by less than the backstop's factor, and a call that waits without
    computing is stopped by the wall-clock backstop (``wall_backstop_factor`` times the
    timeout); or ``wall``, wall-clock time, as the authors'
    harness counts (verdicts of calls near the limit then depend on the machine's load)."""
    wall_backstop_factor: float = 5.0
    """With ``timeout_clock="cpu"``: a call (or the setup) is also stopped after this many times
    its timeout of wall-clock time (a program that sleeps, blocks, or computes in a process it
    forked uses little CPU of its own)."""
    cpu_time_s: float = 20.0
    """CPU seconds for the whole job (RLIMIT_CPU)."""
    memory_mb: int = 1024
    """Address-space limit of one job, MiB (RLIMIT_AS)."""
    max_processes: int = 16
    """Processes/threads the job may hold at once (RLIMIT_NPROC, per uid)."""
    max_file_size_mb: int = 16
    """Largest file the job may write, MiB (RLIMIT_FSIZE)."""
    max_open_files: int = 64
    """Open descriptors (RLIMIT_NOFILE)."""
    max_output_bytes: int = 64 * 1024
    """Bytes of stdout/stderr kept per job (the rest is discarded)."""
    max_value_bytes: int = 1 << 20
    """Largest encoded return value accepted per call."""

    def __post_init__(self) -> None:
        self.check()

    def with_call_budget(self, call_timeout_s: float) -> Limits:
        """These limits with a smaller per-call timeout (mutants' limits, from the GT's time).

        With ``timeout_clock="cpu"`` the wall-clock backstop stays these limits' own
        (``call_timeout_s * wall_backstop_factor``): the budget is scaled from the GT's CPU
        time, which says nothing of how long a call may wait (a GT that sleeps takes almost
        none). With ``"wall"`` the wall-clock timeout itself is the smaller one.

        Raises:
            LimitsError: ``call_timeout_s`` out of range.
        """
        if call_timeout_s >= self.call_timeout_s or self.timeout_clock != "cpu":
            return dataclasses.replace(self, call_timeout_s=call_timeout_s)
        factor = self.wall_backstop_factor * self.call_timeout_s / call_timeout_s
        high = LIMIT_RANGES["wall_backstop_factor"][1]
        return dataclasses.replace(
            self, call_timeout_s=call_timeout_s, wall_backstop_factor=min(factor, high)
        )

    def check(self) -> None:
        """Check every field against :data:`LIMIT_RANGES` (done when a ``Limits`` is built).

        Raises:
            LimitsError: the first field out of range, its value and what it takes.

        """
        if self.timeout_clock not in TIMEOUT_CLOCKS:
            raise LimitsError("timeout_clock", self.timeout_clock, f"one of {TIMEOUT_CLOCKS}")
        for name, (low, high, kind) in LIMIT_RANGES.items():
            value = getattr(self, name)
            typed = isinstance(value, (int, float) if kind is float else int)
            if isinstance(value, bool) or not typed or not math.isfinite(value):
                in_range = False
            else:  # a float limit's lower bound is exclusive (a time of 0 s), an int's inclusive
                in_range = (low < value if kind is float else low <= value) and value <= high
            if not in_range:
                what = "a finite number > " if kind is float else "an integer >= "
                raise LimitsError(name, value, f"{what}{low} and <= {high:,}")


LIMIT_RANGES: dict[str, tuple[float, float, type]] = {
    "call_timeout_s": (0, 86_400, float),  # a day: a timeout of 1e300 s overflows the clock
    "setup_timeout_s": (0, 86_400, float),
    "wall_backstop_factor": (1, 1_000, float),
    "cpu_time_s": (0, 86_400, float),
    "memory_mb": (1, 1 << 32, int),  # RLIMIT_AS in bytes stays far inside 64 bits
    "max_processes": (1, 1 << 22, int),  # the kernel's largest pid_max
    "max_file_size_mb": (1, 1 << 32, int),
    "max_open_files": (1, 1 << 20, int),  # the kernel's default nr_open
    "max_output_bytes": (0, 1 << 31, int),
    "max_value_bytes": (1, 1 << 31, int),
}
"""Each limit's ``(lowest, highest, type)``: what the sandbox can enforce on every backend. A
float limit must be above its lowest value, an int limit at least it."""

TIMEOUT_CLOCKS: tuple[str, ...] = ("cpu", "wall")
"""The values :attr:`Limits.timeout_clock` takes."""


class LimitsError(ValueError):
    """A :class:`Limits` field out of the range the sandbox can enforce.

    Attributes:
        field: The field's name (``"call_timeout_s"``).
        value: The value given.
        allowed: What the field takes, in words.

    """

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"Limits.{field} = {value!r} is invalid: expected {allowed}")


@dataclass(frozen=True)
class Job:
    """One program and the calls to run against it.

    Function mode (``calls`` set): the program is executed as a module, then each entry of
    ``calls`` (a Python *expression*, such as ``"add(1, 2)"``) is evaluated in the module's
    namespace and its value returned as plain data. Stdio mode (``stdin_inputs`` set): the program
    is run as ``__main__`` once per input with that text on stdin, and the call's value is the
    text written to stdout.

    Attributes:
        program: Python source code (untrusted).
        calls: Call expressions (untrusted), function mode.
        stdin_inputs: Inputs, stdio mode.
        limits: Resource limits.
        tag: Free-form label echoed back in the result (for bookkeeping by the caller).
        coverage: Record which lines and arcs of the program each call executes
            (``CallResult.coverage``; see :mod:`codea1_env.sandbox.worker.tracer`). Slower: for
            coverage metrics, not for rewards.
    """

    program: str
    calls: tuple[str, ...] = ()
    stdin_inputs: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    tag: str = ""
    coverage: bool = False

    @property
    def mode(self) -> str:
        """``"stdio"`` when the job carries stdin inputs, else ``"call"``."""
        return "stdio" if self.stdin_inputs else "call"

    @property
    def n_calls(self) -> int:
        """Number of calls (function mode) or runs (stdio mode)."""
        return len(self.stdin_inputs) if self.stdin_inputs else len(self.calls)


@dataclass(frozen=True)
class CallResult:
    """The outcome of one call.

    Attributes:
        status: How the call ended.
        value: The returned plain value (function mode) or captured stdout (stdio mode) when
            ``status`` is OK; otherwise None.
        error: ``"ExceptionType: message"`` or a short reason, truncated; empty when OK.
        duration_s: Seconds the call took on the limits' ``timeout_clock`` (with ``"cpu"``
            its CPU time, with ``"wall"`` its wall-clock time): the job child's own measure,
            kept within the interval the trusted side's clock allows; for a call that ended its
            child (timeout, crash, exit), the trusted side's wall time from its start to the exit.
        coverage: Coverage jobs only (``Job.coverage``), for a call whose child reported: the
            raw arcs ``(from_line, to_line)`` of the program's own code that running its top
            level and then this call executed (a negative line ``-F`` is the entry or exit of
            the code object starting on line ``F``; executed lines are the positive ends).
            Validated in the trusted parent as pairs of ints in the program's line range, but
            reported by the untrusted process: monitoring-grade data for coverage metrics, never
            a verdict. None otherwise (calls that timed out, crashed or never ran included).
        wall_s: Seconds of wall-clock time the call took, whatever the ``timeout_clock``: the
            job child's own measure kept within the trusted side's interval, or for a call that
            ended its child the trusted side's wall time to the exit (so ``duration_s`` under
            ``"wall"``). A loaded machine raises it and not the CPU time. 0 for a call that
            never ran.
    """

    status: CallStatus
    value: Any = None
    error: str = ""
    duration_s: float = 0.0
    coverage: frozenset[tuple[int, int]] | None = None
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the call returned normally."""
        return self.status is CallStatus.OK


@dataclass(frozen=True)
class JobResult:
    """The outcome of one job.

    Attributes:
        calls: One result per call, in the job's order.
        setup_status: OK when the program compiled and its top level ran; otherwise why not.
        setup_error: Reason when setup failed.
        stdout: Captured stdout (function mode), truncated to ``max_output_bytes``.
        stderr: Captured stderr, truncated.
        wall_s: Wall-clock seconds for the whole job.
        tag: The job's tag.
        events: Counters of suspicious behaviour observed by the trusted side (for example
            ``{"killed_by_signal": 1}``), used by the reward-hacking monitor.
    """

    calls: tuple[CallResult, ...]
    setup_status: CallStatus = CallStatus.OK
    setup_error: str = ""
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    tag: str = ""
    events: dict[str, int] = field(default_factory=dict)

    @property
    def compiled(self) -> bool:
        """True when the program's top level ran without error."""
        return self.setup_status is CallStatus.OK


@dataclass(frozen=True)
class IsolationReport:
    """Which isolation layers a backend has active.

    Attributes:
        backend: Backend name (``"local"``, ``"docker"``, ``"ray"``).
        layers: Layer name -> active, for example ``{"rlimits": True, "seccomp": True,
            "unprivileged_uid": True, "net_namespace": True, "mount_namespace": False}``.
        notes: Why a layer is off, one line per layer.
        python: The version of the Python that runs the programs (``"3.11.7"``), from the
            workers' probes; where workers differ, every version, sorted and joined by
            ``", "``; ``""`` when not known. A program's values, and so its verdicts, can
            depend on it (``sum()`` of floats changed in 3.12; see the README's Sandbox).
    """

    backend: str
    layers: dict[str, bool]
    notes: tuple[str, ...] = ()
    python: str = ""

    def missing(self, required: Sequence[str]) -> list[str]:
        """Return the layers from ``required`` that are not active."""
        return [name for name in required if not self.layers.get(name, False)]

    def __str__(self) -> str:
        on = ", ".join(k for k, v in self.layers.items() if v) or "none"
        off = ", ".join(k for k, v in self.layers.items() if not v) or "none"
        on_python = f" on Python {self.python}" if self.python else ""
        return f"{self.backend} sandbox{on_python}: active [{on}]; inactive [{off}]"


@runtime_checkable
class Sandbox(Protocol):
    """What every backend provides. Backends are context managers and are safe to reuse."""

    def run(self, jobs: Sequence[Job]) -> list[JobResult]:
        """Run a batch of jobs in parallel and return one result per job, in order.

        Never raises because of anything the untrusted code did; raises
        :class:`SandboxUnavailable` only when the backend itself is broken.
        """
        ...

    def isolation(self) -> IsolationReport:
        """Report the active isolation layers."""
        ...

    def close(self) -> None:
        """Stop workers and release every resource. Idempotent."""
        ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc: object) -> None: ...
