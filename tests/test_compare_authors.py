"""``scripts/compare_authors.py``: the parts that do not need the authors' checkout.

The comparison itself loads the authors' reward code from a checkout of their repository, which
CI cannot fetch (docs/deviations.md, "Checked against their code, executed"). These tests check
what it is built on: the stand-in for SandboxFusion runs programs in codea1's sandbox, loading a
checkout takes their reward module and nothing of their trainer but the book class, the marker
rule that explains deviation 1, and the suite and code edits of ``--perturb``.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import Sandbox


def _script() -> ModuleType:
    return importlib.import_module("scripts.compare_authors")


ADD = Problem(
    task_id="t/add",
    prompt='def add(a, b):\n    """Return a + b."""',
    entry_point="add",
    canonical_solution="def add(a, b):\n    return a + b\n",
)


def test_marker_rule_reads_test_1_as_passed_when_test_10_passed() -> None:
    ca = _script()
    assert ca.marker_passes([True, False, True]) == 2  # fewer than 11 tests: the true count
    eleven = [False] * 11
    eleven[10] = True  # only test 10 passed; "..._1" is in "..._10"
    assert ca.marker_passes(eleven) == 2
    eleven[1] = True
    assert ca.marker_passes(eleven) == 2  # test 1 passed anyway: nothing extra
    assert ca.marker_passes([False] * 12) == 0
    twelve = [False] * 12
    twelve[11] = True  # "..._1" is in "..._11" too, "..._11" only once
    assert ca.marker_passes(twelve) == 2


def test_stand_in_runs_their_programs_in_the_sandbox(sandbox: Sandbox) -> None:
    ca = _script()
    fusion = ca.SandboxFusionStandIn(sandbox)
    module = fusion.module()
    requests = [
        module.RunCodeRequest(code="print('__CODE_VALID__0', flush=True)\nprint(1 + 1)"),
        module.RunCodeRequest(
            code="import time\nprint('started')\ntime.sleep(30)", run_timeout=0.5
        ),
        module.RunCodeRequest(code="raise SystemExit(3)"),
    ]
    out = module.run_concurrent(
        object(), args=[[i, r] for i, r in enumerate(requests)], concurrency=20
    )
    assert [index for index, _ in out] == [0, 1, 2]
    ok, slow, failed = (response for _, response in out)
    assert ok.status == module.RunStatus.Success
    assert ok.run_result.status == module.CommandRunStatus.Finished
    assert ok.run_result.stdout == "__CODE_VALID__0\n2\n"
    assert slow.run_result.status == module.CommandRunStatus.TimeLimitExceeded
    assert failed.status == module.RunStatus.Failed
    assert failed.run_result.status == module.CommandRunStatus.Error
    assert fusion.programs == 3 and fusion.timeouts == 1
    assert module.run_code(requests[0]).run_result.stdout == "__CODE_VALID__0\n2\n"


def _checkout(root: Path) -> Path:
    rl = root / "Code-A1" / "code" / "rl"
    rl.mkdir(parents=True)
    (rl / "reward.py").write_text(
        textwrap.dedent(
            """
            import torch
            from verl import DataProto
            from verl.workers.reward_manager import register
            from sandbox_fusion import run_code, run_concurrent, RunCodeRequest, RunStatus
            from sandbox_fusion.models import CommandRunResult

            def execute(codes):
                out = run_concurrent(lambda i, r: (i, run_code(r)),
                                     args=[[i, RunCodeRequest(code=c)] for i, c in enumerate(codes)],
                                     concurrency=20)
                return [r.run_result.stdout for _, r in out]

            @register("acg_llm")
            class Manager:
                pass
            """
        ),
        encoding="utf-8",
    )
    (rl / "trainer_a1.py").write_text(
        textwrap.dedent(
            """
            import verl.trainer.not_installed
            from typing import List

            class MistakeBook:
                def get_attack_testcases(self, question_id, max_count=8):
                    items = self.mistake_book.get(question_id, {}).get("attack_testcases", [])
                    return [t["testcase"] for t in items[:max_count]]

            def trainer_only():
                raise AssertionError("not loaded")
            """
        ),
        encoding="utf-8",
    )
    return root


def test_loading_a_checkout_takes_their_module_and_only_the_book_class(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    ca = _script()
    fusion = ca.SandboxFusionStandIn(sandbox)
    before = set(sys.modules)
    reward, book_class = ca.load_authors(_checkout(tmp_path), fusion)
    assert not {"verl", "sandbox_fusion", "verl.workers.reward_manager"} & (
        set(sys.modules) - before
    )
    assert reward.execute(["print('x')", "print(6 * 7)"]) == ["x\n", "42\n"]
    assert fusion.programs == 2
    harness = ca.AuthorsHarness(reward, book_class)
    harness.book.mistake_book["t/add"] = {
        "attack_testcases": [
            {"testcase": "assert add(1, 2) == 3", "frequency": 1},
            {"testcase": "assert add(0, 0) == 0", "frequency": 2},
        ]
    }
    assert harness.top("t/add") == [("add(0, 0)", 2), ("add(1, 2)", 1)]
    assert harness.entries("t/add") == [("add(1, 2)", 1), ("add(0, 0)", 2)]
    # reading the top 8 leaves their stored order alone (their replay sorts it, which decides ties)
    stored = harness.book.mistake_book["t/add"]["attack_testcases"]
    assert [t["testcase"] for t in stored] == ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]


def test_a_missing_checkout_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _script().main(["--authors-repo", str(tmp_path), "--problems", "1"]) == 2
    assert "no code/rl/reward.py" in capsys.readouterr().err


def test_unknown_perturbation_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        _script().main(["--authors-repo", ".", "--perturb", "wrong,typo"])
    assert exc.value.code == 2
    assert "unknown typo" in capsys.readouterr().err


def test_an_out_path_in_a_missing_folder_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "missing" / "report.json"
    with pytest.raises(SystemExit) as exc:
        _script().main(["--authors-repo", str(tmp_path), "--out", str(out)])
    assert exc.value.code == 2
    assert "no such folder" in capsys.readouterr().err


def test_an_out_path_that_is_a_folder_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        _script().main(["--authors-repo", str(tmp_path), "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "is a folder" in capsys.readouterr().err


def test_a_book_difference_is_deviation_24_only_when_the_evaluated_books_agree(
    sandbox: Sandbox,
) -> None:
    ca = _script()
    fusion = ca.SandboxFusionStandIn(sandbox)
    keys = ca.evaluated_keys(fusion, ["add(3, 4)", "add((3,)[0], 4)", "add(1 / 0, 2)", "f(b=2)"])
    assert keys["add(3, 4)"] == keys["add((3,)[0], 4)"] == "add((3, 4), [])"
    assert keys["add(1 / 0, 2)"] == "add(1 / 0, 2)"  # raises: keyed as written
    assert keys["f(b=2)"] == "f((), [('b', 2)])"
    # their book keeps two spellings of add(3, 4) apart; codea1's counts them as one entry
    theirs = [("add(3, 4)", 2), ("add((3,)[0], 4)", 1), ("add(5, 6)", 1)]
    ours = [("add(3, 4)", 3), ("add(5, 6)", 1)]
    assert ca.explain_book("t/add", ours, theirs, set(), fusion).startswith("deviation 24")
    # a count that differs after evaluation, or equal books in another order: unexplained
    miscounted = [("add(3, 4)", 4), ("add(5, 6)", 1)]
    assert ca.explain_book("t/add", miscounted, theirs, set(), fusion) == "unexplained"
    assert ca.explain_book("t/add", list(reversed(ours)), ours, set(), fusion) == "unexplained"
    assert ca.explain_book("t/add", miscounted, theirs, {"t/add"}, fusion).startswith("follows")


def test_suite_and_code_edits() -> None:
    ca = _script()
    rng = np.random.default_rng(0)
    suite = "```python\nassert add(1, 2) == 3\nassert add(2, 2) == 4\n```"

    def lines(kind: str) -> list[str]:
        text = ca._perturb_suite(suite, ADD, kind, rng)
        return [ln for ln in text.splitlines() if ln.startswith("assert")]

    wrong = lines("wrong")
    assert len(wrong) == 2 and sum(ln.endswith("== 'wrong'") for ln in wrong) == 1
    repeated = lines("repeat")
    assert len(repeated) == 3 and len(set(repeated)) == 2
    assert "assert add() == 0" in lines("gt-error")
    assert lines("extra") == [
        "assert add(1, 2) == 3",
        "assert add(2, 2) == 4",
        "assert add((1,)[0], 2) == 3",
        "assert add((2,)[0], 2) == 4",
    ]
    penalty = ca._perturb_suite(suite, ADD, "penalty", rng)
    assert penalty.endswith(suite) and any(ord(ch) > 127 for ch in penalty)
    with pytest.raises(SyntaxError):
        compile(ca._perturb_code(ADD, "syntax").strip("`\n").removeprefix("python\n"), "c", "exec")
    assert "raise RuntimeError" in ca._perturb_code(ADD, "raises")
    duels = [(ADD, ["```python\n" + ADD.gt_program + "\n```"] * 2, [[suite] * 2] * 2)]
    edited = ca.perturb(duels, ["wrong", "syntax"], seed=0)
    codes, rows = edited[0][1], edited[0][2]
    assert "return (" in codes[-1] and codes[0] == duels[0][1][0]  # problem 0: the last code edited
    assert rows[0][0] == suite and rows[1][1] == suite  # (code + suite) even: left alone
    assert rows[0][1] != suite and rows[1][0] != suite


class _GoldenStub:
    """Stands in for the authors' harness: fixed golden rewards per code."""

    def __init__(self, rewards: list[float]) -> None:
        self.rewards = rewards

    def golden(self, duels: list[Any]) -> list[list[float]]:
        return [self.rewards for _ in duels]


def test_golden_comparison_counts_and_explains(sandbox: Sandbox) -> None:
    from codea1_env.scoring.referee import Referee
    from codea1_env.scoring.rewards import RewardConfig

    ca = _script()
    problem = Problem(
        task_id="t/add",
        prompt=ADD.prompt,
        entry_point="add",
        canonical_solution=ADD.canonical_solution,
        tests=("assert add(1, 2) == 3", "assert add(2, 2) == 4"),
    )
    codes = [
        f"```python\n{problem.gt_program}\n```",
        "```python\ndef add(a, b):\n    return a * b\n```",  # passes add(2, 2) only
    ]
    duels: list[Any] = [(problem, codes, [[], []])]
    referee = Referee(
        sandbox=sandbox, reward_config=RewardConfig(mode="golden"), owns_sandbox=False
    )
    agree = ca.compare_golden(duels, 8, _GoldenStub([1.0, 0.5]), referee)
    assert agree["agree"] == {"coder": {"same": 2, "compared": 2}} and not agree["differences"]
    differ = ca.compare_golden(duels, 8, _GoldenStub([1.0, 1.0]), referee)
    assert differ["agree"]["coder"] == {"same": 1, "compared": 2}
    assert differ["explained"] == {"unexplained": 1}
    assert differ["differences"][0]["ours"] == {"reward": 0.5, "gt_tests_counted": 2}
