"""``scripts/compare_verdicts.py``: the verdict checks CI runs across Pythons and backends.

``.ci/other_pythons.sh`` compares Python 3.10 and 3.13 with 3.11, ``.ci/other_backends.sh`` the
Docker and Ray backends with the local sandbox.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType

import pytest

from codea1_env.problems import load_source
from codea1_env.problems.schema import problem_to_dict


def _script() -> ModuleType:
    """The script, imported from the repository root (``scripts`` is a namespace package)."""
    return importlib.import_module("scripts.compare_verdicts")


def test_a_known_difference_is_expected_only_across_its_version() -> None:
    cv = _script()
    assert cv.expected("HumanEval/4", (3, 11, 7), (3, 13, 0)) is not None
    assert cv.expected("HumanEval/4", (3, 12, 1), (3, 11, 7)) is not None
    assert cv.expected("HumanEval/4", (3, 12, 1), (3, 13, 0)) is None  # same side of 3.12
    assert cv.expected("HumanEval/4", (3, 10, 13), (3, 11, 7)) is None
    assert cv.expected("HumanEval/0", (3, 11, 7), (3, 13, 0)) is None


def test_judging_a_workload_twice_agrees_and_a_changed_verdict_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cv = _script()
    problem = load_source("bank")["bank/clamp"]
    gt = f"```python\n{problem.gt_program}\n```"
    wrong = "```python\ndef clamp(x, lo, hi):\n    return x\n```"
    suite = "```python\n" + "\n".join(problem.tests[:2]) + "\n```"
    suites = [[suite, "no tests here"], [suite, "no tests here"]]  # per code, its suites
    workload = tmp_path / "work.json"
    workload.write_text(
        json.dumps(
            {"python": [3, 11, 0], "duels": [[problem_to_dict(problem), [gt, wrong], suites]]}
        )
    )
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert cv.main(["judge", str(workload), "--out", str(first)]) == 0
    assert cv.main(["judge", str(workload), "--out", str(second)]) == 0
    assert cv.main(["compare", str(first), str(second)]) == 0
    judged = json.loads(first.read_text())
    assert judged["sandbox"] == "local" and len(judged["python"]) == 3  # the programs' Python
    record = judged["records"][0]
    assert record["compiled"] == [True, True]
    assert record["gt_pass"][0] == 1.0 and record["gt_pass"][1] < 1.0

    changed = json.loads(second.read_text())
    verdict = changed["records"][0]["suites"][1][0][0]  # wrong code, first suite, first test
    verdict[2] = not verdict[2]  # "passed" flipped
    second.write_text(json.dumps(changed))
    capsys.readouterr()
    assert cv.main(["compare", str(first), str(second)]) == 1
    out = capsys.readouterr().out
    assert "bank/clamp: suites differ (NEW)" in out and "1 unexpected" in out
