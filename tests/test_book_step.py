"""Rule 8 once per problem per step: a problem judged twice in one batch gets one book update."""

from __future__ import annotations

from typing import Any

from codea1_env.mistake_book import InMemoryMistakeBook
from codea1_env.problems.problem import Problem
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig

THRESHOLD = Problem(
    task_id="t/threshold",
    prompt='def f(x: int) -> int:\n    """Return 1 when x > 10, else 0."""',
    entry_point="f",
    canonical_solution="def f(x: int) -> int:\n    return 1 if x > 10 else 0\n",
    tests=("assert f(0) == 0", "assert f(10) == 0", "assert f(11) == 1"),
)
GT = THRESHOLD.canonical_solution
BUGGY = "def f(x):\n    return 1 if x >= 10 else 0\n"  # off by one at x == 10


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


def _book_after_batch(sandbox: Any, items: list[Any]) -> dict[str, int]:
    book = InMemoryMistakeBook()
    referee = Referee(sandbox=sandbox, reward_config=RewardConfig(), mistake_book=book)
    # BUGGY answers 1 at f(10): the book stores that call at frequency 1
    referee.judge(THRESHOLD, [fenced(BUGGY)], [["assert f(10) == 0"]])
    assert {e.call: e.frequency for e in book.entries(THRESHOLD.task_id)} == {"f(10)": 1}
    referee.judge_many(items)
    return {e.call: e.frequency for e in book.entries(THRESHOLD.task_id)}


def test_a_problem_twice_in_one_batch_gets_one_update_over_all_its_codes(sandbox: Any) -> None:
    # copy 1: GT passes the replayed f(10) (-1), BUGGY fails a kept f(10) (+1);
    # copy 2: GT passes it again (-1). One update: -2 (removed) then +1, a new entry at 1.
    # One update per copy would remove it, add it back, and remove it again.
    items = [
        (THRESHOLD, [fenced(GT), fenced(BUGGY)], [["assert f(10) == 0"], ["assert f(10) == 0"]]),
        (THRESHOLD, [fenced(GT)], [["assert f(0) == 0"]]),
    ]
    assert _book_after_batch(sandbox, items) == {"f(10)": 1}


def test_one_copy_per_problem_is_updated_as_before(sandbox: Any) -> None:
    items = [
        (THRESHOLD, [fenced(GT), fenced(BUGGY)], [["assert f(10) == 0"], ["assert f(10) == 0"]]),
    ]
    # -1 (removed), then +1: back at 1 as a new entry
    assert _book_after_batch(sandbox, items) == {"f(10)": 1}
    items = [(THRESHOLD, [fenced(GT)], [["assert f(0) == 0"]])]
    assert _book_after_batch(sandbox, items) == {}
