"""The spare job child a zygote forks ahead (``LocalSandbox(prefork=True)``, the default).

After each job the zygote forks the next job's child at once and leaves it waiting, so that the
next job does not wait for a fork. These tests check that the spare holds nothing, that a dead
spare costs nothing but its fork, that it never outlives its sandbox, and that results are the
same with and without it.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from codea1_env.sandbox.base import CallStatus, Job, JobResult, Limits
from codea1_env.sandbox.local import LocalSandbox, _proc_stat, _wait_gone

FAST = Limits(call_timeout_s=0.5, setup_timeout_s=2.0, cpu_time_s=2.0, memory_mb=256)


def _spare_pids(box: LocalSandbox) -> list[int]:
    """Pids of the waiting spares: live children of a zygote whose one descriptor is a socket.

    A job child holds its four pipes; one that is exiting holds none.
    """
    found = []
    for worker in box._workers:
        servers = worker.server_pids()  # the launchers, then the zygote
        for pid in worker.tree_pids():
            if pid not in servers and _parent(pid) == servers[-1] and _alive(pid):
                if _one_socket(pid):
                    found.append(pid)
    return found


def _one_socket(pid: int) -> bool:
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
        return len(descriptors) == 1 and os.readlink(f"/proc/{pid}/fd/{descriptors[0]}").startswith(
            "socket:"
        )
    except OSError:
        return False


def _parent(pid: int) -> int:
    fields = _proc_stat(pid)
    return int(fields[1]) if len(fields) > 1 else -1


def _alive(pid: int) -> bool:
    return _proc_stat(pid)[:1] not in ([], [b"Z"], [b"X"])


def _wait_for_spares(box: LocalSandbox, count: int, timeout_s: float = 5.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while True:
        spares = _spare_pids(box)
        if len(spares) >= count or time.monotonic() > deadline:
            return spares
        time.sleep(0.01)


def _run(box: LocalSandbox, program: str, *calls: str) -> JobResult:
    [result] = box.run([Job(program, calls=tuple(calls), limits=FAST)])
    return result


@pytest.fixture(scope="module")
def box():
    with LocalSandbox(workers=1) as sandbox:
        if not sandbox.isolation().layers.get("seccomp"):
            pytest.skip("the spare is forked only where the job seccomp filter loads")
        yield sandbox


def test_a_spare_waits_after_a_job_holding_only_its_socket(box: LocalSandbox) -> None:
    assert _run(box, "def f(x): return x * 2", "f(21)").calls[0].value == 42
    [spare] = _wait_for_spares(box, 1)
    assert _one_socket(spare)  # nothing of the zygote's but the socket it will get a job on
    with open(f"/proc/{spare}/status") as fh:
        status = fh.read()
    assert "NoNewPrivs:\t1" in status  # the zygote's, inherited before any job is handed over
    assert _run(box, "def f(x): return x + 1", "f(1)").calls[0].value == 2
    [after] = _wait_for_spares(box, 1)
    assert after != spare  # the spare ran the job and is gone; a new one waits


def test_a_spare_that_died_waiting_costs_the_next_job_nothing(box: LocalSandbox) -> None:
    """Killed while it waits (by an administrator, the OOM killer): the job is forked anew.

    The kill is waited out first. A spare killed in the instant it is handed a job is a job
    child killed from outside, as without the spare: its job fails with the signal.
    """
    for _ in range(3):
        _run(box, "x = 1")
        [spare] = _wait_for_spares(box, 1)
        os.kill(spare, signal.SIGKILL)
        _wait_gone([spare], 5.0)
        result = _run(box, "def f(s): return s[::-1]", "f('abc')")
        assert result.calls[0].status is CallStatus.OK and result.calls[0].value == "cba"
        assert len(_wait_for_spares(box, 1)) == 1


PROGRAMS = [
    ("def f(x): return [x, x ** 2]", ("f(3)", "f(-1)")),
    ("def f(x): raise ValueError(x)", ("f(1)",)),
    ("def f():\n    while True: pass", ("f()",)),
    (
        "import os\ndef f():\n    if os.fork() == 0:\n        import time; time.sleep(30)\n    return 1",
        ("f()",),
    ),
    ("def f(): return [0] * (10 ** 9)", ("f()",)),
    ("import sys\ndef f():\n    sys.exit(3)", ("f()",)),
    ("def f(x): return {x: x}", ("f(2)",)),
]


def _outcomes(results: list[JobResult]) -> list[list[tuple[str, object]]]:
    return [[(call.status.value, call.value) for call in result.calls] for result in results]


def test_the_same_outcomes_with_and_without_the_spare() -> None:
    jobs = [Job(program, calls=calls, limits=FAST) for program, calls in PROGRAMS]
    with (
        LocalSandbox(workers=2, prefork=True) as ahead,
        LocalSandbox(workers=2, prefork=False) as on_demand,
    ):
        for _ in range(2):  # the second round runs on spares forked after each kind of job
            assert _outcomes(ahead.run(jobs)) == _outcomes(on_demand.run(jobs))
        assert _spare_pids(on_demand) == []


def test_no_spare_outlives_its_sandbox() -> None:
    with LocalSandbox(workers=2) as sandbox:
        sandbox.run([Job("x = 1", limits=FAST)] * 4)
        if not sandbox.isolation().layers.get("seccomp"):
            pytest.skip("no spare without the job seccomp filter")
        spares = _wait_for_spares(sandbox, 2)
        assert len(spares) == 2
    _wait_gone(spares, 5.0)
    assert not any(_alive(pid) for pid in spares)
