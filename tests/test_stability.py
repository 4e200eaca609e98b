"""Training-stability options: anonymization, curriculum, bounded book, refresh, quality filter."""

from __future__ import annotations

import numpy as np
import pytest

from codea1_env.envs.duel_env import CodeTestDuelEnv
from codea1_env.game.anonymize import anonymize
from codea1_env.mistake_book import InMemoryMistakeBook
from codea1_env.problems import ListSource
from codea1_env.problems.curriculum import Curriculum, CurriculumSchedule, difficulty_of, hard_only
from codea1_env.problems.problem import Problem
from codea1_env.scoring.referee import Referee
from codea1_env.stability import StabilityOptions, make_stability

THRESHOLD = Problem(
    task_id="t/threshold",
    prompt='def f(x: int) -> int:\n    """Return 1 when x > 10, else 0.\n\n    >>> f(3)\n    0\n    """',
    entry_point="f",
    canonical_solution="def f(x: int) -> int:\n    return 1 if x > 10 else 0\n",
    tests=("assert f(0) == 0", "assert f(10) == 0", "assert f(11) == 1"),
)
BUGGY = "def f(x):\n    return 1 if x >= 10 else 0\n"
COMMENTED = '''def f(x):
    """Checks the threshold at ten."""
    threshold_value = 10  # boundary!
    return 1 if x > threshold_value else 0
'''


# ------------------------------------------------------------------ anonymization
def test_anonymize_strips_names_comments_docstrings_and_keeps_behaviour():
    out = anonymize(COMMENTED, "f")
    assert "threshold_value" not in out and "boundary" not in out and "Checks" not in out
    assert out.startswith("def f(x):")
    ns_a: dict = {}
    ns_b: dict = {}
    exec(COMMENTED, ns_a)
    exec(out, ns_b)
    assert [ns_a["f"](i) for i in range(20)] == [ns_b["f"](i) for i in range(20)]


def test_anonymize_leaves_unparsable_code_alone():
    assert anonymize("def f(:\n", "f") == "def f(:\n"


def test_env_shows_anonymized_code_but_runs_the_original(sandbox):
    env = CodeTestDuelEnv(sandbox=sandbox, stability={"anonymize_code": True})
    env.reset(options={"problem": THRESHOLD})
    obs, *_ = env.step(COMMENTED)
    assert "threshold_value" not in obs["code"] and "def f(x)" in obs["code"]
    _, _, _, _, info = env.step("assert f(10) == 0\nassert f(11) == 1")
    assert info["rewards"]["coder"] == 1.0
    env.close()


# ------------------------------------------------------------------ curriculum
def _problems():
    return [
        Problem(f"c/{i}", "p", "f", "def f(x):\n    return x\n", ("assert f(1) == 1",), (), d)
        for i, d in enumerate([0.1, 0.2, 0.5, 0.9])
    ]


def test_difficulty_sources():
    p = _problems()[0]
    assert difficulty_of(p) == 0.1
    tagged = Problem("c/t", "p", "f", "x", (), (), None, ("hard",))
    assert difficulty_of(tagged) == 0.8
    untagged = Problem("c/u", "p", "f", "x")
    assert difficulty_of(untagged) == 0.5
    assert difficulty_of(untagged, {"c/u": 0.9}) == pytest.approx(0.1)


def test_curriculum_starts_easy_and_widens_when_the_coder_passes():
    schedule = CurriculumSchedule(start=0.2, step=0.4, promote_at=0.8, window=4)
    cur = Curriculum(ListSource(_problems()), schedule)
    rng = np.random.default_rng(0)
    assert {cur.sample(rng).task_id for _ in range(50)} == {"c/0", "c/1"}
    for _ in range(4):
        cur.observe("c/0", 0.5)  # not good enough: no promotion
    assert cur.level == 0.2
    for _ in range(4):
        cur.observe("c/0", 1.0)
    assert cur.level == pytest.approx(0.6)
    assert {cur.sample(rng).task_id for _ in range(80)} == {"c/0", "c/1", "c/2"}
    assert cur.history and cur.state()["curriculum/promotions"] == 1.0


def test_hard_only_filter():
    hard = hard_only(ListSource(_problems()), 0.5)
    assert sorted(hard.ids()) == ["c/2", "c/3"]
    with pytest.raises(ValueError):
        hard_only(ListSource(_problems()), 0.95)


def test_env_with_curriculum_logs_its_state(sandbox):
    env = CodeTestDuelEnv(
        ListSource(_problems()),
        sandbox=sandbox,
        stability={"curriculum": True, "curriculum_schedule": {"start": 0.1, "window": 2}},
    )
    env.reset(seed=0)
    env.step("def f(x):\n    return x\n")
    _, _, _, _, info = env.step("assert f(2) == 2")
    assert info["curriculum/level"] >= 0.1
    assert "curriculum/running_pass_rate" in info
    env.close()


# ------------------------------------------------------------------ bounded / refreshed book
def test_bounded_book_evicts_lowest_frequency(sandbox):
    book = InMemoryMistakeBook()
    referee = Referee(
        sandbox=sandbox,
        mistake_book=book,
        stability=StabilityOptions(book_capacity_per_problem=2),
    )
    suite = "assert f(10) == 0\nassert f(11) == 1\nassert f(9) == 0"
    always_wrong = "def f(x):\n    return 2\n"
    j = referee.judge(THRESHOLD, [always_wrong, BUGGY], [[suite], [suite]])
    # 4 failures recorded (always_wrong fails 3, BUGGY fails f(10)), then bounded to 2 entries
    assert book.size(THRESHOLD.task_id) == 2
    assert j.metrics["mistake_book/evicted"] == 1.0
    assert book.top(THRESHOLD.task_id)[0].call == "f(10)"  # frequency 2 survives first


def test_refresh_drops_stored_tests_that_no_longer_hold(sandbox):
    book = InMemoryMistakeBook()
    book.apply(THRESHOLD.task_id, [("f(10)", 0), ("f(11)", 0)], [])  # f(11) should be 1
    referee = Referee(sandbox=sandbox, mistake_book=book)
    assert referee.refresh_book([THRESHOLD]) == 1
    assert [e.call for e in book.entries(THRESHOLD.task_id)] == ["f(10)"]


# ------------------------------------------------------------------ quality filter
def test_quality_filter_rejects_trivial_tests_with_reasons(sandbox):
    suite = "\n".join(
        [
            "assert f(2) == f(2)",  # self-referential
            "assert f(3) == 0",  # copied from the prompt's example
            "assert f(10) == 0",
        ]
    )
    on = Referee(sandbox=sandbox, stability=StabilityOptions(quality_filter=True))
    j = on.judge(THRESHOLD, [BUGGY], [[suite]], update_book=False)
    sv = j.suites[0][0]
    reasons = {reason for _, reason, _ in sv.rejected}
    assert {"trivial:self_referential", "trivial:copied_from_prompt"} <= reasons
    assert sv.grading is not None and len(sv.grading.tests) == 1
    # 1 valid, 2 invalid (trivial) -> R_val = min(1/8, 6/8) = 0.125
    assert j.tester_details[0][0].r_val == pytest.approx(0.125)
    assert j.metrics["quality/trivial_tests"] == 2.0
    off = Referee(sandbox=sandbox)
    j_off = off.judge(THRESHOLD, [BUGGY], [[suite]], update_book=False)
    assert j_off.suites[0][0].grading is not None
    assert len(j_off.suites[0][0].grading.tests) == 3  # scored as the paper does


def test_quality_filter_always_passes_after_enough_candidates(sandbox):
    referee = Referee(
        sandbox=sandbox, stability=StabilityOptions(quality_filter=True, always_pass_after=2)
    )
    suite = "assert f(50) == 1"
    codes = [
        "def f(x):\n    return int(x > 10)\n",
        "def f(x):\n    return 1 if x >= 10 else 0\n",
    ]
    referee.judge(THRESHOLD, codes, [[suite], [suite]], update_book=False)
    j = referee.judge(THRESHOLD, [BUGGY], [[suite]], update_book=False)
    assert "trivial:always_passes" in {r for _, r, _ in j.suites[0][0].rejected}


def test_syntax_errors_are_rejected_with_a_reason(sandbox):
    env = CodeTestDuelEnv(sandbox=sandbox)
    env.reset(options={"problem": THRESHOLD})
    env.step("```python\ndef f(x)\n    return 1\n```")
    _, _, _, _, info = env.step("assert f(1) == 0")
    assert info["reasons"]["coder"].startswith("did_not_run: syntax_error")
    env.close()


def test_make_stability_validates():
    assert make_stability({"quality_filter": True}).quality_filter
    with pytest.raises(ValueError, match="unknown option"):
        make_stability({"nope": 1})
    with pytest.raises(ValueError):
        StabilityOptions(book_capacity_total=0)
