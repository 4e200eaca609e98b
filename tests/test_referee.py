"""The referee: Code-A1 scoring end to end through the real sandbox, on hand-computed cases."""

from __future__ import annotations

from typing import Any

import pytest

from codea1_env.mistake_book import InMemoryMistakeBook
from codea1_env.problems.problem import IOPair, Problem
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig

THRESHOLD = Problem(
    task_id="t/threshold",
    prompt='def f(x: int) -> int:\n    """Return 1 when x > 10, else 0."""',
    entry_point="f",
    canonical_solution="def f(x: int) -> int:\n    return 1 if x > 10 else 0\n",
    tests=("assert f(0) == 0", "assert f(10) == 0", "assert f(11) == 1", "assert f(50) == 1"),
)
GT = THRESHOLD.canonical_solution
BUGGY = "def f(x):\n    return 1 if x >= 10 else 0\n"  # off by one at x == 10
BROKEN = "def f(x) return 1\n"


@pytest.fixture
def referee(sandbox):
    return Referee(
        sandbox=sandbox, reward_config=RewardConfig(), mistake_book=InMemoryMistakeBook()
    )


def fenced(code: str) -> str:
    return f"Here is my solution:\n```python\n{code}```\n"


def test_correct_code_passes_everything(referee):
    suite = "assert f(10) == 0\nassert f(11) == 1\nassert f(-5) == 0"
    j = referee.judge(THRESHOLD, [fenced(GT)], [[suite]])
    assert j.compiled == (True,)
    assert j.gt_pass_rates == (1.0,)
    assert j.coder_rewards == (1.0,)
    # 3 valid, 0 invalid, K=8: R_val = min(3/8, 1) = 0.375; R_adv = 0 -> 0.5 * 0.375
    assert j.tester_rewards[0][0] == pytest.approx(0.1875)


def test_boundary_test_breaks_buggy_code_and_feeds_the_book(referee):
    suite = "assert f(10) == 0\nassert f(11) == 1"
    j = referee.judge(THRESHOLD, [BUGGY], [[suite]])
    # candidate fails f(10): gen pass 1/2; no mistake book yet -> coder 0.5
    assert j.coder_rewards[0] == pytest.approx(0.5)
    # R_val = min(2/8, 1) = 0.25; R_adv = 1/8 -> 0.5*0.25 + 0.5*0.125
    assert j.tester_rewards[0][0] == pytest.approx(0.1875)
    assert j.gt_pass_rates[0] == pytest.approx(0.75)
    entries = referee.mistake_book.top(THRESHOLD.task_id)
    assert [(e.call, e.expected, e.frequency) for e in entries] == [("f(10)", 0, 1)]
    # Next time the book is replayed: the buggy code fails it again (+1), GT passes it (-1).
    j2 = referee.judge(THRESHOLD, [BUGGY, GT], [[""], [""]])
    assert [v.passed for v in j2.mistake_book[0]] == [False]
    assert [v.passed for v in j2.mistake_book[1]] == [True]
    assert j2.coder_rewards == (0.0, 1.0)
    # failing a stored test adds nothing; the GT passing it takes 1 off: 1 - 1 = 0 -> removed
    assert referee.mistake_book.size(THRESHOLD.task_id) == 0


def test_mistake_book_relative_adversarial_reward(referee):
    referee.mistake_book.apply(THRESHOLD.task_id, [("f(10)", 0)], [])
    suite = "assert f(10) == 0\nassert f(11) == 1\nassert f(9) == 0"
    j = referee.judge(THRESHOLD, [BUGGY], [[suite]], update_book=False)
    # gen failure rate = 1/8 (f(10)); mb failure rate = 1/1
    # R_adv = (0.125 - 1 + 1) / 2 = 0.0625; R_val = 3/8
    t = j.tester_details[0][0]
    assert t.r_adv == pytest.approx(0.0625)
    assert t.total == pytest.approx(0.5 * 0.375 + 0.5 * 0.0625)
    # coder: gen pass 2/3, mb pass 0 -> mean 1/3
    assert j.coder_rewards[0] == pytest.approx(1 / 3)


def test_wrong_expectation_is_kept_with_gt_value_and_counted_invalid(referee):
    suite = "assert f(10) == 1\nassert f(11) == 1"  # first expectation is wrong
    j = referee.judge(THRESHOLD, [BUGGY], [[suite]], update_book=False)
    grading = j.suites[0][0].grading
    assert grading is not None
    assert [t.status for t in grading.tests] == ["invalid_kept", "valid"]
    assert [t.gt_value for t in grading.tests] == [0, 1]
    verdicts = j.suites[0][0].verdicts
    assert [v.passed for v in verdicts] == [False, True]  # run against the GT value 0
    # Both tests are kept (rule 2): R_val = min(2/8, 1 - 1/8) = 0.25; the failure on the
    # corrected test counts for R_adv too (rule 4): 1/8
    assert j.tester_details[0][0].r_val == pytest.approx(0.25)
    assert j.tester_details[0][0].r_adv == pytest.approx(0.125)


def test_gt_errors_and_duplicates_are_dropped(referee):
    suite = "\n".join(
        [
            "assert f('a') == 0",  # GT raises TypeError -> dropped
            "assert f(3) == 0",
            "assert f(3) == 0",  # duplicate: invalid, not kept
            "x = 3\nassert f(x) == 0",  # x replaced by 3 -> a duplicate of f(3) too
        ]
    )
    j = referee.judge(THRESHOLD, [GT], [[suite]], update_book=False)
    grading = j.suites[0][0].grading
    assert grading is not None
    assert (grading.n_kept, grading.n_valid) == (1, 1)
    assert grading.n_invalid == 3  # the GT error and the two duplicates (rule 2)
    reasons = {reason for _, reason, _ in j.suites[0][0].rejected}
    assert {"dropped_duplicate", "dropped_gt_error"} <= reasons


def test_code_that_does_not_compile_zeroes_both(referee):
    j = referee.judge(THRESHOLD, [BROKEN], [["assert f(10) == 0"]])
    assert j.compiled == (False,)
    assert j.coder_rewards == (0.0,)
    assert j.tester_rewards == ((0.0,),)
    assert j.code_errors[0].startswith("syntax_error")
    assert referee.mistake_book.size() == 0  # no book entries from a program that never ran


def test_no_valid_tests(referee):
    j = referee.judge(THRESHOLD, [GT], [["no tests here, sorry"]])
    assert j.suites[0][0].grading is None
    assert j.tester_rewards == ((0.0,),)
    assert j.coder_rewards == (0.0,)  # no generated and no book tests -> 0


def test_hostile_expected_expression_runs_only_in_the_sandbox(referee, tmp_path):
    marker = tmp_path / "pwned"
    suite = f"assert f(11) == (open({str(marker)!r}, 'w').write('x') and 1)\nassert f(0) == 0"
    j = referee.judge(THRESHOLD, [GT], [[suite]], update_book=False)
    assert not marker.exists()
    grading = j.suites[0][0].grading
    assert grading is not None and len(grading.tests) == 2


def test_nonprintable_penalty_reaches_the_tester_reward(referee):
    suite = "assert f(10) == 0\x00\x01"
    j = referee.judge(THRESHOLD, [BUGGY], [[suite]], update_book=False)
    t = j.tester_details[0][0]
    assert t.penalty == pytest.approx(2 / len(suite))


def test_judge_many_is_one_sandbox_call(sandbox):
    referee = Referee(sandbox=sandbox)
    codes = [GT, BUGGY] * 4
    suites = [["assert f(10) == 0\nassert f(11) == 1"] * 8 for _ in codes]
    referee.judge_many([(THRESHOLD, codes, suites), (THRESHOLD, [GT], [[""]])])
    assert sandbox.runs == 1
    # 8 candidate jobs + 1 job for the first problem's GT calls + 1 for the second item's code
    assert sandbox.jobs <= 11


def test_golden_mode_rewards_gt_pass_rate(sandbox):
    referee = Referee(sandbox=sandbox, reward_config=RewardConfig(mode="golden"))
    j = referee.judge(THRESHOLD, [GT, BUGGY], [[], []])
    assert j.coder_rewards == (1.0, 0.75)
    assert referee.gt_pass_rates(THRESHOLD, [BUGGY]) == [0.75]


def test_stdio_problem(sandbox):
    problem = Problem(
        task_id="t/sum",
        prompt="Read two integers and print their sum.",
        entry_point="",
        canonical_solution="a, b = map(int, input().split())\nprint(a + b)\n",
        io_pairs=(IOPair("1 2\n", "3\n"), IOPair("5 5\n", "10\n")),
    )
    referee = Referee(sandbox=sandbox)
    buggy = "a, b = map(int, input().split())\nprint(a + b if a != b else 0)\n"
    tests = "Input:\n5 5\nOutput:\n10\n\nInput:\n2 3\nOutput:\n6\n"
    j = referee.judge(problem, [buggy], [[tests]], update_book=False)
    grading = j.suites[0][0].grading
    assert grading is not None
    assert [t.status for t in grading.tests] == ["valid", "invalid_kept"]
    assert [v.passed for v in j.suites[0][0].verdicts] == [False, True]
    assert j.gt_pass_rates[0] == pytest.approx(0.5)


def test_arguments_are_evaluated_once_without_the_program(referee):
    # Non-literal arguments become literals, so the GT and the candidate get the same input.
    j = referee.judge(THRESHOLD, [GT], [["assert f(sum([5] * 2)) == 0"]], update_book=False)
    assert j.suites[0][0].verdicts[0].test == "assert f(10) == 0"
    # An argument that inspects the program under test cannot see it (no program is loaded
    # where arguments are evaluated), so it cannot make GT and candidate inputs differ.
    spy = "assert f(10 if '>=' in __import__('inspect').getsource(f) else 11) == 0"
    j = referee.judge(THRESHOLD, [BUGGY], [[spy]], update_book=False)
    sv = j.suites[0][0]
    assert sv.grading is None
    assert any(reason.startswith("bad_arguments") for _, reason, _ in sv.rejected)
    assert j.tester_details[0][0].r_val == 0.0  # counted invalid


def test_non_literal_expectation_is_evaluated_in_the_sandbox(referee):
    j = referee.judge(THRESHOLD, [GT], [["assert f(11) == int('1')"]], update_book=False)
    grading = j.suites[0][0].grading
    assert grading is not None and grading.n_valid == 1


def test_judge_many_holds_the_collector_off_and_leaves_it_as_it_found_it(referee, monkeypatch):
    import gc

    from codea1_env.scoring import referee as referee_module

    seen = []
    original = referee_module.score_plan

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(referee_module, "score_plan", spy)
    assert gc.isenabled()
    referee.judge(THRESHOLD, [GT], [["assert f(1) == 0"]])
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        referee.judge(THRESHOLD, [GT], [["assert f(1) == 0"]])
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()


def test_paused_gc_nests_across_threads():
    import gc
    import threading

    from codea1_env.scoring.gcpause import paused_gc

    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with paused_gc():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with paused_gc():
        thread.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other thread is still scoring
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_clear_text_caches_forgets_texts_and_the_problems_gt_tests(referee):
    from codea1_env.scoring import arguments, monitor
    from codea1_env.scoring import plan as plan_module
    from codea1_env.scoring.referee import clear_text_caches

    suite = "assert f(10) == 0\nassert f(11) == 1"
    first = referee.judge(THRESHOLD, [fenced(GT), BUGGY], [[suite], [suite]])
    text_memos = (arguments._literal_value, monitor._scan_program)
    assert all(memo.cache_info().currsize > 0 for memo in text_memos)
    assert plan_module._gt_tests.cache_info().currsize > 0

    referee.judge(THRESHOLD, [fenced(GT)], [[suite]])  # the same problem: its GT tests are kept
    assert plan_module._gt_tests.cache_info().hits > 0

    clear_text_caches()  # a benchmark's pass or side: its texts and its problems are new
    assert [memo.cache_info().currsize for memo in text_memos] == [0, 0]
    assert plan_module._gt_tests.cache_info().currsize == 0
    fresh = Referee(sandbox=referee.sandbox, mistake_book=InMemoryMistakeBook())
    again = fresh.judge(THRESHOLD, [fenced(GT), BUGGY], [[suite], [suite]])
    assert plan_module._gt_tests.cache_info().misses > 0
    assert again.tester_rewards == first.tester_rewards
    assert again.gt_pass_rates == first.gt_pass_rates


def test_the_verdicts_do_not_depend_on_the_host_warning_filters(sandbox):
    """Every parse of model text ignores the compiler's warnings (``quiet_parse``).

    Under ``-W error`` (or pytest's ``filterwarnings = error``) an invalid escape such as
    ``"\\V"`` in a program, a call or an expected value made ``ast.parse`` raise, and the code
    scored as a syntax error, or the test lost its literal or trivial-test handling.
    """
    import warnings

    code = 'def f(x):\n    note = "a\\Vb"\n    return 1 if x > 10 else 0\n'
    suite = "\n".join(
        (
            'assert f(len("\\V") + 7) == 0',  # an argument with an invalid escape
            "assert f(11) == len('\\V') - 1",  # an expected value with one
            "assert f(10) == 0",
        )
    )

    def judged() -> list[Any]:
        referee = Referee(
            sandbox=sandbox, reward_config=RewardConfig(), mistake_book=InMemoryMistakeBook()
        )
        j = referee.judge(THRESHOLD, [code], [[suite]])
        verdict = j.suites[0][0]
        tests = [
            (t.test, t.valid, t.passed, t.status, t.agrees_with_tester) for t in verdict.verdicts
        ]
        return [
            j.compiled,
            j.coder_rewards,
            j.tester_rewards,
            j.gt_pass_rates,
            tests,
            verdict.rejected,
            verdict.parse_reason,
            verdict.n_invalid,
        ]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet = judged()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        strict = judged()
    assert quiet[0] == (True,)  # it compiles: the escape is a warning, not an error
    assert len(quiet[4]) == 3 and all(valid for _, valid, *_ in quiet[4])
    assert strict == quiet
