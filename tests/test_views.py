"""Views over the same referee: vector env, PettingZoo AEC, single-role envs, token wrapper."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import codea1_env
import codea1_env.envs.vector
from codea1_env.envs.duel_env import CodeTestDuelEnv
from codea1_env.scoring.referee import Referee

PROBLEM = {
    "task_id": "custom/clamp",
    "prompt": 'def clamp(x: int, lo: int, hi: int) -> int:\n    """Clamp x to [lo, hi]."""',
    "entry_point": "clamp",
    "canonical_solution": "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
    "tests": [
        "assert clamp(5, 0, 10) == 5",
        "assert clamp(-1, 0, 10) == 0",
        "assert clamp(11, 0, 10) == 10",
    ],
}
CODES = [
    "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
    "def clamp(x, lo, hi):\n    return min(x, hi)\n",
    "def clamp(x, lo, hi):\n    return max(lo, x)\n",
    "def clamp(x, lo, hi)\n    return x\n",
]
SUITES = [
    "assert clamp(-1, 0, 10) == 0",
    "assert clamp(11, 0, 10) == 10\nassert clamp(5, 0, 10) == 5",
    "assert clamp(0, 0, 0) == 1",
    "nothing",
]


def test_vector_env_matches_single_envs_and_batches(sandbox):
    n = len(CODES) * len(SUITES)
    codes = [CODES[i // len(SUITES)] for i in range(n)]
    suites = [SUITES[i % len(SUITES)] for i in range(n)]
    venv = gym.make_vec(
        "CodeTestDuel-v0",
        num_envs=n,
        vectorization_mode="vector_entry_point",
        sandbox=sandbox,
        group_size=n,
    )
    obs, infos = venv.reset(seed=0, options={"problem": PROBLEM})
    assert list(obs["role"]) == [0] * n
    obs, rewards, term, trunc, infos = venv.step(codes)
    assert not term.any() and list(obs["role"]) == [1] * n
    runs_before = sandbox.runs
    obs, rewards, term, trunc, infos = venv.step(suites)
    assert term.all() and not trunc.any()
    assert sandbox.runs == runs_before + 1  # the whole batch is one sandbox call
    coder = infos["rewards"]["coder"]
    # the same episodes one by one through single envs (each with a fresh, empty mistake book,
    # as the vector env's was) give the same rewards
    for i in range(n):
        single = CodeTestDuelEnv(sandbox=sandbox)
        single.reset(options={"problem": PROBLEM})
        single.step(codes[i])
        _, r, _, _, info = single.step(suites[i])
        assert r == pytest.approx(rewards[i])
        assert info["rewards"]["coder"] == pytest.approx(coder[i])
    # autoreset on the next step
    obs, rewards, term, trunc, infos = venv.step(["x"] * n)
    assert list(obs["role"]) == [0] * n and not term.any()
    venv.close()


def test_vector_env_groups_share_a_problem(sandbox):
    venv = codea1_env.envs.vector.CodeTestDuelVectorEnv(num_envs=6, group_size=3, sandbox=sandbox)
    _, infos = venv.reset(seed=3)
    ids = list(infos["task_id"])
    assert ids[0] == ids[1] == ids[2] and ids[3] == ids[4] == ids[5]
    with pytest.raises(ValueError):
        codea1_env.envs.vector.CodeTestDuelVectorEnv(num_envs=5, group_size=2, sandbox=sandbox)


def test_pettingzoo_api(sandbox):
    from pettingzoo.test import api_test

    env = codea1_env.pettingzoo_env(sandbox=sandbox)
    api_test(env, num_cycles=4, verbose_progress=False)


def test_pettingzoo_loop_delivers_both_rewards(sandbox):
    env = codea1_env.pettingzoo_env(sandbox=sandbox)
    env.reset(seed=0, options={"problem": PROBLEM})
    moves = {"coder": CODES[1], "tester": SUITES[0]}
    totals = {"coder": 0.0, "tester": 0.0}
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        totals[agent] += reward
        if agent == "tester" and not terminated:
            assert "return min(x, hi)" in obs["code"]
        env.step(None if terminated or truncated else moves[agent])
    # coder fails clamp(-1, 0, 10): 0/1 -> 0; tester: R_val 1/8, R_adv 1/8 -> 0.125
    assert totals == {"coder": 0.0, "tester": pytest.approx(0.125)}


def test_pettingzoo_step_before_reset_and_after_the_end_says_call_reset(sandbox):
    env = codea1_env.pettingzoo_env(sandbox=sandbox)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(CODES[1])
    with pytest.raises(RuntimeError, match=r"call reset\(\) before observe"):
        env.observe("coder")  # no problem yet: nothing in the observation space to show
    env.reset(seed=0, options={"problem": PROBLEM})
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        env.step(
            None if terminated or truncated else {"coder": CODES[1], "tester": SUITES[0]}[agent]
        )
    with pytest.raises(RuntimeError, match="the duel is over; call reset"):
        env.step(SUITES[0])


@pytest.mark.parametrize("env_id", ["CodeTestDuel-Coder-v0", "CodeTestDuel-Tester-v0"])
def test_single_role_envs_pass_check_env(sandbox, env_id):
    # built directly (no spec), since check_env's close check deep-copies the spec's kwargs
    env = gym.spec(env_id).make(sandbox=sandbox).unwrapped
    env.spec = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, skip_render_check=True)
    env.close()
    env.close()  # closing twice is allowed


def test_coder_env_rewards_gt_pass_rate(sandbox):
    env = gym.make("CodeTestDuel-Coder-v0", sandbox=sandbox)
    env.reset(options={"problem": PROBLEM})
    _, reward, terminated, _, _ = env.step(CODES[1])
    assert terminated and reward == pytest.approx(2 / 3)
    env.close()


@pytest.mark.parametrize("opponent", ["gt", "gt+mistake_book"])
def test_coder_env_reports_what_the_adapters_report(sandbox, opponent):
    # One scoring path: the Coder env's info (reasons included: a code of scoring.reasons) is
    # the adapters' (RewardCore, behind TRL, verl, SkyRL and the reward service) for one answer.
    from agents.integrations.core import CoderRow, PairResult, RewardCore
    from codea1_env.scoring.reasons import REASON_CODES, reason_code

    env = gym.make("CodeTestDuel-Coder-v0", sandbox=sandbox, opponent=opponent)
    core = RewardCore("bank", opponent=opponent, sandbox=sandbox)
    try:
        for answer in (CODES[1], CODES[0], "no code here"):
            env.reset(options={"problem": PROBLEM})
            _, reward, _, _, info = env.step(answer)
            (theirs,) = core.score([CoderRow(core.problem(PROBLEM), answer)])
            assert isinstance(theirs, PairResult)
            assert reward == theirs.coder
            assert info["reasons"] == theirs.info["reasons"]
            assert {reason_code(r) for r in info["reasons"].values()} <= REASON_CODES | {""}
            if opponent == "gt":
                assert info["reasons"]["tester"] == "golden_mode"
    finally:
        env.close()
        core.close()


def test_tester_env_draws_gt_or_mutants(sandbox):
    env = gym.make("CodeTestDuel-Tester-v0", sandbox=sandbox, p_gt=0.0)
    obs, info = env.reset(seed=0, options={"problem": PROBLEM})
    assert info["candidate"].startswith("mutant")
    assert obs["code"] and obs["code"] != PROBLEM["canonical_solution"]
    _, reward, terminated, _, info = env.step("\n".join(PROBLEM["tests"]))
    assert terminated and np.isfinite(float(reward))
    env.close()


@pytest.mark.requires("stable_baselines3")
def test_token_env_passes_sb3_check_env(sandbox):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    from codea1_env.envs.tokens import END, TokenEnv

    inner = gym.make("CodeTestDuel-Tester-v0", sandbox=sandbox, source="procedural").unwrapped
    env = TokenEnv(inner, max_tokens=12)
    sb3_check_env(env, warn=True)
    env.reset(seed=0)
    for token in ["assert {entry_point}(", "1", ") == ", "0", END]:
        _, reward, terminated, _, info = env.step(env.vocab.index(token))
    assert terminated
    assert info["text"].startswith("assert f(1) == 0")
    env.close()


def test_all_views_share_one_referee(sandbox):
    referee = Referee(sandbox=sandbox)
    env = CodeTestDuelEnv(referee=referee)
    venv = codea1_env.envs.vector.CodeTestDuelVectorEnv(num_envs=2, referee=referee)
    aec = codea1_env.pettingzoo_env(referee=referee)
    assert env.referee is venv.referee is aec.referee


def _views(sandbox):
    """A builder per view, each taking ``render_mode``."""
    from codea1_env.envs.pettingzoo_aec import CodeTestDuelAEC
    from codea1_env.envs.single_role import CoderEnv, TesterEnv
    from codea1_env.envs.tokens import TokenEnv
    from codea1_env.envs.vector import CodeTestDuelVectorEnv

    return {
        "duel": lambda mode: CodeTestDuelEnv(sandbox=sandbox, render_mode=mode),
        "vector": lambda mode: CodeTestDuelVectorEnv(2, sandbox=sandbox, render_mode=mode),
        "aec": lambda mode: CodeTestDuelAEC(sandbox=sandbox, render_mode=mode),
        "coder": lambda mode: CoderEnv(sandbox=sandbox, render_mode=mode),
        "tester": lambda mode: TesterEnv(sandbox=sandbox, render_mode=mode),
        "tokens": lambda mode: TokenEnv(TesterEnv(sandbox=sandbox), render_mode=mode),
    }


def test_every_view_refuses_a_render_mode_it_does_not_have(sandbox):
    for name, build in _views(sandbox).items():
        with pytest.raises(ValueError, match="render_mode must be None or one of") as caught:
            build("rgb_array")
        assert "rgb_array" in str(caught.value), name
        build("ansi").close()  # every view has "ansi"


def test_unknown_reset_options_warn_and_a_non_dict_is_refused(sandbox):
    env = CodeTestDuelEnv(sandbox=sandbox)
    with pytest.warns(UserWarning, match=r"unknown key\(s\) 'problem_idd' ignored"):
        env.reset(seed=0, options={"problem_idd": "custom/clamp"})
    with pytest.raises(TypeError, match="expects a dict, got list"):
        env.reset(options=["problem_id"])  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset(options={"problem": PROBLEM})  # known keys: no warning
    env.close()
    venv = codea1_env.envs.vector.CodeTestDuelVectorEnv(num_envs=2, sandbox=sandbox)
    with pytest.warns(UserWarning, match="known: problem, problem_id, problem_ids") as caught:
        venv.reset(options={"problem_idd": "x"})
    assert len(caught) == 1  # once per reset, not once per group
    with pytest.raises(ValueError, match="not both"):
        venv.reset(options={"problem_ids": ["bank/clamp"] * 2, "problem": PROBLEM})
    venv.close()


@pytest.mark.parametrize(
    ("ids", "says"),
    [
        (3, r"problem_ids: expected a list of 2 problem ids \(one per group\), got int"),
        ("ab", r"problem_ids: expected a list of 2 problem ids \(one per group\), got str"),
        (["bank/clamp"], r"problem_ids: expected 2 ids \(one per group\), got 1"),
        (["bank/clamp", 7], r"problem_ids\[1\]: expected a problem id \(str\), got int"),
        (["bank/clamp", "bank/zzz"], r"problem_ids\[1\] = 'bank/zzz': no such problem"),
    ],
)
def test_vector_env_problem_ids_errors_name_the_option(sandbox, ids, says):
    venv = codea1_env.envs.vector.CodeTestDuelVectorEnv(num_envs=2, sandbox=sandbox)
    with pytest.raises(ValueError, match=says):
        venv.reset(options={"problem_ids": ids})
    venv.close()


def test_vector_env_step_wants_one_text_per_sub_env(sandbox):
    venv = codea1_env.envs.vector.CodeTestDuelVectorEnv(num_envs=1, sandbox=sandbox)
    venv.reset(seed=0)
    for actions in ("def f(): pass", b"def f(): pass", None, 3):
        with pytest.raises(TypeError, match="actions: expected a sequence of 1 texts"):
            venv.step(actions)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="actions: expected 1 actions, got 2"):
        venv.step(["a", "b"])
    venv.step(("def f(): pass",))  # a tuple is a sequence of texts
    venv.close()


def test_unknown_reset_options_are_reported_at_the_callers_line(sandbox):
    """Through gym.make's wrappers too (a fixed stacklevel pointed into game/host.py there)."""
    from gymnasium.wrappers import RecordEpisodeStatistics

    from codea1_env.envs.pettingzoo_aec import CodeTestDuelAEC
    from codea1_env.envs.single_role import CoderEnv

    views: dict[str, Any] = {
        "direct": CodeTestDuelEnv(sandbox=sandbox),
        "gym.make": gym.make("CodeTestDuel-v0", sandbox=sandbox),
        "gym.make + wrapper": RecordEpisodeStatistics(gym.make("CodeTestDuel-v0", sandbox=sandbox)),
        "vector": codea1_env.envs.vector.CodeTestDuelVectorEnv(num_envs=2, sandbox=sandbox),
        "coder": CoderEnv(sandbox=sandbox),
        "aec": CodeTestDuelAEC(sandbox=sandbox),
    }
    for name, env in views.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            env.reset(seed=0, options={"problme_id": "bank/clamp"})
        unknown = [w for w in caught if "unknown key(s)" in str(w.message)]
        assert len(unknown) == 1, name
        assert unknown[0].filename == __file__, (name, unknown[0].filename)
        env.close()


def test_vector_env_seed_lists_use_every_seed(sandbox):
    venv = codea1_env.envs.vector.CodeTestDuelVectorEnv(num_envs=4, sandbox=sandbox)

    def draws(seed):
        return [tuple(venv.reset(seed=seed)[1]["task_id"]) for _ in range(3)]

    base = draws([1, 2, 3, 4])
    assert draws([1, 2, 3, 4]) == base  # reproducible
    assert venv.np_random_seed == -1
    # the old code read seed[0] only: changing any later seed changed nothing
    assert draws([1, 2, 3, 5]) != base
    for bad in ([1, 2], [1, 2, 3, None], [1, 2, 3, -1]):
        with pytest.raises(ValueError, match="seed"):
            venv.reset(seed=bad)  # type: ignore[arg-type]
    venv.close()


def test_human_mode_prints_on_reset_and_step_in_every_gymnasium_view(sandbox, capsys):
    from codea1_env.envs.single_role import CoderEnv, TesterEnv

    for env in (
        CoderEnv(sandbox=sandbox, render_mode="human"),
        TesterEnv(sandbox=sandbox, render_mode="human"),
    ):
        env.reset(seed=0, options={"problem": PROBLEM})
        assert "custom/clamp" in capsys.readouterr().out
        env.step("assert clamp(5, 0, 10) == 5")
        assert "custom/clamp" in capsys.readouterr().out
        env.close()


@pytest.mark.parametrize(
    "vector_kwargs",
    [{}, {"shared_memory": False}, {"copy": False}],
    ids=["shared-memory", "pipes", "shared-memory-no-copy"],
)
def test_async_vector_env_sees_what_sync_sees_at_every_step(vector_kwargs):
    """Gymnasium's own shared-memory reader decodes ``Text`` once, at construction: every prompt
    and code after it would be blank filler (``codea1_env.game.shared_text`` reads each step)."""
    sync = gym.make_vec("CodeTestDuel-v0", num_envs=2, vectorization_mode="sync")
    parallel = gym.make_vec(
        "CodeTestDuel-v0", num_envs=2, vectorization_mode="async", vector_kwargs=vector_kwargs
    )
    codes = ["def f(x):\n    return x\n", "def g(\u00e9):\n    return '\u4e2d\u6587'\n"]
    try:
        expected, _ = sync.reset(seed=3)
        seen, _ = parallel.reset(seed=3)
        shown = graded = False
        for step in range(6):
            shown = shown or any(seen["code"])
            for key in ("prompt", "entry_point", "code"):
                assert tuple(seen[key]) == tuple(expected[key]), (step, key)
                if "copy" not in vector_kwargs:  # the default copy: plain strings, as sync gives
                    assert type(seen[key]) is tuple
            assert list(seen["role"]) == list(expected["role"])
            assert all(p.strip() for p in seen["prompt"])  # not the filler of blank lines
            # by whose turn it is: a code, or a suite that calls this problem's function
            act = [
                codes[i] if role == 0 else f"assert {name}(1) == 1\nassert {name}('\u4e2d') != 0"
                for i, (role, name) in enumerate(zip(expected["role"], expected["entry_point"]))
            ]
            expected, reward, *_ = sync.step(act)
            seen, parallel_reward, *_ = parallel.step(act)
            assert list(parallel_reward) == list(reward)
            graded = graded or any(reward)
        assert graded, "no step scored anything but 0"
        assert shown, "no step showed the tester a candidate's code"
    finally:
        sync.close()
        parallel.close()
