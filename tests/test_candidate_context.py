"""``RewardConfig.candidate_context``: a candidate alone, or in the authors' context (row 12).

The authors' harness runs a candidate after the GT in one interpreter, both programs' imports
hoisted to the top and the GT's functions deleted. ``candidate_context="authors"`` rebuilds that
program (``scoring/candidate_context.py``); it was compared one-off with their own composition
(``extract_imps_fns`` and ``evaluate`` of their ``reward.py``, executed side by side on 3 GTs x
10 candidates: the same validity and the same call results in all 30; not committed: CI cannot
reach their files). These tests pin the behaviour that comparison showed.
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest
from judging_helpers import fenced

from agents.training.config import TrainConfig, add_config_arguments, config_from_args
from codea1_env.mistake_book import InMemoryMistakeBook
from codea1_env.problems import problem_from_dict
from codea1_env.problems.problem import IOPair, Problem
from codea1_env.scoring.candidate_context import authors_program, hoist_imports
from codea1_env.scoring.plan import SuiteParser, plan_problem
from codea1_env.scoring.quality import PassHistory
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.stability import StabilityOptions

GT = (
    "import math\n"
    "SCALE = 10\n"
    "class Box:\n"
    "    k = 2\n"
    "def area(r):\n"
    "    return round(math.pi * r * r * SCALE / 10, 3)\n"
)
PROBLEM = problem_from_dict(
    {
        "task_id": "t/area",
        "prompt": "def area(r):\n",
        "entry_point": "area",
        "canonical_solution": GT,
        "tests": ["assert area(1) == 3.142", "assert area(2) == 12.566"],
    }
)
# name -> (candidate, its GT pass rate alone, in the authors' context)
CANDIDATES: dict[str, tuple[str, float, float]] = {
    "forgot an import the GT has": ("def area(r):\n    return round(math.pi * r * r, 3)", 0, 1),
    "uses a GT constant": (
        "import math\ndef area(r):\n    return round(math.pi * r * r * SCALE / 10, 3)",
        0,
        1,
    ),
    "uses a GT class": (
        "import math\ndef area(r):\n    return round(math.pi * r * r, Box.k + 1)",
        0,
        1,
    ),
    "correct alone": ("import math\ndef area(r):\n    return round(math.pi * r * r, 3)", 1, 1),
    "defines no entry point (the GT's is deleted)": ("def other(r):\n    return 1", 0, 0),
    # a block emptied by the hoisted import does not parse: their harness finds it invalid
    "an import in an if": (
        "if True:\n    import math\ndef area(r):\n    return round(math.pi * r * r, 3)",
        1,
        0,
    ),
}


def _golden(context: Any, sandbox: Any) -> tuple[list[float], list[bool]]:
    referee = Referee(
        sandbox=sandbox, reward_config=RewardConfig(mode="golden", candidate_context=context)
    )
    codes = [fenced(code) for code, _, _ in CANDIDATES.values()]
    judgement = referee.judge(PROBLEM, codes, [[] for _ in codes])
    return list(judgement.coder_rewards), list(judgement.compiled)


@pytest.mark.parametrize("context", ["alone", "authors"])
def test_what_a_candidate_sees_in_each_context(context: str, sandbox: Any) -> None:
    rewards, ran = _golden(context, sandbox)
    column = 1 if context == "alone" else 2
    expected = [float(row[column]) for row in CANDIDATES.values()]
    assert dict(zip(CANDIDATES, rewards)) == dict(zip(CANDIDATES, expected))
    empty_if = list(CANDIDATES).index("an import in an if")
    assert ran[empty_if] is (context == "alone")  # invalid code in their context


def test_the_testers_suites_are_graded_against_the_gt_alone_either_way(sandbox: Any) -> None:
    suite = fenced("assert area(1) == 3.142\nassert area(3) == 0")
    codes = [fenced(CANDIDATES["forgot an import the GT has"][0])]
    judged = {}
    for context in ("alone", "authors"):
        config = RewardConfig(candidate_context=context)  # type: ignore[arg-type]
        referee = Referee(sandbox=sandbox, reward_config=config)
        judged[context] = referee.judge(PROBLEM, codes, [[suite]], update_book=False)
    alone, authors = judged["alone"], judged["authors"]
    # the same kept tests and validity (the GT runs on its own), other candidate verdicts
    one, two = alone.suites[0][0].grading, authors.suites[0][0].grading
    assert one is not None and two is not None
    assert [t.gt_value for t in one.tests] == [t.gt_value for t in two.tests]
    assert [v.passed for v in alone.suites[0][0].verdicts] == [False, False]
    assert [v.passed for v in authors.suites[0][0].verdicts] == [True, True]


def test_the_rebuilt_program_follows_the_authors_layout() -> None:
    program = authors_program(GT, "from collections import Counter\ndef area(r):\n    return 1")
    assert program == (
        "from collections import Counter\n"
        "import math\n"
        "try:\n"
        "    SCALE = 10\n"
        "\n"
        "    class Box:\n"
        "        k = 2\n"
        "\n"
        "    def area(r):\n"
        "        return round(math.pi * r * r * SCALE / 10, 3)\n"
        "except Exception:\n"
        "    pass\n"
        "try:\n"
        "    del area\n"
        "except Exception:\n"
        "    pass\n"
        "if True:\n"
        "    def area(r):\n"
        "        return 1\n"
    )


def test_hoisting_reaches_class_bodies_and_blocks_but_not_functions() -> None:
    code = (
        "import os\n"
        "class C:\n"
        "    import re\n"
        "    def m(self):\n"
        "        import json\n"
        "        return json\n"
        "async def g():\n"
        "    return 1\n"
        "def f():\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner\n"
    )
    rest, imports, functions = hoist_imports(code)
    assert imports == {"import os", "import re"}
    assert functions == {"m", "g", "f"}  # class methods too, nested functions not
    assert "import json" in rest and "import os" not in rest
    assert hoist_imports("def f(:\n") == ("def f(:\n", set(), set())


def test_stdio_problems_always_run_alone() -> None:
    stdio = Problem(
        task_id="t/echo",
        prompt="Echo the input.",
        entry_point="",
        canonical_solution="print(input())",
        io_pairs=(IOPair("a\n", "a\n"),),
    )
    common: dict[str, Any] = {
        "parser": SuiteParser(),
        "stability": StabilityOptions(),
        "history": PassHistory(),
        "mistake_book": InMemoryMistakeBook(),
    }
    authors = RewardConfig(candidate_context="authors")
    assert plan_problem(PROBLEM, ["x"], [[]], config=authors, **common).authors_context
    assert not plan_problem(stdio, ["x"], [[]], config=authors, **common).authors_context
    assert not plan_problem(PROBLEM, ["x"], [[]], config=RewardConfig(), **common).authors_context


def test_the_setting_is_checked_and_reaches_the_trainers_referee() -> None:
    with pytest.raises(ValueError, match="candidate_context must be one of"):
        RewardConfig(candidate_context="gt")  # type: ignore[arg-type]
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    config = config_from_args(parser.parse_args(["--candidate-context", "authors"]), "nano")
    assert config.reward_config().candidate_context == "authors"
    assert TrainConfig.from_dict(config.to_dict()).candidate_context == "authors"
    assert config_from_args(parser.parse_args([]), "nano").reward_config().candidate_context == (
        "alone"
    )
