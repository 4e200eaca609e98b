"""The sandboxed suite evaluator on hand-built problems, and the policy evaluation runner."""

from __future__ import annotations

import argparse
import json
import platform
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.commands import eval_cli
from agents.evaluation.evaluate import (
    EvalSettings,
    RecordingSandbox,
    evaluate_policies,
    load_policy,
    markdown_table,
    summarize_seeds,
)
from codea1_env.evaluation import SuiteEvaluator, discrimination, mutation_score, p01_p00
from codea1_env.evaluation.suite_eval import MUTANT_TIMEOUT_FLOOR_S
from codea1_env.problems import load_source
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import Job, Limits, Sandbox
from codea1_env.sandbox.factory import make_sandbox

DIV = "def f(x):\n    return 12 // (x + 1)\n"
STEP = "def f(x):\n    return 1 if x >= 3 else 0\n"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with make_sandbox("local") as box:
        yield box


def test_mutants_crashing_equivalent_and_kills(sandbox: Sandbox) -> None:
    # Mutants of 12 // (x + 1): 13//, 11//, //(x+2), //(x+0), 12*(x+1), //(x-1), None, 0, -(...)
    two = Problem("t/div2", "def f(x):", "f", DIV, tests=("assert f(0) == 12", "assert f(2) == 4"))
    one = Problem("t/div1", "def f(x):", "f", DIV, tests=("assert f(0) == 12",))
    first, second = SuiteEvaluator(sandbox).evaluate(
        [(two, ["assert f(0) == 12\nassert f(3) == 3"], []), (one, ["assert f(0) == 12"], [])]
    )
    # x + 0 divides by zero on the GT input 0: crashing; nothing is equivalent.
    assert (first.n_mutants, first.n_crashing, first.n_equivalent) == (9, 1, 0)
    kills = first.suites[0].mutant_kills
    assert len(kills) == 8
    # f(0) kills all but 12 * (x + 1), which f(3) kills (48 != 3).
    assert mutation_score(kills, 1) == pytest.approx(7 / 8)
    assert mutation_score(kills, 2) == 1.0
    # With only input 0, 12 * (x + 1) matches the GT everywhere: (likely) equivalent.
    assert (second.n_mutants, second.n_crashing, second.n_equivalent) == (9, 1, 1)
    assert mutation_score(second.suites[0].mutant_kills, 1) == 1.0


def test_mutant_jobs_run_under_the_mutant_limits(sandbox: Sandbox) -> None:
    seen: list[Job] = []

    class Spy:
        def run(self, jobs: list[Job]) -> list:
            seen.extend(jobs)
            return sandbox.run(jobs)

    short = Limits(call_timeout_s=0.25, setup_timeout_s=1.0)
    problem = Problem("t/div", "def f(x):", "f", DIV, tests=("assert f(0) == 12",))
    evaluator = SuiteEvaluator(Spy(), mutant_limits=short)  # type: ignore[arg-type]
    evaluator.evaluate([(problem, ["assert f(0) == 12"], [DIV])])
    mutants = [job for job in seen if job.program not in (DIV, "")]  # the GT's mutants
    others = [job for job in seen if job.program in (DIV, "")]
    # within the mutant limits, the call timeout is scaled from the GT's own calls (floor 50 ms)
    # (the same wall-clock backstop as the mutant limits: Limits.with_call_budget)
    assert mutants and all(
        job.limits == short.with_call_budget(job.limits.call_timeout_s)
        and MUTANT_TIMEOUT_FLOOR_S <= job.limits.call_timeout_s <= short.call_timeout_s
        and job.limits.call_timeout_s * job.limits.wall_backstop_factor
        == pytest.approx(short.call_timeout_s * short.wall_backstop_factor)
        for job in mutants
    )
    assert others and all(job.limits == evaluator.limits for job in others)


def test_statuses_candidates_discrimination_and_cure(sandbox: Sandbox) -> None:
    problem = Problem(
        "t/step",
        "def f(x):",
        "f",
        STEP,
        tests=("assert f(0) == 0", "assert f(3) == 1", "assert f(10) == 1"),
    )
    suite = "assert f(3) == 1\nassert f(2) == 0\nassert f(5) == 2\nassert f(3) == 1\nassert f(-1) == 1 // 0"
    candidates = [
        STEP,  # correct
        "def f(x):\n    return 1 if x > 3 else 0\n",  # wrong: f(3) == 0
        "def f(x):\n    return 2 if x >= 5 else (1 if x >= 3 else 0)\n",  # wrong: f(10) == 2
    ]
    (result,) = SuiteEvaluator(sandbox).evaluate(
        [(problem, [suite], candidates)], with_mutants=False
    )
    evaluated = result.suites[0]
    assert evaluated.statuses == ("valid", "valid", "wrong_expected", "duplicate", "wrong_expected")
    assert result.candidate_correct == (True, False, False)
    assert result.candidate_gt_pass_rates == pytest.approx((1.0, 2 / 3, 2 / 3))
    assert evaluated.candidate_passes == (
        (True, True, False, False, False),
        (False, True, False, False, False),
        (True, True, True, False, False),
    )
    run = [0, 1, 2, 4]  # the duplicate is not run
    valid = [evaluated.valid[i] for i in run]
    wrong = [[evaluated.candidate_passes[c][i] for i in run] for c in (1, 2)]
    assert discrimination(wrong, valid) == 0.5  # only the x > 3 code is caught
    assert p01_p00(wrong, valid) == (pytest.approx(3 / 4), pytest.approx(1 / 4))
    assert result.n_mutants == 0


def test_stdio_problem_is_reported_unsupported(sandbox: Sandbox) -> None:
    from codea1_env.problems.problem import IOPair

    problem = Problem("t/io", "echo", "", "print(input())", io_pairs=(IOPair("a\n", "a\n"),))
    (result,) = SuiteEvaluator(sandbox).evaluate([(problem, ["Input:\nb\nOutput:\nb\n"], [])])
    assert result.suites[0].parse_reason == "stdio_unsupported"
    assert result.suites[0].statuses == ()


def test_recording_sandbox_keeps_tagged_results(sandbox: Sandbox) -> None:
    recorder = RecordingSandbox(sandbox)
    jobs = [
        Job(program="def f():\n    return 1\n", calls=("f()",), tag="code:t:0"),
        Job(program="def f():\n    return 2\n", calls=("f()",), tag="gt:t"),
    ]
    results = recorder.run(jobs)
    assert [r.calls[0].value for r in results] == [1, 2]
    assert recorder.results_of("t", jobs[0].program) == [results[0]]  # by problem and program
    assert recorder.results_of("t", jobs[1].program) == []  # not a candidate job


def test_evaluate_policies_scripted(sandbox: Sandbox) -> None:
    source = load_source("bank")
    problems = [source[i] for i in source.ids()[:2]]
    settings = EvalSettings(samples=2, ks=(1, 2), n_candidates=3, max_mutants=12)
    rows = evaluate_policies(
        ["gt=scripted:gt", "scripted:trivial", "scripted:boundary"],
        problems,
        settings,
        sandbox=sandbox,
    )
    gt, trivial, boundary = rows
    assert gt["roles"] == ["coder"] and gt["tests"] is None
    assert gt["code"]["pass@1"] == 1.0 and gt["code"]["avg@2"] == 1.0
    assert gt["per_problem"][0]["code_correct"] == [True, True]
    assert trivial["code"] is None
    # GT tests copied verbatim hold on the GT.
    assert trivial["tests"]["ut_accuracy"] == 1.0
    assert boundary["tests"]["ut_accuracy"] == 1.0
    assert 0.0 <= boundary["tests"]["best_of_3"] <= 1.0
    assert gt["monitor"]["monitor/programs"] == 4.0
    table = markdown_table(rows)
    assert table.splitlines()[0].startswith("| policy | gt_pass_rate")
    assert "| gt | 1.000 |" in table


def test_load_policy_rejects_unknown_specs(sandbox: Sandbox) -> None:
    with pytest.raises(ValueError, match="unknown policy spec"):
        load_policy("nope:x", sandbox, EvalSettings())
    with pytest.raises(ValueError, match="unknown scripted policy"):
        load_policy("scripted:oracle", sandbox, EvalSettings())
    with pytest.raises(ValueError, match="checkpoint"):
        load_policy("checkpoint:/nonexistent/run", sandbox, EvalSettings())
    named = load_policy("base=scripted:gt", sandbox, EvalSettings())
    assert named.name == "base" and named.spec == "scripted:gt"


def test_settings_validate_k() -> None:
    with pytest.raises(ValueError, match="pass@k"):
        EvalSettings(samples=2, ks=(4,))


def test_summarize_seeds_mean_and_spread() -> None:
    runs: list[list[dict[str, Any]]] = [
        [{"name": "a", "code": {"pass@1": 0.5}, "tests": None, "monitor": {}}],
        [{"name": "a", "code": {"pass@1": 0.7}, "tests": None, "monitor": {}}],
    ]
    (row,) = summarize_seeds(runs)
    assert row["seeds"] == 2
    assert row["code"]["pass@1"] == "0.600 ± 0.141"
    runs[0][0]["tests"] = {"mut@5": 0.6, "validity@5": 0.3}  # mut@5 undefined on seed 2
    runs[1][0]["tests"] = {"mut@5": None, "validity@5": 0.1}
    (row,) = summarize_seeds(runs)
    assert row["tests"] == {"mut@5": "0.600 ± 0.000 (1 of 2 seeds)", "validity@5": "0.200 ± 0.141"}


def test_eval_cli_writes_json_and_markdown(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    eval_cli.add_arguments(parser)
    args = parser.parse_args(
        [
            "--policy",
            "gt=scripted:gt",
            "--policy",
            "mutant=scripted:mutant:1.0",
            "--source",
            "procedural-test:0",
            "--problems",
            "2",
            "--samples",
            "2",
            "--k",
            "1,2",
            "--n-candidates",
            "0",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert eval_cli.run(args) == 0
    record = json.loads((tmp_path / "eval.json").read_text())
    names = [r["name"] for r in record["results"]]
    assert names == ["gt", "mutant"]
    assert record["results"][0]["code"]["pass@2"] == 1.0
    assert record["results"][1]["code"]["pass@1"] < 1.0  # every answer is a mutant
    assert "| mutant |" in (tmp_path / "eval.md").read_text()
    environment = record["environment"]  # what the numbers were measured on
    assert environment["python"] == environment["sandbox"]["python"] == platform.python_version()
    assert "gymnasium" in environment["packages"] and "step" not in environment
    bad = parser.parse_args(["--policy", "scripted:gt", "--samples", "1", "--k", "2"])
    assert eval_cli.run(bad) == 2


def test_eval_reports_the_training_numbers_next_to_validity(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    eval_cli.add_arguments(parser)
    args = parser.parse_args(
        [
            "--policy",
            "boundary=scripted:boundary",
            "--source",
            "procedural-test:0",
            "--problems",
            "2",
            "--samples",
            "1",
            "--n-candidates",
            "4",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert eval_cli.run(args) == 0
    tests = json.loads((tmp_path / "eval.json").read_text())["results"][0]["tests"]
    assert {"R_val", "n_kept", "n_invalid", "lcov@5", "bcov@5", "ut_fidelity"} <= set(tests)
    assert 0.0 <= tests["R_val"] <= 1.0 and tests["n_kept"] > 0
    # the procedural GTs are one-line conditional expressions: every line runs, and there is no
    # branch line in coverage.py's sense (arcs between lines), so BCov is undefined
    assert tests["lcov@5"] == 1.0 and tests["bcov@5"] is None
    header = next(
        line for line in (tmp_path / "eval.md").read_text().splitlines() if "R_val" in line
    )
    assert "n_kept" in header and "n_invalid" in header and "validity@5" in header


def test_readme_sample_table_is_what_eval_writes(tmp_path: Path) -> None:
    """README's sample `codea1 eval` table: its command, rerun, gives every number it shows."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    tail = readme[readme.index("A sample of the\nMarkdown table `codea1 eval` writes") :]
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```$", tail, flags=re.M | re.S)
    command, shown = blocks[0].strip(), blocks[1].splitlines()
    words = command.split()
    assert words[:2] == ["codea1", "eval"]
    words = words[2:]
    out = words.index("--out")
    words[out + 1] = str(tmp_path)
    parser = argparse.ArgumentParser()
    eval_cli.add_arguments(parser)
    assert eval_cli.run(parser.parse_args([*words, "--quiet"])) == 0

    def rows(lines: list[str]) -> list[list[str]]:
        return [
            [cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in lines
            if line.startswith("|") and not line.startswith("|---")
        ]

    written = rows((tmp_path / "eval.md").read_text().splitlines())
    sample = rows(shown)
    header, columns = sample[0], written[0]
    assert set(header) <= set(columns), set(header) - set(columns)
    by_policy = {row[0]: dict(zip(columns, row)) for row in written[1:]}
    assert [row[0] for row in sample[1:]] == list(by_policy)
    for row in sample[1:]:
        assert dict(zip(header, row)) == {name: by_policy[row[0]][name] for name in header}


def _test_row(sandbox: Sandbox, problem: Problem, suites: list[str], codes: list[str]) -> Any:
    """The tests metrics of a tester that writes exactly ``suites`` (its samples) on ``problem``,
    with ``codes`` as the candidate pool."""
    from agents.evaluation.evaluate import _evaluate_one, _Shared
    from agents.evaluation.policies import LoadedPolicy
    from codea1_env.scoring.referee import Referee
    from codea1_env.scoring.rewards import RewardConfig

    class Fixed:
        def act(self, observations: list[Any], infos: Any = None) -> list[str]:
            assert len(observations) == len(suites)
            return [f"```python\n{s}\n```" if s else "no tests here" for s in suites]

    settings = EvalSettings(samples=len(suites), ks=(1,), test_k=1, n_candidates=len(codes))
    recorder = RecordingSandbox(sandbox)
    referee = Referee(sandbox=recorder, reward_config=RewardConfig(k=8), owns_sandbox=False)
    codes_ = [[f"```python\n{c}\n```" for c in codes]]
    shared = _Shared([problem], codes_, referee, recorder, SuiteEvaluator(sandbox), settings)
    try:
        return _evaluate_one(LoadedPolicy("t", "t", tester=Fixed()), shared)["tests"]
    finally:
        referee.close()


RANGE = "def f(x):\n    if x < 0:\n        raise ValueError('neg')\n    return 1 if x > 10 else 0\n"
RANGE_PROBLEM = Problem(
    "t/range",
    "def f(x):",
    "f",
    RANGE,
    tests=("assert f(0) == 0", "assert f(1) == 0", "assert f(20) == 1"),
)
ZERO = "def f(x):\n    return 0\n"  # wrong: f(20) == 0


def test_untested_calls_stay_out_of_p00_and_an_empty_suite_discriminates_nothing(
    sandbox: Sandbox,
) -> None:
    # f(-1) raises on the GT: never run on a candidate, so it is neither passed nor failed
    # (p00 had counted it as failed by the wrong code, which returns the claimed 0 there);
    # the suite with no test catches no wrong code: 0, not left out of the mean.
    tests = _test_row(sandbox, RANGE_PROBLEM, ["assert f(-1) == 0\nassert f(20) == 1", ""], [ZERO])
    assert tests["p00"] is None  # no incorrect test was run
    assert tests["p01"] == 0.0  # the wrong code fails the one correct test
    assert tests["discrimination"] == pytest.approx((1.0 + 0.0) / 2)


def test_metrics_read_every_test_of_a_suite(sandbox: Sandbox) -> None:
    lines = [f"assert f({x}) == {int(x > 10)}" for x in range(16)] + ["assert f(50) == 1"]
    lines += ["assert f(60) == 0", "assert f(61) == 0", "assert f(62) == 0"]  # wrong expectations
    window = "def f(x):\n    return 1 if 10 < x < 20 else 0\n"  # wrong: f(50) == 0
    tests = _test_row(sandbox, RANGE_PROBLEM, ["\n".join(lines)], [window])
    assert tests["tests_per_suite"] == 20  # the referee reads 64; the metrics had read 16
    assert tests["ut_accuracy"] == pytest.approx(17 / 20)
    assert tests["discrimination"] == 1.0  # f(50) == 1, test 17, catches it
    assert tests["p00"] == 1.0  # the wrong code returns the three wrong 0s


def test_the_monitor_reads_each_samples_own_run_when_samples_repeat_a_program(
    sandbox: Sandbox,
) -> None:
    """The referee runs a repeated program once: its result belongs to every sample of it."""
    from agents.evaluation.evaluate import _evaluate_one, _Shared
    from agents.evaluation.policies import LoadedPolicy
    from codea1_env.scoring.referee import Referee
    from codea1_env.scoring.rewards import RewardConfig

    plain = "def f(x):\n    return 1 if x > 10 else 0\n"
    opaque = "def f(x):\n    return object()\n"  # a value that is not plain data: flagged

    class Fixed:
        def act(self, observations: list[Any], infos: Any = None) -> list[str]:
            return [f"```python\n{c}\n```" for c in (plain, opaque, opaque)]

    settings = EvalSettings(samples=3, ks=(1,), test_k=1, n_candidates=0)
    recorder = RecordingSandbox(sandbox)
    referee = Referee(sandbox=recorder, reward_config=RewardConfig(k=8), owns_sandbox=False)
    shared = _Shared([RANGE_PROBLEM], [[]], referee, recorder, SuiteEvaluator(sandbox), settings)
    try:
        row = _evaluate_one(LoadedPolicy("c", "c", coder=Fixed()), shared)
    finally:
        referee.close()
    assert row["monitor"]["monitor/not_plain"] == 2  # both samples of it (the tags count programs)


def test_your_own_policy_objects_are_evaluated_beside_specs(sandbox: Sandbox) -> None:
    from agents.evaluation.policies import LoadedPolicy
    from codea1_env.game.duel import answer_for

    problems = [RANGE_PROBLEM]

    class Mine:  # the Policy protocol: act(observations, infos) -> list of texts
        def act(self, observations: list[Any], infos: Any = None) -> list[str]:
            return [answer_for(RANGE) for _ in observations]

    settings = EvalSettings(samples=2, ks=(1,), n_candidates=0)
    mine = LoadedPolicy("mine", "my object", coder=Mine())
    rows = evaluate_policies([mine, "scripted:gt"], problems, settings, sandbox=sandbox)
    assert [(r["name"], r["spec"]) for r in rows] == [
        ("mine", "my object"),
        ("scripted:gt", "scripted:gt"),
    ]
    assert rows[0]["code"]["pass@1"] == rows[1]["code"]["pass@1"] == 1.0
    with pytest.raises(ValueError, match="the name 'mine' is already that of policy"):
        evaluate_policies([mine, "mine=scripted:gt"], problems, settings, sandbox=sandbox)
    with pytest.raises(ValueError, match="neither a coder nor a tester"):
        evaluate_policies([LoadedPolicy("x", "x")], problems, settings, sandbox=sandbox)
