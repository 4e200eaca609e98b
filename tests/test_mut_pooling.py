"""mut@k between policies: every tester of one evaluation is scored against the same mutants.

The audit's example (``/tmp/audit_metrics/check_mut_pool2.py``): GT ``x if x < 100 else 0`` has
11 mutants, of which one (``return 0 -> return -0``) is equivalent. Tester A (``f(1)``, ``f(2)``,
``f(200)``) kills 7 of the 10 others and misses the three that differ only at 99 or 100
(``<`` -> ``<=``, ``100 -> 101``, ``100 -> 99``); tester B (``f(99)``, ``f(100)``, ``f(1)``) kills
all 10. Judged on each tester's own inputs, A's three misses looked equivalent and both scored
mut@3 = 1.0.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.commands import eval_cli
from agents.evaluation.evaluate import EvalSettings, evaluate_policies
from agents.evaluation.policies import LoadedPolicy
from codea1_env.evaluation import SuiteEvaluator
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import Sandbox
from codea1_env.sandbox.factory import make_sandbox

CUT = Problem(
    "audit/cut",
    'def f(x):\n    """x below 100, else 0."""\n',
    "f",
    "def f(x):\n    if x < 100:\n        return x\n    return 0\n",
    tests=("assert f(1) == 1", "assert f(5) == 5", "assert f(200) == 0"),
)
A = "assert f(1) == 1\nassert f(2) == 2\nassert f(200) == 0\n"
B = "assert f(99) == 99\nassert f(100) == 0\nassert f(1) == 1\n"
EQUIVALENT = 10  # return 0 -> return -0, the last mutant in generation order
MISSED_BY_A = {0, 3, 4}  # '<' -> '<=', 100 -> 101, 100 -> 99
SETTINGS = EvalSettings(samples=1, ks=(1,), test_k=3, n_candidates=0, max_mutants=None)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with make_sandbox("local") as box:
        yield box


class Fixed:
    """A tester that writes the same suites for every observation (one per sample, cycled)."""

    def __init__(self, *texts: str) -> None:
        self.texts = texts

    def act(self, observations: list[Any], infos: Any = None) -> list[str]:
        return [self.texts[i % len(self.texts)] for i in range(len(observations))]


def _tester(name: str, *texts: str) -> LoadedPolicy:
    return LoadedPolicy(name, name, tester=Fixed(*texts))


def test_testers_evaluated_together_are_scored_against_the_same_mutants(
    sandbox: Sandbox,
) -> None:
    rows = evaluate_policies([_tester("A", A), _tester("B", B)], [CUT], SETTINGS, sandbox=sandbox)
    a, b = (row["tests"] for row in rows)
    assert a["validity@3"] == b["validity@3"] == 1.0
    assert a["mut@3"] == pytest.approx(0.7)  # was 1.0: its three misses were forgiven
    assert b["mut@3"] == 1.0
    for tests in (a, b):  # one judgement for both: the same excluded mutants
        assert (tests["mutants"], tests["crashing"], tests["equivalent"]) == (11, 0, 1)
    for row in rows:
        assert row["mutants_judged_with"] == ["A", "B"]
        (problem,) = row["per_problem"]
        assert problem["mutants"]["counted"] == [i for i in range(11) if i != EQUIVALENT]
        assert problem["mutants"]["changes"][EQUIVALENT] == "line 4: return 0 -> return -0"
        assert problem["mutants"]["changes"][0] == "line 2: '<' -> '<='"
        assert problem["mutants"]["judged_on_suites"] == 2
        assert problem["mut@3_counted"] == [True]
    assert rows[0]["per_problem"][0]["mutation_scores"] == [pytest.approx(0.7)]


def test_a_single_tester_is_judged_on_its_own_inputs_as_before(sandbox: Sandbox) -> None:
    """Alone, A's misses are indistinguishable from equivalent mutants (the GT tests miss them
    too): the meaning of a one-tester evaluation is unchanged, and it says what judged them."""
    (row,) = evaluate_policies([_tester("A", A)], [CUT], SETTINGS, sandbox=sandbox)
    assert row["tests"]["mut@3"] == 1.0
    assert row["tests"]["equivalent"] == 1 + len(MISSED_BY_A)
    assert row["mutants_judged_with"] == ["A"]
    counted = row["per_problem"][0]["mutants"]["counted"]
    assert set(range(11)) - set(counted) == MISSED_BY_A | {EQUIVALENT}


def test_only_suites_with_k_valid_tests_are_counted(sandbox: Sandbox) -> None:
    wrong_first = "assert f(1) == 2\nassert f(99) == 99\nassert f(100) == 0\n"
    settings = EvalSettings(samples=2, ks=(1,), test_k=3, n_candidates=0, max_mutants=None)
    (row,) = evaluate_policies([_tester("C", wrong_first, B)], [CUT], settings, sandbox=sandbox)
    (problem,) = row["per_problem"]
    assert problem["mut@3_counted"] == [False, True]  # the first suite's f(1) expects 2
    assert problem["mutation_scores"][0] is not None  # scored, but not in mut@3
    assert row["tests"]["mut@3"] == 1.0 and row["tests"]["mut@3_suites"] == 1


def test_evaluate_pooled_splits_the_groups_back(sandbox: Sandbox) -> None:
    evaluator = SuiteEvaluator(sandbox)
    (alone,) = evaluator.evaluate([(CUT, [A], [])])
    ((one,),) = evaluator.evaluate_pooled([CUT], [[[A]]], [[]])
    assert one.suites == alone.suites and one.mutant_classes == alone.mutant_classes
    (a,), (b,) = evaluator.evaluate_pooled([CUT], [[[A]], [[B, B]]], [[]])
    assert len(a.suites) == 1 and len(b.suites) == 2
    assert a.mutant_classes == b.mutant_classes and a.n_equivalent == 1
    assert sum(any(row) for row in a.suites[0].mutant_kills) == 7
    with pytest.raises(ValueError, match="group 0 has 2 entries for 1 problems"):
        evaluator.evaluate_pooled([CUT], [[[A], [B]]], [[]])
    with pytest.raises(ValueError, match="candidate lists"):
        evaluator.evaluate_pooled([CUT], [[[A]]], [])


def test_eval_md_names_the_testers_that_judged_the_mutants(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    eval_cli.add_arguments(parser)
    args = parser.parse_args(
        [
            "--policy",
            "trivial=scripted:trivial",
            "--policy",
            "boundary=scripted:boundary",
            "--source",
            "procedural-test:0",
            "--problems",
            "2",
            "--samples",
            "1",
            "--n-candidates",
            "0",
            "--out",
            str(tmp_path),
            "--quiet",
        ]
    )
    assert eval_cli.run(args) == 0
    record = json.loads((tmp_path / "eval.json").read_text())
    assert [r["mutants_judged_with"] for r in record["results"]] == [["trivial", "boundary"]] * 2
    page = (tmp_path / "eval.md").read_text()
    assert "the suites of trivial, boundary together" in page
    assert "paper's layout" not in (eval_cli.__doc__ or "")
