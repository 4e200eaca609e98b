"""The Ray sandbox pool: same interface and results as the local backend, actor failures mid-batch.

One local Ray instance (``num_cpus=2``) for the whole module, started by the module's main pool,
which therefore owns it: the last test closes that pool and checks that Ray went down with it.
Keep that test last.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from codea1_env.sandbox.base import CallStatus, Job, JobResult, Limits, Sandbox, SandboxUnavailable
from codea1_env.sandbox.local import LocalSandbox
from codea1_env.sandbox.ray_backend import RaySandbox, _reason, job_time_bound
from codea1_env.sandbox.worker.plain import values_equal

ray = pytest.importorskip("ray", reason="the Ray backend needs Ray: pip install 'codea1[ray]'")

pytestmark = pytest.mark.slow  # a Ray cluster and its actors: seconds to minutes a test

RAY_INIT = {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False}
FAST = Limits(call_timeout_s=1.0, setup_timeout_s=2.0, cpu_time_s=5.0, memory_mb=256)
EXTRA = {"num_cpus": 0}
"""Actor options of the sandboxes a test makes next to the module's pool, which holds both CPUs."""
SLEEPER = "import time\ndef f(x, t):\n    time.sleep(t)\n    return x * x\n"


def sleepy_jobs(n: int, seconds: float) -> list[Job]:
    return [Job(SLEEPER, calls=(f"f({i}, {seconds})",), limits=FAST, tag=f"s{i}") for i in range(n)]


def assert_sleepy_results(results: list[JobResult], n: int) -> None:
    assert len(results) == n
    assert [r.tag for r in results] == [f"s{i}" for i in range(n)]
    assert [r.calls[0].status for r in results] == [CallStatus.OK] * n
    assert [r.calls[0].value for r in results] == [i * i for i in range(n)]


def gone(pids: list[int], within_s: float = 10.0) -> bool:
    """True once none of ``pids`` is a live (non-zombie) process."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def pool() -> Iterator[RaySandbox]:
    if ray.is_initialized():
        pytest.fail("Ray is already initialized: this module starts (and owns) its own instance")
    try:
        box = RaySandbox(actors=2, workers_per_actor=1, init_kwargs=RAY_INIT)
    except SandboxUnavailable as exc:
        if "Ray cannot start" in str(exc):
            pytest.skip(f"Ray cannot start on this machine: {exc}")
        raise
    yield box
    box.close()


@pytest.fixture(scope="module")
def local() -> Iterator[LocalSandbox]:
    with LocalSandbox(workers=1) as box:
        yield box


# --------------------------------------------------------------------------- interface


def test_pool_satisfies_the_protocol_and_reports_local_isolation(
    pool: RaySandbox, local: LocalSandbox
) -> None:
    assert isinstance(pool, Sandbox)
    assert pool.run([]) == []
    assert (pool.actors, pool.workers, pool.owns_ray) == (2, 2, True)
    report = pool.isolation()
    assert report.backend == "ray"
    assert report.layers == local.isolation().layers
    assert report.python == local.isolation().python != ""  # the actors' Python (this one)
    assert report.missing(pool.required) == []
    info = pool.actor_info()
    assert len(info) == 2 and all(item["workers"] == 1 for item in info)
    assert len({item["pid"] for item in info}) == 2


MIXED_JOBS = [
    Job("def f(x): return [x, {x: (x, 'a')}, {1.5}, b'z', None]", calls=("f(3)", "f(-1)")),
    Job("def f(): return 1 // 0", calls=("f()", "1 + 1")),
    Job("def f():\n    while True: pass", calls=("f()", "2"), limits=FAST),
    Job("def f(:\n  pass", calls=("f()",)),
    Job("class I(int): pass\ndef f(): return I(3)", calls=("f()",)),
    Job("import sys\ndef f(): sys.exit(0)", calls=("f()",)),
    Job("print('top')\ndef f(): print('x'); return 7", calls=("f()",), tag="printer"),
    Job("print(int(input()) * 2)", stdin_inputs=("4\n", "x\n")),
    Job("x = 1"),
]


def test_results_equal_the_local_backend_on_the_same_jobs(
    pool: RaySandbox, local: LocalSandbox
) -> None:
    got, want = pool.run(MIXED_JOBS), local.run(MIXED_JOBS)
    assert len(got) == len(want) == len(MIXED_JOBS)
    for ours, theirs in zip(got, want):
        assert (ours.tag, ours.setup_status, ours.setup_error) == (
            theirs.tag,
            theirs.setup_status,
            theirs.setup_error,
        )
        assert (ours.stdout, ours.stderr) == (theirs.stdout, theirs.stderr)
        assert [c.status for c in ours.calls] == [c.status for c in theirs.calls]
        assert [c.error for c in ours.calls] == [c.error for c in theirs.calls]
        for a, b in zip(ours.calls, theirs.calls):
            assert values_equal(a.value, b.value)
    assert got[0].calls[0].value == [3, {3: (3, "a")}, {1.5}, b"z", None]
    assert got[2].calls[0].status is CallStatus.TIMEOUT
    assert got[7].calls[0].value == "8\n"


def test_a_batch_is_spread_over_both_actors(pool: RaySandbox) -> None:
    jobs = sleepy_jobs(8, 0.3)
    started = time.perf_counter()
    results = pool.run(jobs)
    elapsed = time.perf_counter() - started
    assert_sleepy_results(results, 8)
    # 8 x 0.3 s is 2.4 s on one worker and 1.2 s on both
    assert elapsed < 2.1, pool.last_run
    assert pool.last_run["chunks"] >= 4
    assert pool.last_run["actor_failures"] == 0


def test_many_quick_jobs_come_back_in_order(pool: RaySandbox) -> None:
    jobs = [Job(f"def f(k): return k + {i}", calls=("f(0)", "f(1)"), tag=str(i)) for i in range(64)]
    results = pool.run(jobs)
    assert [r.tag for r in results] == [str(i) for i in range(64)]
    assert [[c.value for c in r.calls] for r in results] == [[i, i + 1] for i in range(64)]


def test_the_env_scores_a_duel_the_same_through_ray(pool: RaySandbox, local: LocalSandbox) -> None:
    gym = pytest.importorskip("gymnasium")
    import codea1_env  # noqa: F401 - registers CodeTestDuel-v0
    from codea1_env.problems import load_source

    source = load_source("bank")
    problem = next(source[i] for i in source.ids() if source[i].entry_point == "reverse_words")
    right = problem.canonical_solution
    wrong = right.replace("reversed(", "list(")
    assert wrong != right
    tests = "\n".join(problem.tests) + f"\nassert {problem.entry_point}('a b') == 'a b'"

    def play(sandbox: Sandbox, code: str) -> dict[str, float]:
        env = gym.make("CodeTestDuel-v0", sandbox=sandbox)
        env.reset(seed=0, options={"problem_id": problem.task_id})
        env.step(code)
        info = env.step(tests)[4]
        env.close()
        return dict(info["rewards"])

    for code in (right, wrong):
        assert play(pool, code) == play(local, code)
    assert play(pool, wrong)["coder"] < play(pool, right)["coder"]


# --------------------------------------------------------------------------- failures


def test_an_actor_killed_mid_batch_loses_and_duplicates_nothing(pool: RaySandbox) -> None:
    victim = pool.actor_handles()[0]
    victim_pids = [pool.actor_info()[0]["pid"], *pool.actor_info()[0]["worker_pids"]]

    def kill_soon() -> None:
        time.sleep(0.6)  # the batch takes >= 2 s: the victim holds chunks by now
        ray.kill(victim)

    killer = threading.Thread(target=kill_soon)
    killer.start()
    try:
        results = pool.run(sleepy_jobs(8, 0.5))
    finally:
        killer.join()
    assert_sleepy_results(results, 8)
    assert pool.last_run["actor_failures"] == 1
    assert pool.last_run["resubmitted_jobs"] >= 1
    assert pool.last_run["restarts"] == 1
    # the killed actor's fork servers went with it
    assert gone(victim_pids)
    # and the pool keeps working at full size
    assert_sleepy_results(pool.run(sleepy_jobs(4, 0.1)), 4)
    assert pool.actors == 2
    # every slot holds a live actor once the replacement has joined; the victim is not one
    assert pool.wait_ready() == 2
    assert len(pool.actor_handles()) == 2
    assert victim_pids[0] not in [item["pid"] for item in pool.actor_info()]


def test_an_actor_killed_between_batches_is_replaced(pool: RaySandbox) -> None:
    # the previous test's replacement may still be starting when its batch ends
    assert pool.wait_ready() == 2
    ray.kill(pool.actor_handles()[1])
    time.sleep(0.5)
    assert_sleepy_results(pool.run(sleepy_jobs(6, 0.05)), 6)
    assert pool.last_run["actor_failures"] >= 1
    assert pool.last_run["restarts"] >= 1


def test_a_frozen_actor_is_killed_and_its_jobs_run_elsewhere() -> None:
    quick = Limits(call_timeout_s=0.3, setup_timeout_s=0.3)
    jobs = [Job(SLEEPER, calls=(f"f({i}, 0.05)",), limits=quick, tag=f"s{i}") for i in range(4)]
    assert job_time_bound(jobs[0]) == pytest.approx(4.0)  # (0.3 + 0.3) x the backstop's 5, + 1
    wall = dataclasses.replace(quick, timeout_clock="wall")
    assert job_time_bound(dataclasses.replace(jobs[0], limits=wall)) == pytest.approx(1.6)
    with RaySandbox(actors=2, workers_per_actor=1, hang_timeout_s=0.5, actor_options=EXTRA) as box:
        assert not box.owns_ray
        frozen = box.actor_info()[0]["pid"]
        os.kill(frozen, signal.SIGSTOP)
        try:
            started = time.perf_counter()
            results = box.run(jobs)
            elapsed = time.perf_counter() - started
        finally:
            if _alive(frozen):
                os.kill(frozen, signal.SIGKILL)
        assert_sleepy_results(results, 4)
        assert box.last_run["actor_failures"] >= 1
        assert elapsed < 15.0
        assert gone([frozen])
    assert ray.is_initialized()  # a sandbox that joined Ray leaves it running


def test_failures_beyond_max_retries_raise_and_the_next_batch_recovers() -> None:
    with RaySandbox(actors=1, workers_per_actor=1, max_retries=0, actor_options=EXTRA) as box:
        victim = box.actor_handles()[0]
        killer = threading.Timer(0.5, ray.kill, args=(victim,))
        killer.start()
        try:
            with pytest.raises(SandboxUnavailable, match="max_retries=0"):
                box.run(sleepy_jobs(6, 0.4))
        finally:
            killer.join()
        assert box.actor_handles() == []
        # the dead slot gets a fresh restart at the start of the next batch
        assert_sleepy_results(box.run(sleepy_jobs(2, 0.01)), 2)
        assert box.last_run["restarts"] == 1


# --------------------------------------------------------------------------- bad input


def _tampered(**fields: float) -> Limits:
    """A Limits changed after it was built (``Limits(...)`` itself refuses these values)."""
    limits = Limits()
    for name, value in fields.items():
        object.__setattr__(limits, name, value)
    return limits


@pytest.mark.parametrize(
    ("jobs", "error"),
    [
        (Job("x"), TypeError),
        (["x"], TypeError),
        ([Job("x", calls=("1",), stdin_inputs=("",))], ValueError),
        ([Job("x", limits=_tampered(call_timeout_s=0))], ValueError),
    ],
)
def test_malformed_jobs_are_rejected_before_running(
    pool: RaySandbox, jobs: object, error: type[Exception]
) -> None:
    with pytest.raises(error):
        pool.run(jobs)  # type: ignore[arg-type]


def test_bad_constructor_arguments() -> None:
    for kwargs, field in [
        ({"actors": 0}, "actors"),
        ({"workers_per_actor": 0}, "workers_per_actor"),
        ({"max_retries": -1}, "max_retries"),
        ({"hang_timeout_s": 0}, "hang_timeout_s"),
    ]:
        with pytest.raises(ValueError, match=field):
            RaySandbox(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown isolation layer"):
        RaySandbox(actors=1, require=("no_such_layer",))


def test_an_actor_too_big_for_the_cluster_is_refused(pool: RaySandbox) -> None:
    with pytest.raises(SandboxUnavailable, match="asks for 8 CPUs"):
        RaySandbox(actors=1, workers_per_actor=8)


def test_a_missing_layer_in_the_actors_is_reported(pool: RaySandbox) -> None:
    with pytest.raises(SandboxUnavailable, match="could not start.*required isolation"):
        RaySandbox(
            actors=1,
            workers_per_actor=1,
            require=("pid_namespace",),
            local_options={"confinement": "none"},
            actor_options=EXTRA,
            start_timeout_s=60,
        )


def test_the_reason_of_a_remote_failure_is_its_own_message() -> None:
    text = (
        "The actor died because of an error raised in its creation task, \x1b[36mray::A()\x1b[39m"
        "\n  File \"x.py\", line 3, in __init__\n    raise ValueError('a: b')\n"
        "codea1_env.sandbox.base.SandboxUnavailable: layers ['x'] missing.\n  - why\nOpt out."
    )
    reason = _reason(RuntimeError(text))
    assert (
        reason
        == "codea1_env.sandbox.base.SandboxUnavailable: layers ['x'] missing.\n  - why\nOpt out."
    )
    assert _reason(RuntimeError("plain\nlast line")) == "last line"


def test_without_ray_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(SandboxUnavailable, match=r"pip install 'codea1\[ray\]'"):
        RaySandbox(actors=1)


# --------------------------------------------------------------------------- shutdown (last)


def test_close_stops_the_actors_and_the_ray_it_started(pool: RaySandbox) -> None:
    pids = [pid for item in pool.actor_info() for pid in (item["pid"], *item["worker_pids"])]
    pool.close()
    pool.close()
    assert not ray.is_initialized()
    assert gone(pids)
    with pytest.raises(SandboxUnavailable, match="closed"):
        pool.run([Job("x = 1")])
    with pytest.raises(SandboxUnavailable, match="closed"):
        pool.wait_ready()
