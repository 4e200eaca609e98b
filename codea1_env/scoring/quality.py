"""Quality filtering: tests that are trivial by construction, rejected before they count.

With the filter on (:class:`~codea1_env.stability.StabilityOptions` ``quality_filter``), the
referee drops such tests before grading, counts each as invalid (so it lowers the validity
reward), and reports ``trivial:<reason>`` in the suite's rejections and ``quality/*`` metrics.
With it off, they are scored as the paper does. Reasons:

* ``self_referential``: the expected side calls the entry point too (``f(1) == f(1)`` or
  ``f(2) == f(1) + 1``): it checks the code against itself, so it cannot catch a wrong answer;
* ``copied_from_prompt``: the call appears verbatim in the problem prompt (a docstring example
  the coder already sees);
* ``always_passes``: every one of at least ``always_pass_after`` distinct candidates seen so far
  for this problem passed it (it separates nothing).

Tests that do not call the entry point, and syntactic duplicates, never reach grading anyway
(the parser rejects them with ``wrong_function`` / ``no_call`` / ``duplicate``).
"""

from __future__ import annotations

import ast
import re
from collections import OrderedDict

from codea1_env.scoring.testcases import TestCase

__all__ = ["PassHistory", "trivial_reason"]

_HISTORY_SIZE = 200_000


def trivial_reason(case: TestCase, entry_point: str, prompt: str) -> str:
    """Why ``case`` is trivial by construction (``""`` when it is not).

    Args:
        case: A parsed test.
        entry_point: The function under test.
        prompt: The problem prompt (docstring examples are copied from here).
    """
    try:
        expected = ast.parse(case.expected, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    for node in ast.walk(expected):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == entry_point
        ):
            return "self_referential"
    if _normalized(case.call) and _normalized(case.call) in _normalized(prompt):
        return "copied_from_prompt"
    return ""


def _normalized(source: str) -> str:
    return re.sub(r"\s+", "", source)


class PassHistory:
    """Per (problem, call): how many distinct candidates ran a valid test and how many passed.

    Bounded (least recently used entries are forgotten past 200,000 tests).
    """

    def __init__(self) -> None:
        self._stats: OrderedDict[tuple[str, str], tuple[set[int], int]] = OrderedDict()

    def record(self, task_id: str, call: str, program: str, passed: bool) -> None:
        """Record one candidate's outcome on one valid test (repeats of a program count once)."""
        key = (task_id, call)
        programs, failures = self._stats.get(key, (set(), 0))
        programs.add(hash(program))
        self._stats[key] = (programs, failures + (0 if passed else 1))
        self._stats.move_to_end(key)
        while len(self._stats) > _HISTORY_SIZE:
            self._stats.popitem(last=False)

    def always_passes(self, task_id: str, call: str, min_candidates: int) -> bool:
        """True when at least ``min_candidates`` distinct candidates ran it and none failed."""
        programs, failures = self._stats.get((task_id, call), (set(), 0))
        return failures == 0 and len(programs) >= min_candidates
