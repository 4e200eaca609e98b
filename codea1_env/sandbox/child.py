"""One job child as seen from the trusted side: its pipes, its deadlines, its records.

A :class:`ChildSession` creates four pipes (job in, results, stdout, stderr), writes the job
header (and, in stdio mode, the input) into the child's stdin pipe, passes the child's ends
through the zygote with a ``spawn`` message, and reads result records straight from the child:
the zygote never sees job data. Deadlines are kept here, by the trusted parent: the setup deadline
runs from the spawn, each call's from the previous record; when one passes, the session asks the
zygote to SIGKILL the child's process group.

Most jobs are over within a few milliseconds. For the first :data:`QUIET_START_S` after the spawn
the session sleeps until the child's pipes close (or that time is up) instead of waking for each
record, then reads everything at once: a job of eight calls costs the parent one wake-up instead
of ten, which is what lets two workers on two cores run close to twice as many jobs as one. A
call's duration is the child's own measurement kept within the interval the parent's clock
allows (``[earliest possible, latest possible]`` from when the records were read); a deadline
that follows a record read late starts at most :data:`QUIET_START_S` late.

Every record is validated against the expected sequence (setup first, then call ``start``,
``start+1``...); a malformed, unknown or out-of-order record is a protocol violation that ends
the child and makes the call in progress a CRASH. What the child may claim is limited to
:data:`~.protocol.CHILD_STATUSES`: timeouts and crashes are only ever decided here.

Coverage jobs (``Job.coverage``): every setup and call record carries ``"cov"``, the arcs the
child traced since its previous record (see :mod:`.tracer`). :func:`coverage_arcs` accepts only a
list of an even number of non-zero ints within the program's line bound, at most
:data:`~.protocol.MAX_COVERAGE_ARCS` pairs (anything else is a protocol violation); a call's
``CallResult.coverage`` is the union of its child's setup arcs and its own.

``audit`` records (runtime telemetry counted by the child's audit hook, see :mod:`.runner`) may
arrive at any point before the last status record. They are validated (an object of known
:data:`~.protocol.AUDIT_KEYS` to non-negative integers; anything else is a protocol violation),
clamped to :data:`~.protocol.AUDIT_COUNT_CAP` and kept as the highest total per kind in
:attr:`ChildRun.audit`. They never advance the sequence, reset a deadline or count towards a
call's duration, and after :data:`MAX_AUDIT_RECORDS` (plus one per call) the rest are ignored:
a program that forges them gains nothing but a wrong monitoring count.

One module (over 600 lines) on purpose: it is one idea, the trusted side of one job child; the
record validators above :class:`ChildSession` are the protocol that session enforces, and read
best next to it.
"""

from __future__ import annotations

import functools
import json
import os
import select
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from codea1_env.sandbox.base import CallResult, CallStatus, Job, Limits
from codea1_env.sandbox.worker import plain
from codea1_env.sandbox.worker.protocol import (
    AUDIT_COUNT_CAP,
    AUDIT_KEYS,
    AUDIT_RECORD,
    CHILD_STATUSES,
    COVERAGE_ARC_BYTES,
    EXIT_RUNNER_ERROR,
    EXIT_RUNNER_MEMORY,
    FRAME,
    MAX_COVERAGE_ARCS,
    MAX_ERROR_CHARS,
    ROUTINE_CONTROL_BYTES,
    pack_frame,
    receive_message,
    send_message,
    send_packet,
)
from codea1_env.sandbox.worker.tracer import line_bound

__all__ = [
    "MAX_AUDIT_RECORDS",
    "STATUS_NAMES",
    "CappedBuffer",
    "ChildRun",
    "ChildSession",
    "WorkerBroken",
    "audit_counts",
    "coverage_arcs",
]

FINISH_GRACE_S = 2.0
"""How long a child may take to exit after its last record before it is killed."""
KILL_WAIT_S = 10.0
"""How long the zygote may take to report a killed child before the worker counts as broken."""
DRAIN_WAIT_S = 1.0
"""How long to wait for pipes to reach end-of-file after the zygote reported the exit."""
MIN_RECHECK_S = 0.02
"""With CPU timeouts: the shortest wait before the child's CPU time is read again."""
QUIET_START_S = 0.01
"""How long after a spawn the parent waits for the child's pipes to close before it reads."""
MAX_AUDIT_RECORDS = 2 * len(AUDIT_KEYS)
"""Audit records read from one child, beyond one per call it runs; later ones are ignored."""
_CHUNK = 1 << 16
_FRAME_SIZE = FRAME.size
_unpack_frame = FRAME.unpack_from
_COLLECTING = ("setup", "call")
_MAX_POLL_MS = 60_000
_PIPE_MIN = 4096  # the smallest a Linux pipe gets (one page), even past pipe-user-pages-soft
STATUS_NAMES = {
    "ok": CallStatus.OK,
    "exception": CallStatus.EXCEPTION,
    "early_exit": CallStatus.EARLY_EXIT,
    "memory": CallStatus.MEMORY,
    "not_plain": CallStatus.NOT_PLAIN,
}
"""Statuses a child may report, by their wire names."""


class WorkerBroken(RuntimeError):
    """The zygote stopped answering or hung up; the worker must be restarted."""


_SCAN_JSON = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def parse_record(record: bytes | bytearray) -> Any:
    """Decode one result record: exactly one compact JSON value (no surrounding whitespace).

    The C scanner straight away, without ``json.loads``'s encoding detection and whitespace
    matching: the parent decodes several records per job.

    Raises:
        ValueError, StopIteration, RecursionError: the record is not exactly one JSON value.
    """
    text = record.decode("utf-8", "surrogatepass")
    obj, end = _SCAN_JSON(text, 0)
    if end != len(text):
        raise ValueError("extra data after the record")
    return obj


def audit_counts(obj: dict[str, Any]) -> dict[str, int]:
    """The counts of one ``audit`` record, validated and clamped.

    Args:
        obj: The decoded record (``{"k": "audit", "c": {...}}``).

    Returns:
        Key -> count, zero counts left out, each at most :data:`AUDIT_COUNT_CAP`.

    Raises:
        ValueError: the counts are not an object of known keys to non-negative integers.
    """
    counts = obj.get("c")
    if type(counts) is not dict:
        raise ValueError("audit record without counts")
    out: dict[str, int] = {}
    for key, value in counts.items():
        if key not in AUDIT_KEYS:
            raise ValueError("audit record with an unknown key")
        if type(value) is not int or value < 0:
            raise ValueError("audit record with a count that is not a non-negative integer")
        if value:
            out[key] = min(value, AUDIT_COUNT_CAP)
    return out


def coverage_arcs(obj: dict[str, Any], max_line: int) -> frozenset[tuple[int, int]]:
    """The arcs of one record of a coverage job, validated.

    Args:
        obj: The decoded setup or call record.
        max_line: The program's line bound (:func:`.tracer.line_bound`).

    Returns:
        The ``(from, to)`` pairs of ``obj["cov"]``.

    Raises:
        ValueError: ``cov`` is missing or not a flat list of at most
            :data:`~.protocol.MAX_COVERAGE_ARCS` pairs of non-zero ints within ``max_line``.
    """
    flat = obj.get("cov")
    if type(flat) is not list or len(flat) % 2 or len(flat) > 2 * MAX_COVERAGE_ARCS:
        raise ValueError("coverage record without a flat list of arcs")
    for line in flat:
        if type(line) is not int or line == 0 or not -max_line <= line <= max_line:
            raise ValueError("coverage record with a line outside the program")
    return frozenset(zip(flat[0::2], flat[1::2]))


def limits_message(limits: Limits) -> dict[str, Any]:
    """The rlimit part of a spawn message."""
    return {
        "cpu_s": float(limits.cpu_time_s),
        "memory_bytes": int(limits.memory_mb) << 20,
        "processes": int(limits.max_processes),
        "file_size_bytes": int(limits.max_file_size_mb) << 20,
        "open_files": int(limits.max_open_files),
    }


class CappedBuffer:
    """Keeps the first ``limit`` bytes written to it and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = max(0, limit)
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        """Append what fits, count what does not."""
        room = self.limit - len(self.data)
        if len(chunk) <= room:
            self.data += chunk
        elif room > 0:
            self.data += chunk[:room]
            self.dropped += len(chunk) - room
        else:
            self.dropped += len(chunk)

    def text(self) -> str:
        """The kept bytes as text (invalid UTF-8 replaced)."""
        return self.data.decode("utf-8", "replace")


@dataclass
class ChildRun:
    """What one child did, as observed by the trusted side.

    Attributes:
        setup: ``(status, error)`` from the setup record, None if it never came.
        results: One result per call record received, in order.
        exit: The zygote's exit report (``code``, ``signal``, ``cpu_s``...).
        timed_out: The parent killed the child at a setup or call deadline.
        timeout_reason: Which limit that was, in words (empty: the wall-clock limit).
        lingered: The child was killed because it did not exit after its last record.
        violation: Why the result channel was rejected, empty when it was not.
        audit: Runtime telemetry the child reported (key of :data:`~.protocol.AUDIT_KEYS` ->
            its highest reported total); untrusted, for monitoring only.
        audit_records: Audit records read from the child.
        tail_s: Seconds from the last status record (or the spawn) to the exit.
        stdout: Captured stdout.
        stderr: Captured stderr.
    """

    setup: tuple[str, str] | None = None
    results: list[CallResult] = field(default_factory=list)
    exit: dict[str, Any] | None = None
    timed_out: bool = False
    timeout_reason: str = ""
    lingered: bool = False
    violation: str = ""
    audit: dict[str, int] = field(default_factory=dict)
    audit_records: int = 0
    tail_s: float = 0.0
    stdout: CappedBuffer = field(default_factory=lambda: CappedBuffer(0))
    stderr: CappedBuffer = field(default_factory=lambda: CappedBuffer(0))

    @property
    def setup_ok(self) -> bool:
        """The program's top level ran (or, in stdio mode, compiled)."""
        return self.setup is not None and self.setup[0] == "ok"

    def death(self, limits: Limits, exit_zero_ok: bool = False) -> tuple[CallStatus, str]:
        """Why the child ended without the record the trusted side was waiting for."""
        if self.violation:
            return CallStatus.CRASH, f"malformed result channel: {self.violation}"
        if self.timed_out:
            return CallStatus.TIMEOUT, self.timeout_reason or "wall-clock limit exceeded"
        info = self.exit or {}
        sig = info.get("signal")
        cpu = float(info.get("cpu_s") or 0.0)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= limits.cpu_time_s - 0.05):
            return CallStatus.TIMEOUT, f"CPU time limit ({limits.cpu_time_s:g}s) exceeded"
        if sig is not None:
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = f"signal {sig}"
            if b"MemoryError" in self.stderr.data:
                return CallStatus.MEMORY, f"killed by {name} after a MemoryError"
            return CallStatus.CRASH, f"killed by {name}"
        code = info.get("code")
        if code == 0 and exit_zero_ok:
            return CallStatus.OK, ""
        if code == EXIT_RUNNER_MEMORY:
            return CallStatus.MEMORY, "out of memory"
        if code == EXIT_RUNNER_ERROR:
            return CallStatus.CRASH, "the result channel broke"
        return CallStatus.EARLY_EXIT, f"process exited with code {code}"

    def setup_outcome(self, limits: Limits) -> tuple[CallStatus, str]:
        """Status and reason of a failed setup."""
        if self.setup is not None:
            return STATUS_NAMES[self.setup[0]], self.setup[1]
        return self.death(limits)


class ChildSession:
    """Spawns one child, feeds it the job, and collects what it does until it is gone.

    This runs once per child, so it is written for the common case: a child that does its job
    within the quiet start costs one wake-up, one read per pipe and one pass over the records.

    Args:
        control: The zygote's control socket.
        name: The worker's name, for error messages.
        job_id: A number unique within this zygote.
        job: The job.
        start: First call index (function mode) or the input index (stdio mode).
        stdin_text: The input (stdio mode) or None (function mode).
        out_limit: Bytes of stdout to keep.
    """

    def __init__(
        self,
        control: socket.socket,
        name: str,
        job_id: int,
        job: Job,
        start: int,
        stdin_text: str | None,
        out_limit: int,
    ) -> None:
        limits = job.limits
        self.control = control
        self.name = name
        self.job_id = job_id
        self.limits = limits
        self.stdio = stdin_text is not None
        self.index = start
        self.end = start + 1 if self.stdio else len(job.calls)
        self.audit_allowance = MAX_AUDIT_RECORDS + 1 + (self.end - start)
        self.max_frame = limits.max_value_bytes + 64 * 1024
        self.coverage = job.coverage
        self.max_line = line_bound(job.program) if job.coverage else 0
        self.setup_arcs: frozenset[tuple[int, int]] = frozenset()
        if job.coverage:
            self.max_frame += COVERAGE_ARC_BYTES * MAX_COVERAGE_ARCS
        self.run = ChildRun(
            stdout=CappedBuffer(out_limit), stderr=CappedBuffer(limits.max_output_bytes)
        )
        header: dict[str, Any] = {
            "mode": "stdio" if self.stdio else "call",
            "program": job.program,
            "start": start,
            "max_value_bytes": limits.max_value_bytes,
        }
        if not self.stdio:
            header["calls"] = list(job.calls)
        if job.coverage:
            header["coverage"] = True
        payload = pack_frame(json.dumps(header).encode())
        if self.stdio:
            payload += (stdin_text or "").encode("utf-8", "surrogatepass")
        self.pending = memoryview(payload)
        self.buffer = bytearray()
        self.phase = "setup"  # then "call", "done" or "violation"
        self.kill_sent = False
        self.fds: set[int] = set()
        self.readers = 0  # result, stdout and stderr pipes not yet at end-of-file
        self._spawn()
        self.spawned = time.monotonic()
        # The last status record was read at ``last`` and arrived no earlier than ``last_after``.
        self.last = self.last_after = self.spawned
        # CPU timeouts (limits.timeout_clock == "cpu"): the deadline is the earliest moment
        # the phase can be over; when it passes, the zygote reads the child's CPU time and the
        # deadline moves by what is left of the budget, up to the wall-clock backstop.
        self.cpu_clock = limits.timeout_clock == "cpu"
        self.cpu_mark: float | None = 0.0  # the CPU time claimed by the last status record
        self._begin_phase(self.spawned, limits.setup_timeout_s)
        self.cpu_asked: tuple[str, int] | None = None  # (phase, index) of an unanswered query
        self.cpu_reask = False  # a later phase's deadline passed while that query was out
        self.drain_deadline = 0.0
        self.quiet_until: float | None = self.spawned + QUIET_START_S  # None once awake
        self.arrival_floor: float | None = None  # set while reading what came in the quiet time
        self.on_other_exit: Callable[[int], None] | None = None

    def _spawn(self) -> None:
        job_r, self.job_w = os.pipe()
        self.res_r, res_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        theirs = [job_r, res_w, out_w, err_w]
        # The read ends stay blocking: they are only read after poll() said they have data or
        # lost their writers, so a read never waits.
        self.fds.update((self.job_w, self.res_r, self.out_r, self.err_r))
        self.readers = 3
        # The job is in the pipe before the child exists (the rest, if it does not fit, follows
        # from the loop): the child never waits for the parent to feed it.
        self._write_job(None)
        message = f'{{"op":"spawn","id":{int(self.job_id)},"limits":{_limits_json(self.limits)}}}'
        try:
            send_packet(self.control, message.encode(), theirs)
        except OSError as exc:
            for fd in theirs + list(self.fds):
                os.close(fd)
            self.fds.clear()
            raise WorkerBroken(f"{self.name}: cannot reach the worker: {exc}") from None
        for fd in theirs:
            os.close(fd)

    # ----------------------------------------------------------------- the loop
    def collect(self, on_other_exit: Callable[[int], None] | None = None) -> ChildRun:
        """Run the session to its end and close every pipe.

        The end is either the zygote's exit report with the pipes drained, or, sooner, every
        record received with every pipe closed (``ChildRun.exit`` is then None and the report
        arrives later). Exit reports of earlier children are passed to ``on_other_exit``.
        """
        self.on_other_exit = on_other_exit
        poller = select.poll()
        # Quiet start: readers and the control socket report only hang-ups until the first
        # wake-up (the pipes closing, or QUIET_START_S passing).
        poller.register(self.res_r, 0)
        poller.register(self.out_r, 0)
        poller.register(self.err_r, 0)
        job_w = self.job_w
        if job_w in self.fds:
            poller.register(job_w, select.POLLOUT)
        control_fd = self.control.fileno()
        poller.register(control_fd, 0)
        fds = self.fds
        try:
            while not self._finished():
                quiet_until = self.quiet_until
                if quiet_until is not None:
                    until = quiet_until if quiet_until < self.deadline else self.deadline
                elif self.run.exit is not None:
                    until = self.drain_deadline
                else:
                    until = self.deadline
                timeout_ms = int((until - time.monotonic()) * 1000) + 1
                # bounded: poll() takes at most 2**31 - 1 ms, and a backstop can lie further off
                timeout_ms = timeout_ms if timeout_ms < _MAX_POLL_MS else _MAX_POLL_MS
                events = poller.poll(timeout_ms if timeout_ms > 0 else 0)
                if quiet_until is not None and (
                    time.monotonic() >= quiet_until or any(fd != job_w for fd, _ in events)
                ):
                    self._wake(poller, control_fd)
                for fd, mask in events:
                    if fd == control_fd:
                        self._control_event()
                    elif fd not in fds:
                        continue  # closed while this round was handled
                    elif fd == job_w:
                        self._write_job(poller)
                    else:
                        self._read(fd, poller, mask)
                if self.run.exit is None and time.monotonic() >= self.deadline:
                    self._deadline_passed()
            self._wake(poller, control_fd)
            # Control messages already waiting (exit reports), without waiting for more.
            while any(fd == control_fd for fd, _ in poller.poll(0)):
                self._control_event()
        finally:
            for fd in fds:
                os.close(fd)
            fds.clear()
        return self.run

    def _finished(self) -> bool:
        if self.run.exit is None:
            # Every record is in and every pipe closed: the child is done, whatever its exit
            # status (the zygote reports it later; the next spawn waits for its clean-up).
            return not self.readers and self.phase == "done" and not self.kill_sent
        return not self.readers or time.monotonic() >= self.drain_deadline

    def _wake(self, poller: select.poll, control_fd: int) -> None:
        """End the quiet start: from now on every record and message wakes the loop.

        Whatever is already in the pipes may have arrived at any time since the spawn, which is
        what :meth:`_take_records` assumes while reading it.
        """
        if self.quiet_until is None:
            return
        self.quiet_until = None
        self.arrival_floor = self.spawned
        for fd in (self.res_r, self.out_r, self.err_r):
            if fd in self.fds:
                poller.modify(fd, select.POLLIN)
        poller.modify(control_fd, select.POLLIN)

    def _close(self, fd: int, poller: select.poll) -> None:
        poller.unregister(fd)
        self.fds.discard(fd)
        os.close(fd)

    def _write_job(self, poller: select.poll | None) -> None:
        """Write what the pipe takes of the job; close it once all is written.

        ``poller`` is None before the loop starts (the descriptor is not registered yet).
        """
        try:
            if poller is None and len(self.pending) <= _PIPE_MIN:
                os.write(self.job_w, self.pending)  # fits an empty pipe whatever its size
                self.pending = self.pending[:0]
            elif poller is None:
                os.set_blocking(self.job_w, False)
            while self.pending:
                written = os.write(self.job_w, self.pending[:_CHUNK])
                self.pending = self.pending[written:]
        except BlockingIOError:
            return
        except OSError:  # the child is gone or closed its stdin
            self.pending = self.pending[:0]
        if poller is not None:
            poller.unregister(self.job_w)
        self.fds.discard(self.job_w)
        os.close(self.job_w)

    def _read(self, fd: int, poller: select.poll, mask: int) -> None:
        """Read once what poll() said ``fd`` has; up to end-of-file once its writers are gone.

        Neither can block: there is data, or no writer is left.
        """
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                self._close(fd, poller)
                self.readers -= 1
                break
            if fd == self.res_r:
                self.buffer += chunk
                self._take_records()
            elif fd == self.out_r:
                self.run.stdout.add(chunk)
            else:
                self.run.stderr.add(chunk)
            if not mask & select.POLLHUP:
                break
        if fd == self.res_r:
            self.arrival_floor = None  # what was waiting since the quiet start is read now

    def _control_event(self) -> None:
        try:
            message, fds = receive_message(self.control, max_bytes=ROUTINE_CONTROL_BYTES)
        except (OSError, ValueError) as exc:
            raise WorkerBroken(f"{self.name}: control channel failed: {exc}") from None
        for fd in fds:
            os.close(fd)
        if message is None:
            raise WorkerBroken(f"{self.name}: the worker hung up")
        op = message.get("op")
        if op == "error":
            raise WorkerBroken(f"{self.name}: {message.get('reason')}")
        if op == "cpu":
            if message.get("id") == self.job_id and self.cpu_asked is not None:
                self._cpu_answered(message.get("cpu_s"))
            return
        if op != "exit":
            return
        if message.get("id") == self.job_id:
            now = time.monotonic()
            self.run.exit = message
            self.run.tail_s = now - self.last
            self.drain_deadline = now + DRAIN_WAIT_S
        elif self.on_other_exit is not None:
            self.on_other_exit(int(message.get("id", -1)))

    def _deadline_passed(self) -> None:
        if self.kill_sent:
            raise WorkerBroken(f"{self.name}: a killed child was never reported")
        if self.phase in ("setup", "call"):
            if self.cpu_clock:
                if time.monotonic() < self.backstop:
                    self._ask_cpu()
                    return
                backstop = self.budget * self.limits.wall_backstop_factor
                self.run.timeout_reason = f"wall-clock backstop ({backstop:g}s) exceeded"
            self.run.timed_out = True
        elif self.phase == "done":
            self.run.lingered = True
        self._kill()

    def _begin_phase(self, start: float, budget: float) -> None:
        """The setup or a call began at ``start`` with ``budget`` seconds: set its deadlines.

        Its CPU time counts from what the child's last record claimed (0 before the setup).
        """
        self.budget = budget
        self.deadline = start + budget
        self.backstop = start + budget * self.limits.wall_backstop_factor
        self.cpu_base = self.cpu_mark or 0.0

    def _ask_cpu(self) -> None:
        """Ask the zygote for the child's CPU time; wait for the answer up to the backstop.

        With an earlier phase's query still unanswered, the question is asked again as soon as
        that answer arrives (one query in flight at a time).
        """
        if self.cpu_asked is None:
            self._send_control({"op": "cpu", "id": self.job_id})
            self.cpu_asked = (self.phase, self.index)
        elif self.cpu_asked != (self.phase, self.index):
            self.cpu_reask = True
        self.deadline = self.backstop

    def _cpu_answered(self, cpu: Any) -> None:
        """Time the phase out, or move its deadline by the CPU budget it has left.

        The budget is counted from the CPU time the child claimed in its last record (a child
        that lies can only gain time up to the backstop, which is kept by the wall clock).
        """
        asked, self.cpu_asked = self.cpu_asked, None
        reask, self.cpu_reask = self.cpu_reask, False
        if self.kill_sent or self.run.exit is not None or self.phase not in _COLLECTING:
            return  # the child is done or gone
        if asked != (self.phase, self.index):
            # An answer for an earlier phase: a record arrived meanwhile and set this phase's
            # deadline; if that deadline has passed too, ask now for this phase.
            if reask:
                self._ask_cpu()
            return
        if type(cpu) not in (int, float) or not 0.0 <= cpu < float("inf"):
            # unreadable here (or gone, with the report on its way): the wall clock decides
            self.run.timed_out = True
            self._kill()
            return
        used = cpu - min(self.cpu_base, cpu)
        if used >= self.budget:
            what = "setup" if self.phase == "setup" else "call"
            self.run.timeout_reason = f"CPU time limit of the {what} ({self.budget:g}s) exceeded"
            self.run.timed_out = True
            self._kill()
            return
        wait = self.budget - used
        self.deadline = min(
            time.monotonic() + (wait if wait > MIN_RECHECK_S else MIN_RECHECK_S), self.backstop
        )

    def _kill(self) -> None:
        if not self.kill_sent:
            self._send_control({"op": "kill", "id": self.job_id})
            self.kill_sent = True
            self.deadline = time.monotonic() + KILL_WAIT_S

    def _send_control(self, message: dict[str, Any]) -> None:
        try:
            send_message(self.control, message)
        except OSError as exc:
            raise WorkerBroken(f"{self.name}: cannot reach the worker: {exc}") from None

    # ----------------------------------------------------------------- records
    def _take_records(self) -> None:
        """Take every complete record from the buffer (all read at the same moment).

        Each is validated against the expected sequence: setup first, then call ``start``,
        ``start+1``...; audit records may come in between.
        """
        buffer = self.buffer
        available = len(buffer)
        now = time.monotonic()
        # Each record arrived in [after, now]; the call it ends started in [last_after, last].
        after = now if self.arrival_floor is None else self.arrival_floor
        taken = 0
        while available - taken >= _FRAME_SIZE and self.phase in _COLLECTING:
            (size,) = _unpack_frame(buffer, taken)
            if size > self.max_frame:
                self._violation(f"record of {size} bytes")
                break
            end = taken + _FRAME_SIZE + size
            if end > available:
                break
            record = buffer[taken + _FRAME_SIZE : end]
            taken = end
            try:
                obj = parse_record(record)
            except (ValueError, RecursionError, StopIteration):
                self._violation("unreadable result record")
                break
            if type(obj) is not dict:
                self._violation("result record is not an object")
                break
            kind = obj.get("k")
            if kind == AUDIT_RECORD:
                self._accept_audit(obj)
                continue  # telemetry: no step in the sequence, no deadline reset
            if not self._accept_status(obj, kind, after, now):
                break
            self.last, self.last_after = now, after
            if self.phase == "call":
                self._begin_phase(now, self.limits.call_timeout_s)
            elif self.phase == "done":
                self.deadline = now + FINISH_GRACE_S
        del buffer[:taken]

    def _accept_status(self, obj: dict[str, Any], kind: Any, after: float, now: float) -> bool:
        """Keep the setup or call record that is next in sequence; False after a violation.

        The call it ends took at least ``after - last`` and at most ``now - last_after`` by the
        parent's clock: the child's own measure (``d``) is kept within that.
        """
        status, error = obj.get("s"), obj.get("e", "")
        if status not in CHILD_STATUSES or type(error) is not str:
            self._violation("result record with an unknown status")
            return False
        if len(error) > MAX_ERROR_CHARS:
            error = error[:MAX_ERROR_CHARS]
        arcs: frozenset[tuple[int, int]] | None = None
        if self.coverage:
            try:
                arcs = coverage_arcs(obj, self.max_line)
            except ValueError as exc:
                self._violation(str(exc))
                return False
        if self.phase == "setup":
            if kind != "setup" or status == "not_plain":
                self._violation("result record out of sequence (expected setup)")
                return False
            if arcs is not None:
                self.setup_arcs = arcs
            self._mark_cpu(obj)
            self.run.setup = (status, error)
            self.phase = "call" if status == "ok" and self.index < self.end else "done"
            return True
        index = obj.get("i")
        if kind != "call" or type(index) is not int or index != self.index:
            self._violation(f"result record out of sequence (expected call {self.index})")
            return False
        value = None
        if status == "ok" and not self.stdio:
            if "v" not in obj:
                self._violation("result record without a value")
                return False
            try:
                value = plain.decode(obj["v"])
            except (plain.PlainDataError, RecursionError):
                self._violation("result record with a malformed value")
                return False
        shortest, longest = after - self.last, now - self.last_after
        claimed = obj.get("d")
        previous = self.cpu_mark
        self._mark_cpu(obj)
        if type(claimed) is not float or claimed != claimed:  # missing, forged or NaN
            wall = longest
        elif claimed > longest:
            wall = longest
        elif claimed < shortest:
            wall = shortest if shortest > 0.0 else 0.0
        else:
            wall = claimed if claimed > 0.0 else 0.0
        duration = wall
        if self.cpu_clock and previous is not None and self.cpu_mark is not None:
            # the call's CPU time by the child's own clock, kept within its wall time
            duration = self.cpu_mark - previous
            # within its own wall time (threads counted together could claim more)
            duration = 0.0 if duration < 0.0 else wall if duration > wall else duration
        coverage = None if arcs is None else self.setup_arcs | arcs
        self.run.results.append(
            CallResult(STATUS_NAMES[status], value, error, duration, coverage=coverage, wall_s=wall)
        )
        self.index += 1
        self.phase = "done" if self.index >= self.end else "call"
        return True

    def _mark_cpu(self, obj: dict[str, Any]) -> None:
        """Keep the CPU time a status record claims (``"c"``); None when it is not a time."""
        claimed = obj.get("c")
        ok = type(claimed) is float and 0.0 <= claimed < float("inf")
        self.cpu_mark = claimed if ok else None

    def _violation(self, reason: str) -> None:
        self.run.violation = reason
        self.phase = "violation"
        self._kill()

    def _accept_audit(self, obj: dict[str, Any]) -> None:
        """Keep the highest total per kind; ignore records beyond the per-child allowance."""
        if self.run.audit_records >= self.audit_allowance:
            return
        self.run.audit_records += 1
        try:
            counts = audit_counts(obj)
        except ValueError as exc:
            self._violation(str(exc))
            return
        for key, value in counts.items():
            self.run.audit[key] = max(self.run.audit.get(key, 0), value)


@functools.lru_cache(maxsize=64)
def _limits_json(limits: Limits) -> str:
    """The rlimit part of a ``spawn`` message, encoded once per distinct :class:`Limits`."""
    return json.dumps(limits_message(limits), separators=(",", ":"))
