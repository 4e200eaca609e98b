"""CodeTestDuel-v0: the Gymnasium contract, custom problems, bad moves, errors."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

import codea1_env  # noqa: F401  (registers the ids)
from codea1_env.envs.duel_env import CodeTestDuelEnv
from codea1_env.problems import ProblemFormatError

CUSTOM = {
    "task_id": "custom/abs_diff",
    "prompt": 'def abs_diff(a: int, b: int) -> int:\n    """Return |a - b|."""',
    "entry_point": "abs_diff",
    "canonical_solution": "def abs_diff(a, b):\n    return abs(a - b)\n",
    "tests": [
        "assert abs_diff(1, 3) == 2",
        "assert abs_diff(3, 1) == 2",
        "assert abs_diff(0, 0) == 0",
    ],
}
BUGGY = "```python\ndef abs_diff(a, b):\n    return a - b\n```"


@pytest.fixture
def env(sandbox):
    e = CodeTestDuelEnv(sandbox=sandbox)
    yield e
    e.close()


def test_registered_and_reachable_by_module_path(sandbox):
    assert "CodeTestDuel-v0" in gym.registry
    e = gym.make("codea1_env:CodeTestDuel-v0", sandbox=sandbox)
    obs, info = e.reset(seed=1)
    assert obs["role"] == 0 and info["role"] == "coder"
    e.close()


def test_check_env_passes_without_warnings(sandbox):
    e = CodeTestDuelEnv(sandbox=sandbox)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(e, skip_render_check=True)
    e.close()


def test_full_episode_with_custom_problem(env):
    obs, info = env.reset(options={"problem": CUSTOM})
    assert info["task_id"] == "custom/abs_diff"
    assert obs == {"role": 0, "prompt": CUSTOM["prompt"], "entry_point": "abs_diff", "code": ""}
    obs, reward, terminated, truncated, info = env.step(BUGGY)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert obs["role"] == 1 and "return a - b" in obs["code"]  # white-box view for the tester
    tests = "```python\nassert abs_diff(1, 3) == 2\nassert abs_diff(3, 1) == 2\n```"
    obs, reward, terminated, truncated, info = env.step(tests)
    assert terminated and not truncated
    assert set(info["rewards"]) == {"coder", "tester"}
    assert info["rewards"]["tester"] == reward
    # coder passes 1 of 2 -> 0.5; tester: R_val 2/8, R_adv 1/8 -> 0.1875
    assert info["rewards"]["coder"] == pytest.approx(0.5)
    assert reward == pytest.approx(0.1875)
    assert [v["passed"] for v in info["verdicts"]] == [False, True]
    assert info["tests"][0] == "assert abs_diff(1, 3) == 2"
    assert "FAIL" in env.render()


def test_problem_id_option_and_unknown_id(env):
    _, info = env.reset(seed=0)
    task_id = info["task_id"]
    _, info2 = env.reset(options={"problem_id": task_id})
    assert info2["task_id"] == task_id
    with pytest.raises(ValueError, match="no such problem"):
        env.reset(options={"problem_id": "does/not/exist"})


def test_malformed_custom_problem_names_the_field(env):
    bad = dict(CUSTOM, tests="assert abs_diff(1, 3) == 2")  # a string, not a list
    with pytest.raises(ProblemFormatError, match="tests"):
        env.reset(options={"problem": bad})


def test_step_before_reset_and_after_end_raise(env):
    with pytest.raises(ResetNeeded):
        env.step("x")
    env.reset(options={"problem": CUSTOM})
    env.step(BUGGY)
    env.step("assert abs_diff(1, 1) == 0")
    with pytest.raises(ResetNeeded):
        env.step("x")


@pytest.mark.parametrize(
    "move, reason",
    [
        ("", "empty"),
        (b"\xff\xfe\x00binary", "binary"),
        ("x" * 1_000_000, "too_long"),
        (12345, "not_text"),
    ],
)
def test_bad_coder_moves_score_zero_with_a_reason(env, move, reason):
    env.reset(options={"problem": CUSTOM})
    env.step(move)
    _, reward, terminated, _, info = env.step("assert abs_diff(1, 3) == 2")
    assert terminated
    assert info["rewards"]["coder"] == 0.0
    assert info["reasons"]["coder"].startswith(reason)
    assert info["rewards"]["tester"] == 0.0  # nothing ran, so the tester earns nothing either
    assert str(info["rewards"]["tester"]) == "0.0"  # not -0.0


def test_prose_without_code_is_a_legal_move_that_scores_zero(env):
    env.reset(options={"problem": CUSTOM})
    env.step("I think the answer is to subtract the numbers.")
    _, _, _, _, info = env.step("assert abs_diff(1, 3) == 2")
    assert info["rewards"]["coder"] == 0.0
    assert info["reasons"]["coder"].startswith("did_not_run")


@pytest.mark.parametrize("move", ["", "\x00\x01\x02", "y" * 1_000_000, "assert (", "print('hi')"])
def test_bad_tester_moves_score_zero_and_never_raise(env, move):
    env.reset(options={"problem": CUSTOM})
    env.step(BUGGY)
    _, reward, terminated, _, info = env.step(move)
    assert terminated
    assert reward <= 0.0
    assert info["reasons"]["tester"]


def test_golden_mode_ends_after_the_coder(sandbox):
    e = CodeTestDuelEnv(sandbox=sandbox, reward_mode="golden")
    e.reset(options={"problem": CUSTOM})
    _, reward, terminated, _, info = e.step(BUGGY)
    assert terminated
    assert reward == pytest.approx(2 / 3)  # fails only abs_diff(1, 3) == 2 of the GT tests
    assert info["rewards"] == {"coder": reward, "tester": 0.0}
    e.close()


def test_sqlite_mistake_book_persists_across_envs(sandbox, tmp_path):
    path = tmp_path / "book.sqlite"
    e = CodeTestDuelEnv(sandbox=sandbox, mistake_book=str(path))
    e.reset(options={"problem": CUSTOM})
    e.step(BUGGY)
    e.step("assert abs_diff(1, 3) == 2")
    e.close()
    e2 = CodeTestDuelEnv(sandbox=sandbox, mistake_book=str(path))
    e2.reset(options={"problem": CUSTOM})
    e2.step(BUGGY)
    _, _, _, _, info = e2.step("")
    assert [v["passed"] for v in info["mistake_book_verdicts"]] == [False]
    e2.close()


def test_limits_dict_and_unknown_field(sandbox):
    e = CodeTestDuelEnv(sandbox=sandbox, limits={"call_timeout_s": 0.5})
    assert e.referee.limits.call_timeout_s == 0.5
    with pytest.raises(ValueError, match="unknown field"):
        CodeTestDuelEnv(sandbox=sandbox, limits={"nope": 1})


def test_human_render_prints_the_duel(sandbox, capsys):
    e = CodeTestDuelEnv(sandbox=sandbox, render_mode="human")
    e.reset(options={"problem": CUSTOM})
    assert "(turn: coder)" in capsys.readouterr().out  # printed by reset itself
    e.step(BUGGY)
    shown = capsys.readouterr().out
    assert "return a - b" in shown and "(turn: tester)" in shown  # and by step
    e.step("assert abs_diff(1, 3) == 2")
    shown = capsys.readouterr().out
    assert "FAIL" in shown and "(turn: done)" in shown
    assert e.render() is None
    assert "custom/abs_diff" in capsys.readouterr().out
    e.close()
    quiet = CodeTestDuelEnv(sandbox=sandbox, render_mode="ansi")
    quiet.reset(options={"problem": CUSTOM})
    quiet.step(BUGGY)
    assert capsys.readouterr().out == ""  # ansi mode prints nothing by itself
    quiet.close()


def test_a_suite_past_the_size_limit_says_where_it_was_cut(env):
    env.reset(options={"problem": CUSTOM})
    env.step(BUGGY)
    lines = [f"assert abs_diff({i}, 0) == {i}" for i in range(2000)]  # about 54,000 chars
    _, _, terminated, _, info = env.step("\n".join(lines))
    assert terminated
    (cut,) = [entry for entry in info["rejected"] if entry["reason"] == "cut_off"]
    assert cut["source"] == lines[cut["line"] - 1]
    assert not any(f"abs_diff({cut['line'] - 1}, 0)" in test for test in info["tests"])


def test_golden_mode_grades_gt_tests_against_the_gts_own_values(sandbox):
    """Deviation 17: a GT test's written expectation the GT does not produce is corrected to
    the GT's value (not failed by every code); one the GT cannot run is left out."""
    problem = {
        "task_id": "custom/add",
        "prompt": 'def add(a, b):\n    """Return a + b."""\n',
        "entry_point": "add",
        "canonical_solution": "def add(a, b):\n    return a + b\n",
        "tests": [
            "assert add(1, 2) == 3",
            "assert add(0, 0) == 0",
            "assert add(5, 5) == 10",
            "assert add(-1, 1) == 0",
            "assert add(2, 2) == 5",  # bad data: the GT returns 4
            "assert add(2, 'x') == 5",  # bad data: the GT raises
        ],
    }
    env = CodeTestDuelEnv(sandbox=sandbox, reward_mode="golden")
    rewards = {}
    for name, body in (
        ("abs", "return abs(a) + b"),  # fails add(-1, 1); returns the GT's 4 for add(2, 2)
        ("written", "return a + b + (1 if a == 2 else 0)"),  # returns the written 5 there
    ):
        env.reset(options={"problem": problem})
        _, rewards[name], *_ = env.step(f"def add(a, b):\n    {body}\n")
    env.close()
    # five GT tests the GT runs, expectations 3, 0, 10, 0 and the GT's 4
    assert rewards == {"abs": pytest.approx(4 / 5), "written": pytest.approx(4 / 5)}


def test_reset_refuses_both_problem_keys_and_a_problem_id_that_is_not_text(env) -> None:
    record = {
        "task_id": "custom/one",
        "prompt": "def one():\n",
        "entry_point": "one",
        "canonical_solution": "def one():\n    return 1\n",
        "tests": ["assert one() == 1"],
    }
    with pytest.raises(ValueError, match="give 'problem' .* or 'problem_id' .* not both"):
        env.reset(options={"problem": record, "problem_id": "bank/clamp"})
    for bad in (3, None, ["bank/clamp"]):
        with pytest.raises(TypeError, match="'problem_id'.*expects a str"):
            env.reset(options={"problem_id": bad})
    _, info = env.reset(options={"problem_id": "bank/clamp"})
    assert info["task_id"] == "bank/clamp"


def test_the_observation_space_prints_in_a_line(env) -> None:
    # Gymnasium's Text repr prints its whole charset: 55,000 characters per text field
    text = repr(env.observation_space)
    assert len(text) < 400 and "Text(1, 16384, charset=<" in text
    assert text == str(env.observation_space)


def test_pickling_or_copying_an_env_says_why_it_cannot(env) -> None:
    import copy
    import pickle

    for attempt in (pickle.dumps, copy.deepcopy):
        with pytest.raises(TypeError, match="a codea1 env cannot be pickled or deep-copied"):
            attempt(env)


def test_reset_after_close_says_the_env_is_closed() -> None:
    """A closed env cannot score (its sandbox is stopped): reset says so, not a later step."""
    from codea1_env.scoring.referee import Referee

    env = gym.make("CodeTestDuel-v0", source="bank")
    env.reset(seed=0)
    env.close()
    with pytest.raises(RuntimeError, match="this env is closed"):
        env.reset(seed=0)
    with Referee() as referee:  # a referee the env was given outlives the env's close()
        shared = gym.make("CodeTestDuel-v0", source="bank", referee=referee)
        shared.reset(seed=0)
        shared.close()
        shared.reset(seed=0)
        assert not referee.closed
    assert referee.closed
    with pytest.raises(RuntimeError, match="the referee given to this env was closed"):
        shared.reset(seed=0)  # its owner closed it: the env was never closed
