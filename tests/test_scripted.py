"""Scripted baseline policies on hand-made problems."""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import codea1_env  # noqa: F401  (registers CodeTestDuel-v0)
import codea1_env.sandbox.factory as sandbox_factory
from codea1_env.baselines.scripted import (
    BoundaryTester,
    GroundTruthCoder,
    MutantCoder,
    Policy,
    RandomTester,
    RoleRouter,
    TrivialTester,
)
from codea1_env.envs.duel_env import CodeTestDuelEnv
from codea1_env.problems.problem import IOPair, Problem
from codea1_env.sandbox.base import (
    CallResult,
    CallStatus,
    IsolationReport,
    Job,
    JobResult,
    Sandbox,
    SandboxUnavailable,
)
from codea1_env.sandbox.worker.plain import values_equal
from codea1_env.scoring.mutation import generate_mutants
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.testcases import extract_code, parse_io_pairs, parse_tests

THRESHOLD = Problem(
    task_id="test/threshold",
    prompt='def f(x):\n    """Return 1 when x is above 10, else 0."""\n',
    entry_point="f",
    canonical_solution="def f(x):\n    return 1 if x > 10 else 0\n",
    tests=("assert f(3) == 0", "assert f(20) == 1"),
)
SHOUT = Problem(
    task_id="test/shout",
    prompt="def shout(s: str, xs: list, k: int = 2):\n",
    entry_point="shout",
    canonical_solution=(
        "def shout(s: str, xs: list, k: int = 2):\n"
        "    if len(s) > 3:\n"
        "        return s[:k].upper()\n"
        "    return sum(xs) * k\n"
    ),
    tests=("assert shout('hello', [1, 2], k=3) == 'HEL'", "assert shout('ab', [4], 1) == 4"),
)
SUM_STDIO = Problem(
    task_id="test/sum",
    prompt="Read n, then n integers; print their sum.",
    entry_point="",
    canonical_solution="n = int(input())\nprint(sum(map(int, input().split()[:n])))\n",
    io_pairs=(IOPair("3\n1 2 3\n", "6\n"), IOPair("2\n5 5\n", "10\n")),
)


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """One real local sandbox shared by this module's tests (each tester would start its own)."""
    with sandbox_factory.make_sandbox("local") as box:
        yield box


def as_tester(problem: Problem, code: str) -> dict[str, Any]:
    return {"role": 1, "prompt": problem.prompt, "entry_point": problem.entry_point, "code": code}


def as_coder(problem: Problem) -> dict[str, Any]:
    return {"role": 0, "prompt": problem.prompt, "entry_point": problem.entry_point, "code": ""}


def gt_value(problem: Problem, call: str) -> Any:
    """The GT's value on ``call``: the test file's own trusted problems, run in this process."""
    namespace: dict[str, Any] = {}
    exec(problem.gt_program, namespace)
    return eval(call, namespace)


def asserts_of(answer: str) -> list[tuple[str, Any]]:
    """(call source, expected value) of each assert line, read with ast."""
    out = []
    for stmt in ast.parse(extract_code(answer)).body:
        assert isinstance(stmt, ast.Assert)
        assert isinstance(stmt.test, ast.Compare) and isinstance(stmt.test.ops[0], ast.Eq)
        out.append((ast.unparse(stmt.test.left), ast.literal_eval(stmt.test.comparators[0])))
    return out


class InProcessSandbox:
    """A test double of the Sandbox protocol that runs this file's trusted programs in-process."""

    def __init__(self) -> None:
        self.batches: list[list[Job]] = []

    def run(self, jobs: Sequence[Job]) -> list[JobResult]:
        self.batches.append(list(jobs))
        return [self._run(job) for job in jobs]

    def _run(self, job: Job) -> JobResult:
        if job.mode == "stdio":
            results = []
            for text in job.stdin_inputs:
                out = io.StringIO()
                saved, sys.stdin = sys.stdin, io.StringIO(text)
                try:
                    with contextlib.redirect_stdout(out):
                        exec(job.program, {"__name__": "__main__"})
                    results.append(CallResult(CallStatus.OK, out.getvalue()))
                except Exception as exc:
                    results.append(CallResult(CallStatus.EXCEPTION, error=repr(exc)))
                finally:
                    sys.stdin = saved
            return JobResult(tuple(results))
        namespace: dict[str, Any] = {}
        try:
            exec(job.program, namespace)
        except Exception as exc:
            failed = CallResult(CallStatus.SETUP_FAILED, error=repr(exc))
            return JobResult((failed,) * len(job.calls), CallStatus.SETUP_FAILED, repr(exc))
        calls = []
        for call in job.calls:
            try:
                calls.append(CallResult(CallStatus.OK, eval(call, namespace)))
            except Exception as exc:
                calls.append(CallResult(CallStatus.EXCEPTION, error=repr(exc)))
        return JobResult(tuple(calls))

    def isolation(self) -> IsolationReport:
        return IsolationReport("in-process-test-double", {})

    def close(self) -> None:
        self.batches.clear()

    def __enter__(self) -> InProcessSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def test_policies_follow_the_protocols() -> None:
    assert isinstance(InProcessSandbox(), Sandbox)
    for policy in (
        GroundTruthCoder(),
        MutantCoder(),
        BoundaryTester(),
        RandomTester(),
        TrivialTester(),
        RoleRouter(GroundTruthCoder(), TrivialTester()),
    ):
        assert isinstance(policy, Policy)


def test_policies_need_the_problem_in_infos() -> None:
    for policy in (GroundTruthCoder(), MutantCoder(), BoundaryTester(), TrivialTester()):
        with pytest.raises(ValueError, match="problem"):
            policy.act([as_coder(THRESHOLD)])
        with pytest.raises(ValueError, match="problem"):
            policy.act([as_coder(THRESHOLD)], [{"problem": "not a problem"}])


# --- coders ---------------------------------------------------------------------------------------


def test_ground_truth_coder_answers_the_gt_program_in_a_fence() -> None:
    answers = GroundTruthCoder().act(
        [as_coder(THRESHOLD), as_coder(SUM_STDIO)],
        [{"problem": THRESHOLD}, {"problem": SUM_STDIO}],
    )
    assert answers[0].startswith("```python\n") and answers[0].endswith("\n```")
    assert extract_code(answers[0]).strip() == THRESHOLD.gt_program.strip()
    assert extract_code(answers[1]).strip() == SUM_STDIO.gt_program.strip()


def test_mutant_coder_answers_a_mutant_that_differs() -> None:
    coder = MutantCoder(p_mutant=1.0, seed=3)
    answers = coder.act([as_coder(THRESHOLD)] * 4, [{"problem": THRESHOLD}] * 4)
    mutants = {m.source for m in generate_mutants(THRESHOLD.gt_program)}
    for answer, chosen in zip(answers, coder.last_mutants, strict=True):
        code = extract_code(answer).strip()
        assert chosen is not None and code == chosen.source
        assert code in mutants and code != THRESHOLD.gt_program.strip()
    assert coder.cache.misses == 1 and coder.cache.hits == 3


def test_mutant_coder_is_seeded_and_mixes_gt_and_mutants() -> None:
    batch, infos = [as_coder(THRESHOLD)] * 40, [{"problem": THRESHOLD}] * 40
    first, second = MutantCoder(seed=7).act(batch, infos), MutantCoder(seed=7).act(batch, infos)
    assert first == second != MutantCoder(seed=8).act(batch, infos)
    n_gt = sum(extract_code(a).strip() == THRESHOLD.gt_program.strip() for a in first)
    assert 8 <= n_gt <= 32  # p_mutant = 0.5
    assert MutantCoder(p_mutant=0.0).act(batch[:3], infos[:3]) == GroundTruthCoder().act(
        batch[:3], infos[:3]
    )


def test_mutant_coder_falls_back_to_gt_without_mutants() -> None:
    silent = Problem(
        "test/print", "", "f", "def f(x):\n    print(x)\n", tests=("assert f(1) == None",)
    )
    coder = MutantCoder(p_mutant=1.0)
    answers = coder.act(
        [as_coder(silent), as_coder(SUM_STDIO)], [{"problem": silent}, {"problem": SUM_STDIO}]
    )
    assert coder.last_mutants == [None, None]
    assert extract_code(answers[0]).strip() == silent.gt_program.strip()


def test_mutant_coder_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        MutantCoder(p_mutant=1.5)
    with pytest.raises(ValueError, match="unknown mutation operator"):
        MutantCoder(operators=["nope"])


# --- boundary tester ------------------------------------------------------------------------------


def test_boundary_tester_hits_both_sides_of_the_threshold(sandbox: Sandbox) -> None:
    candidate = "```python\ndef f(x):\n    return 1 if x >= 10 else 0\n```"
    answer = BoundaryTester(sandbox=sandbox).act(
        [as_tester(THRESHOLD, candidate)], [{"problem": THRESHOLD}]
    )[0]
    cases = asserts_of(answer)
    calls = [call for call, _ in cases]
    assert {"f(9)", "f(10)", "f(11)"} <= set(calls)
    assert len(cases) == 8 and len(set(calls)) == 8
    for call, expected in cases:
        assert values_equal(expected, gt_value(THRESHOLD, call))
    parsed = parse_tests(answer, "f")
    assert len(parsed.cases) == 8 and parsed.rejected == ()


def test_boundary_tester_reads_constants_from_the_candidate_it_is_shown(sandbox: Sandbox) -> None:
    candidate = "def f(x):\n    return 1 if x > 42 else 0\n"
    answer = BoundaryTester(sandbox=sandbox).act(
        [as_tester(THRESHOLD, candidate)], [{"problem": THRESHOLD}]
    )[0]
    calls = {call for call, _ in asserts_of(answer)}
    assert {"f(41)", "f(42)", "f(43)"} <= calls


def test_boundary_tester_uses_argument_shapes_and_len_constants(sandbox: Sandbox) -> None:
    tester = BoundaryTester(n_tests=16, sandbox=sandbox)
    answer = tester.act([as_tester(SHOUT, SHOUT.canonical_solution)], [{"problem": SHOUT}])[0]
    cases = asserts_of(answer)
    assert len(cases) == 16
    calls = [call for call, _ in cases]
    for call, expected in cases:
        assert values_equal(expected, gt_value(SHOUT, call))
        node = ast.parse(call, mode="eval").body
        assert isinstance(node, ast.Call)  # shaped like one of the two GT calls:
        assert (len(node.args), [k.arg for k in node.keywords]) in [(2, ["k"]), (3, [])]
        s, xs, *_ = (ast.literal_eval(a) for a in node.args)
        assert isinstance(s, str) and isinstance(xs, list)
    assert "shout('', [1, 2], k=3)" in calls  # empty string
    assert "shout('hello', [], k=3)" in calls  # empty list
    assert {"shout('hel', [1, 2], k=3)", "shout('hell', [1, 2], k=3)"} <= set(calls)  # len(s) > 3


def test_boundary_tester_drops_calls_the_gt_fails_on(sandbox: Sandbox) -> None:
    fussy = Problem(
        "test/fussy",
        "",
        "f",
        "def f(x):\n    if x < 0:\n        raise ValueError(x)\n    while x > 50:\n        pass\n"
        "    return x * 2\n",
        tests=("assert f(5) == 10",),
    )
    start = time.monotonic()
    answer = BoundaryTester(n_tests=8, timeout_s=0.05, sandbox=sandbox).act(
        [as_tester(fussy, fussy.canonical_solution)], [{"problem": fussy}]
    )[0]
    assert time.monotonic() - start < 5
    cases = asserts_of(answer)
    assert cases
    for call, expected in cases:
        x = ast.literal_eval(call[2:-1])
        assert 0 <= x <= 50 and expected == 2 * x


def test_scripted_testers_run_off_the_main_thread(sandbox: Sandbox) -> None:
    answers: list[str] = []
    thread = threading.Thread(
        target=lambda: answers.extend(
            BoundaryTester(sandbox=sandbox).act(
                [as_tester(THRESHOLD, "")], [{"problem": THRESHOLD}]
            )
        )
    )
    thread.start()
    thread.join()
    assert len(answers) == 1 and len(asserts_of(answers[0])) == 8


def test_boundary_tester_without_gt_tests_uses_the_signature(sandbox: Sandbox) -> None:
    bare = Problem("test/bare", "", "g", "def g(n: int, s: str) -> str:\n    return s * n\n")
    answer = BoundaryTester(n_tests=6, sandbox=sandbox).act(
        [as_tester(bare, "")], [{"problem": bare}]
    )[0]
    cases = asserts_of(answer)
    assert len(cases) == 6
    for call, expected in cases:
        assert expected == gt_value(bare, call)


def test_boundary_tester_is_seeded(sandbox: Sandbox) -> None:
    obs, infos = [as_tester(THRESHOLD, "")] * 3, [{"problem": THRESHOLD}] * 3
    first = BoundaryTester(seed=1, sandbox=sandbox).act(obs, infos)
    assert first == BoundaryTester(seed=1, sandbox=sandbox).act(obs, infos)


def test_boundary_tester_runs_everything_in_one_sandbox_batch(sandbox: Sandbox) -> None:
    double = InProcessSandbox()
    tester = BoundaryTester(sandbox=double)
    obs = [as_tester(THRESHOLD, ""), as_tester(SHOUT, ""), as_tester(SUM_STDIO, "")]
    infos = [{"problem": THRESHOLD}, {"problem": SHOUT}, {"problem": SUM_STDIO}]
    answers = tester.act(obs, infos)
    assert len(double.batches) == 1 and len(double.batches[0]) == 3
    assert [job.program for job in double.batches[0]] == [
        THRESHOLD.gt_program,
        SHOUT.gt_program,
        SUM_STDIO.gt_program,
    ]
    assert answers == BoundaryTester(sandbox=sandbox).act(obs, infos)  # the real one agrees
    # Outputs are memoised: asking again runs only inputs never seen (fresh random ones).
    tester.act(obs + obs, infos + infos)
    assert len(double.batches) == 2
    first = {(job.program, x) for job in double.batches[0] for x in job.calls + job.stdin_inputs}
    second = [(job.program, x) for job in double.batches[1] for x in job.calls + job.stdin_inputs]
    assert second and len(set(second)) == len(second) and not first & set(second)


def test_sandbox_jobs_hold_each_new_input_once() -> None:
    sandbox = InProcessSandbox()
    BoundaryTester(sandbox=sandbox).act(
        [as_tester(THRESHOLD, "")] * 3, [{"problem": THRESHOLD}] * 3
    )
    (batch,) = sandbox.batches
    calls = [call for job in batch for call in job.calls]
    assert len(calls) == len(set(calls)) >= 8


def test_oracle_false_writes_the_candidates_own_outputs(sandbox: Sandbox) -> None:
    candidate = "```python\ndef f(x):\n    return 1 if x >= 10 else 0\n```"
    weak = BoundaryTester(oracle=False, sandbox=InProcessSandbox())
    cases = dict(
        asserts_of(weak.act([as_tester(THRESHOLD, candidate)], [{"problem": THRESHOLD}])[0])
    )
    assert cases["f(10)"] == 1  # the candidate's (wrong) answer, not the GT's 0
    strong = dict(
        asserts_of(
            BoundaryTester(sandbox=sandbox).act(
                [as_tester(THRESHOLD, candidate)], [{"problem": THRESHOLD}]
            )[0]
        )
    )
    assert strong["f(10)"] == 0
    with BoundaryTester(oracle=False, sandbox=sandbox) as real:  # the real sandbox agrees
        answer = real.act([as_tester(THRESHOLD, candidate)], [{"problem": THRESHOLD}])[0]
    assert dict(asserts_of(answer))["f(10)"] == 1


def test_boundary_tester_on_stdio_problems(sandbox: Sandbox) -> None:
    answer = BoundaryTester(sandbox=sandbox).act(
        [as_tester(SUM_STDIO, "")], [{"problem": SUM_STDIO}]
    )[0]
    parsed = parse_io_pairs(answer)
    assert parsed.rejected == () and len(parsed.pairs) == 8
    assert parsed.pairs[:2] == SUM_STDIO.io_pairs
    assert IOPair("4\n1 2 3\n", "6\n") in parsed.pairs  # n shifted by one
    for pair in parsed.pairs:
        n, *rest = pair.input.split()
        assert pair.output == f"{sum(int(v) for v in rest[: int(n)])}\n"


# --- other testers and the router ----------------------------------------------------------------


def test_random_tester_is_seeded_and_shaped_like_the_gt_tests(sandbox: Sandbox) -> None:
    obs, infos = [as_tester(SHOUT, "")], [{"problem": SHOUT}]

    def random_tester(seed: int) -> RandomTester:
        return RandomTester(seed=seed, sandbox=sandbox)

    first = random_tester(5).act(obs, infos)
    assert first == random_tester(5).act(obs, infos) != random_tester(6).act(obs, infos)
    cases = asserts_of(first[0])
    assert len(cases) == 8
    for call, expected in cases:
        assert values_equal(expected, gt_value(SHOUT, call))


def test_random_tester_on_stdio(sandbox: Sandbox) -> None:
    answer = RandomTester(n_tests=5, sandbox=sandbox).act(
        [as_tester(SUM_STDIO, "")], [{"problem": SUM_STDIO}]
    )[0]
    pairs = parse_io_pairs(answer).pairs
    assert 1 <= len(pairs) <= 5
    for pair in pairs:
        n, *rest = pair.input.split()
        assert pair.output == f"{sum(int(v) for v in rest[: int(n)])}\n"


def test_trivial_tester_copies_the_gt_tests() -> None:
    answers = TrivialTester().act(
        [as_tester(THRESHOLD, ""), as_tester(SUM_STDIO, "")],
        [{"problem": THRESHOLD}, {"problem": SUM_STDIO}],
    )
    assert extract_code(answers[0]) == "\n".join(THRESHOLD.tests)
    assert parse_io_pairs(answers[1]).pairs == SUM_STDIO.io_pairs
    assert TrivialTester(n_tests=1).act([as_tester(THRESHOLD, "")], [{"problem": THRESHOLD}]) == [
        "```python\nassert f(3) == 0\n```"
    ]
    with pytest.raises(ValueError):
        TrivialTester(n_tests=0)
    with pytest.raises(ValueError):
        BoundaryTester(n_tests=0)


def test_role_router_sends_each_seat_to_its_policy() -> None:
    router = RoleRouter(GroundTruthCoder(), TrivialTester())
    obs = [as_coder(THRESHOLD), as_tester(THRESHOLD, "x"), as_coder(SHOUT)]
    infos = [{"problem": THRESHOLD}, {"problem": THRESHOLD}, {"problem": SHOUT}]
    answers = router.act(obs, infos)
    assert extract_code(answers[0]).strip() == THRESHOLD.gt_program.strip()
    assert extract_code(answers[1]) == "\n".join(THRESHOLD.tests)
    assert extract_code(answers[2]).strip() == SHOUT.gt_program.strip()
    with pytest.raises(ValueError, match="role"):
        router.act([{"role": 2}], [{"problem": THRESHOLD}])


# --- where the scripted testers run code ---------------------------------------------------------


def test_a_tester_starts_its_own_sandbox_lazily_and_closes_it() -> None:
    tester = BoundaryTester()
    assert not tester.runner.owns_sandbox  # nothing started by the constructor
    try:
        answer = tester.act([as_tester(THRESHOLD, "")], [{"problem": THRESHOLD}])[0]
        assert tester.runner.owns_sandbox and len(asserts_of(answer)) == 8
    finally:
        tester.close()
    assert not tester.runner.owns_sandbox
    tester.close()  # idempotent


def test_a_tester_shares_the_envs_sandbox_through_its_referee() -> None:
    env = gym.make("CodeTestDuel-v0", source="bank")
    try:
        duel_env = env.unwrapped
        assert isinstance(duel_env, CodeTestDuelEnv)
        referee = duel_env.referee
        assert isinstance(referee, Referee)
        coder, tester = MutantCoder(p_mutant=1.0), BoundaryTester(sandbox=referee)
        obs, info = env.reset(seed=0)
        obs, *_, info = env.step(coder.act([obs], [info])[0])
        obs, *_, info = env.step(tester.act([obs], [info])[0])
        assert tester.runner.sandbox is referee.sandbox and not tester.runner.owns_sandbox
        assert "rewards" in info
        tester.close()  # leaves the referee's sandbox running
        assert referee.sandbox.run([Job("x = 1", calls=("x",))])[0].calls[0].value == 1
    finally:
        env.close()
    with pytest.raises(TypeError, match="Sandbox"):
        BoundaryTester(sandbox="local")  # type: ignore[arg-type]


def test_a_tester_that_cannot_start_a_sandbox_says_what_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(name: str = "local", **kwargs: Any) -> Sandbox:
        raise SandboxUnavailable(f"{name}: no worker could start (test)")

    monkeypatch.setattr(sandbox_factory, "make_sandbox", refuse)
    tester = RandomTester()
    with pytest.raises(SandboxUnavailable) as caught:
        tester.act([as_tester(THRESHOLD, "")], [{"problem": THRESHOLD}])
    message = str(caught.value)
    assert "RandomTester" in message and "make_sandbox('local') failed" in message
    assert "no worker could start (test)" in message and "sandbox=" in message


def hostile_problem(marker: Path, exit_at_import: bool) -> dict[str, Any]:
    """A JSONL record whose GT writes ``marker``, taints builtins and may ``os._exit`` at import."""
    body = [
        "import builtins, os",
        f"open({str(marker)!r}, 'w').write('host touched')",
        "builtins.CODEA1_TAINTED = True",
    ]
    if exit_at_import:
        body.append("os._exit(7)")
    body += ["def f(x):", "    return 1 if x > 10 else 0"]
    return {
        "task_id": "hostile/marker",
        "prompt": 'def f(x):\n    """Return 1 when x is above 10, else 0."""\n',
        "entry_point": "f",
        "canonical_solution": "\n".join(body) + "\n",
        "tests": ["assert f(3) == 0", "assert f(20) == 1"],
    }


def test_a_hostile_gt_or_candidate_never_runs_in_the_host(sandbox: Sandbox, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    record = hostile_problem(marker, exit_at_import=False)
    problem = Problem(
        record["task_id"],
        record["prompt"],
        record["entry_point"],
        record["canonical_solution"],
        tests=tuple(record["tests"]),
    )
    obs = [as_tester(problem, record["canonical_solution"])]
    for tester in (
        BoundaryTester(),  # its own sandbox
        RandomTester(sandbox=sandbox),
        BoundaryTester(oracle=False, sandbox=sandbox),  # runs the (equally hostile) candidate
    ):
        with tester:
            answer = tester.act(obs, [{"problem": problem}])[0]
        assert asserts_of(answer) == []  # the GT failed at import: every input dropped
    assert not marker.exists()
    assert not hasattr(builtins, "CODEA1_TAINTED")


HOSTILE_SCRIPT = """
import json, sys
import gymnasium as gym
import codea1_env
from codea1_env.baselines.scripted import BoundaryTester, MutantCoder, RoleRouter

record, path = json.loads(sys.argv[1]), sys.argv[2]
for source, options in (("bank", {"problem": record}), ("jsonl:" + path, None)):
    env = gym.make("CodeTestDuel-v0", source=source)
    for tester in (BoundaryTester(seed=0), BoundaryTester(seed=0, sandbox=env.unwrapped.referee)):
        players = RoleRouter(MutantCoder(p_mutant=0.5, seed=0), tester)
        for episode in range(2):
            obs, info = env.reset(seed=episode, options=options)
            assert info["task_id"] == "hostile/marker"
            obs, _, _, _, info = env.step(players.act([obs], [info])[0])
            obs, _, done, _, info = env.step(players.act([obs], [info])[0])
            assert done and "rewards" in info
        players.close()
    env.close()
print("caller survived")
"""


def test_quickstart_loop_on_a_hostile_problem_leaves_the_host_alone(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    record = hostile_problem(marker, exit_at_import=True)
    data = tmp_path / "hostile.jsonl"
    data.write_text(json.dumps(record) + "\n")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(HOSTILE_SCRIPT), json.dumps(record), str(data)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "caller survived" in proc.stdout
    assert not marker.exists()
