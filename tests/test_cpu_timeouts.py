"""CPU-clock time limits (``Limits.timeout_clock="cpu"``): the cases a review of them found.

The basic behaviour (a loaded machine keeps an idle one's verdicts, forged CPU claims gain at
most the backstop) is in ``test_sandbox.py`` and ``test_sandbox_audit.py``.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from codea1_env.sandbox import child as child_module
from codea1_env.sandbox.base import CallStatus, Job, Limits
from codea1_env.sandbox.local import LocalSandbox
from codea1_env.sandbox.ray_backend import job_time_bound


@pytest.fixture(scope="module")
def sandbox() -> Iterator[LocalSandbox]:
    with LocalSandbox(workers=1) as box:
        yield box


def _zygotes_of_this_process() -> list[int]:
    """The sandbox zygotes started by this process (the entry.py whose parent is not one)."""
    me = os.getpid()
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if any(arg.endswith(b"entry.py") for arg in argv) and b"bwrap" not in argv[0]:
            found[int(entry)] = ppid

    def ours(pid: int) -> bool:
        for _ in range(16):
            try:
                with open(f"/proc/{pid}/stat", "rb") as fh:
                    pid = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                return False
            if pid == me:
                return True
        return False

    return [pid for pid, ppid in found.items() if ppid not in found and ours(pid)]


def test_an_answer_that_comes_late_does_not_switch_off_the_next_calls_limit(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Call 0 sleeps past its 0.3 s deadline, so the parent asks for its CPU time; the zygote
    # is then stopped for 0.8 s (as a descheduled one would be), so the answer comes after
    # call 0 has returned and call 1's own deadline has passed. Call 1 spins: it must be
    # stopped by its CPU limit soon after the answer, not run on to the backstop (3 s).
    asked: list[tuple[str, int]] = []
    original = child_module.ChildSession._ask_cpu

    def ask(self: Any) -> None:
        if self.cpu_asked is None and not asked:
            zygotes = _zygotes_of_this_process()
            for pid in zygotes:
                os.kill(pid, signal.SIGSTOP)

            def resume() -> None:
                for pid in zygotes:
                    os.kill(pid, signal.SIGCONT)

            threading.Timer(0.8, resume).start()
        asked.append((self.phase, self.index))
        original(self)

    sandbox.run([Job("x = 1", calls=("x",))])  # the worker is up before the patch
    monkeypatch.setattr(child_module.ChildSession, "_ask_cpu", ask)
    program = "import time\ndef f():\n    time.sleep(0.35)\n    return 1\ndef g():\n    while True: pass\n"
    limits = Limits(call_timeout_s=0.3, cpu_time_s=10.0, wall_backstop_factor=10.0)
    started = time.monotonic()
    [result] = sandbox.run([Job(program, calls=("f()", "g()"), limits=limits)])
    elapsed = time.monotonic() - started
    assert result.calls[0].status is CallStatus.OK
    assert result.calls[1].status is CallStatus.TIMEOUT
    assert "CPU time limit of the call (0.3s)" in result.calls[1].error
    assert ("call", 1) in asked
    assert elapsed < 2.5  # the answer at about 0.8 s, then at most 0.3 s of CPU; backstop 3 s


def test_a_backstop_past_what_poll_can_wait_is_waited_for_in_steps(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Limits(call_timeout_s=3600, wall_backstop_factor=1000) validate, and put the backstop
    # 3.6e6 s away, past the 2**31 - 1 ms that poll() takes. The call's deadline is moved there
    # as those limits would put it (not waited for: an hour).
    Limits(call_timeout_s=3600.0, wall_backstop_factor=1000.0)
    original = child_module.ChildSession._take_records

    def take(self: Any) -> None:
        original(self)
        if self.phase == "call":
            self.backstop = self.last + 3600.0 * 1000.0

    monkeypatch.setattr(child_module.ChildSession, "_take_records", take)
    limits = Limits(call_timeout_s=0.2, cpu_time_s=5.0)
    program = "import time\ndef f():\n    time.sleep(0.5)\n    return 2\n"
    [result] = sandbox.run([Job(program, calls=("f()",), limits=limits)])
    assert result.calls[0].status is CallStatus.OK and result.calls[0].value == 2


def test_a_mutant_of_a_gt_that_waits_keeps_the_wall_clock_backstop(sandbox: LocalSandbox) -> None:
    # The mutants' budget is scaled from the GT's CPU time, which says nothing of waiting: a
    # GT that sleeps 0.3 s takes almost no CPU, and an identical mutant must still pass.
    gt = "import time\ndef f(x):\n    time.sleep(0.3)\n    return x\n"
    limits = Limits(call_timeout_s=2.0)
    [run] = sandbox.run([Job(gt, calls=("f(1)",), limits=limits)])
    assert run.calls[0].duration_s < 0.05  # CPU time
    mutant = limits.with_call_budget(0.05)
    assert mutant.call_timeout_s == 0.05
    assert mutant.call_timeout_s * mutant.wall_backstop_factor == pytest.approx(10.0)
    [same] = sandbox.run([Job(gt, calls=("f(1)",), limits=mutant)])
    assert same.calls[0].status is CallStatus.OK
    spin = "def f(x):\n    while True: pass\n"
    [loop] = sandbox.run([Job(spin, calls=("f(1)",), limits=mutant)])
    assert "CPU time limit of the call (0.05s)" in loop.calls[0].error


def test_with_call_budget_on_the_wall_clock_and_at_the_factor_s_ceiling() -> None:
    wall = Limits(call_timeout_s=2.0, timeout_clock="wall")
    assert wall.with_call_budget(0.1) == Limits(call_timeout_s=0.1, timeout_clock="wall")
    assert Limits().with_call_budget(3.0) == Limits(call_timeout_s=3.0)  # not smaller: as is
    tiny = Limits(call_timeout_s=100.0, wall_backstop_factor=50.0).with_call_budget(0.01)
    assert tiny.wall_backstop_factor == 1000.0  # the most a Limits takes


def test_the_time_bound_of_a_job_counts_a_setup_for_every_child(sandbox: LocalSandbox) -> None:
    # Each call exits its child, so each of the 4 calls runs in a fresh child that runs the
    # (sleeping) top level again: up to 4 setups' backstops, which the bound must cover.
    program = "import time, os\ntime.sleep(0.4)\ndef f():\n    os._exit(1)\n"
    limits = Limits(call_timeout_s=0.1, setup_timeout_s=0.1, cpu_time_s=5.0)
    job = Job(program, calls=("f()",) * 4, limits=limits)
    assert job_time_bound(job) == pytest.approx((4 * 0.1 + 4 * 0.1) * 5 + 1.0)
    started = time.monotonic()
    [result] = sandbox.run([job])
    elapsed = time.monotonic() - started
    assert [c.status for c in result.calls] == [CallStatus.EARLY_EXIT] * 4
    assert result.events["child_runs"] == 4
    assert 1.6 <= elapsed < job_time_bound(job)


def test_every_call_reports_its_wall_time_beside_its_cpu_time(sandbox: LocalSandbox) -> None:
    # A call that sleeps 0.3 s: under the CPU clock its duration is its CPU time and its wall
    # time the 0.3 s it waited; under the wall clock both are the wall time. A call that ends
    # its child (here a timeout) reports the trusted side's wall time for both.
    # (the wall time is kept within what the parent saw, whose reading of the previous record
    # can come up to some 10 ms late: a 0.3 s sleep may read as 0.29 s)
    program = "import time\ndef f(x):\n    time.sleep(x)\n    return x\n"
    for clock in ("cpu", "wall"):
        limits = Limits(call_timeout_s=0.2 if clock == "wall" else 2.0, timeout_clock=clock)
        [run] = sandbox.run([Job(program, calls=("f(0.3)", "f(0)"), limits=limits)])
        slept, quick = run.calls
        if clock == "cpu":
            assert slept.ok and slept.duration_s < 0.1 <= 0.25 <= slept.wall_s < 2.0
        else:
            assert slept.status is CallStatus.TIMEOUT
            assert slept.wall_s == slept.duration_s >= 0.2
        assert quick.ok and quick.wall_s < 0.1
    stdio = "import sys, time\ntime.sleep(float(sys.stdin.read()))\nprint('done')\n"
    [run] = sandbox.run([Job(stdio, stdin_inputs=("0.3",), limits=Limits(call_timeout_s=2.0))])
    assert run.calls[0].value == "done\n"
    assert run.calls[0].duration_s < 0.1 and 0.25 <= run.calls[0].wall_s < 2.0
