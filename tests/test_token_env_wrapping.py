"""``TokenEnv`` wraps only single-role envs and passes their episode end through.

A text episode is one move, so the two-player ``CodeTestDuel-v0`` (two moves) is refused at
construction, unless in golden mode (one move); the last step's ``terminated`` / ``truncated`` are the inner env's.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any, SupportsFloat

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import TimeLimit

from codea1_env.envs import single_role
from codea1_env.envs.duel_env import CodeTestDuelEnv
from codea1_env.envs.tokens import END, SINGLE_ROLE_IDS, TokenEnv
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig

PROBLEM = {
    "task_id": "custom/clamp",
    "prompt": 'def clamp(x: int, lo: int, hi: int) -> int:\n    """Clamp x to [lo, hi]."""',
    "entry_point": "clamp",
    "canonical_solution": "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
    "tests": ["assert clamp(5, 0, 10) == 5", "assert clamp(-1, 0, 10) == 0"],
}

StepResult = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]


class _EndAs(gym.Wrapper[Any, Any, Any, Any]):
    """Reports the inner step's episode end as the given ``(terminated, truncated)``."""

    def __init__(self, env: gym.Env[Any, Any], terminated: bool, truncated: bool) -> None:
        super().__init__(env)
        self.flags = (terminated, truncated)

    def step(self, action: Any) -> StepResult:
        obs, reward, _, _, info = self.env.step(action)
        return obs, reward, self.flags[0], self.flags[1], info


def _play(env: TokenEnv, tokens: list[str]) -> StepResult:
    """Reset on :data:`PROBLEM` and step the given tokens; the last step's result."""
    env.reset(seed=0, options={"problem": PROBLEM})
    result: StepResult | None = None
    for token in tokens:
        result = env.step(env.vocab.index(token))
    assert result is not None
    return result


TWO_PLAYER: dict[str, Callable[[Any], TokenEnv]] = {
    "id": lambda sb: TokenEnv("CodeTestDuel-v0", sandbox=sb, source="bank", max_tokens=2),
    # a kwarg only the single-role envs take: refused before gym.make can choke on it
    "id with a tester kwarg": lambda sb: TokenEnv("CodeTestDuel-v0", sandbox=sb, p_gt=0.5),
    "made instance": lambda sb: TokenEnv(gym.make("CodeTestDuel-v0", sandbox=sb)),
    "bare instance": lambda sb: TokenEnv(CodeTestDuelEnv(sandbox=sb)),
}


@pytest.mark.parametrize("how", list(TWO_PLAYER))
def test_the_two_player_env_is_refused_with_the_ids_it_takes(sandbox, how):
    with pytest.raises(ValueError, match="needs a single-role env") as caught:
        TWO_PLAYER[how](sandbox)
    message = str(caught.value)
    for env_id in SINGLE_ROLE_IDS:
        assert repr(env_id) in message
    got = "'CodeTestDuelEnv'" if how == "bare instance" else "'CodeTestDuel-v0'"
    assert message.endswith(f"got {got}"), message


def test_the_refusal_names_exactly_what_it_got(sandbox):
    expected = (
        "TokenEnv plays one text as one move, so it needs a single-role env: one of "
        "'CodeTestDuel-Coder-v0', 'CodeTestDuel-Tester-v0' (a CoderEnv or TesterEnv instance, "
        "possibly wrapped; or CodeTestDuel-v0 with reward_mode='golden', where the coder's move "
        "ends the episode); got 'CodeTestDuel-v0'"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        TokenEnv("CodeTestDuel-v0", sandbox=sandbox)


@pytest.mark.parametrize(
    "build",
    [
        lambda sb: TokenEnv("CodeTestDuel-Tester-v0", sandbox=sb, p_gt=0.0),
        lambda sb: TokenEnv("CodeTestDuel-Coder-v0", sandbox=sb, opponent="gt"),
        lambda sb: TokenEnv(single_role.TesterEnv(sandbox=sb)),
        lambda sb: TokenEnv(single_role.CoderEnv(sandbox=sb)),
        lambda sb: TokenEnv(gym.make("CodeTestDuel-Tester-v0", sandbox=sb)),  # wrapped
        # the duel env in golden mode: the coder's move ends its episode
        lambda sb: TokenEnv(CodeTestDuelEnv(sandbox=sb, reward_mode="golden")),
        lambda sb: TokenEnv("CodeTestDuel-v0", sandbox=sb, reward_mode="golden"),
        lambda sb: TokenEnv(  # golden through a shared referee, not a reward_mode keyword
            "CodeTestDuel-v0",
            referee=Referee(sandbox=sb, reward_config=RewardConfig(mode="golden")),
        ),
    ],
    ids=[
        "tester id",
        "coder id",
        "tester",
        "coder",
        "made tester",
        "golden duel",
        "golden id",
        "golden referee",
    ],
)
def test_single_role_envs_are_accepted_and_terminate(sandbox, build):
    env = build(sandbox)
    _, reward, terminated, truncated, info = _play(env, ["assert {entry_point}(", "5", END])
    assert (terminated, truncated) == (True, False)
    assert info["text"] == "assert clamp(5"
    assert info["inner_reward"] == float(reward)
    assert info["inner_info"]["task_id"] == "custom/clamp"
    assert info["rewards"] == info["inner_info"]["rewards"]
    env.close()


@pytest.mark.parametrize(("terminated", "truncated"), [(False, True), (True, False), (True, True)])
def test_the_inner_episode_end_is_passed_through(sandbox, terminated, truncated):
    env = TokenEnv(
        _EndAs(single_role.TesterEnv(sandbox=sandbox), terminated, truncated), max_tokens=3
    )
    result = _play(env, ["assert {entry_point}(", "1", "2"])  # ends at max_tokens
    assert result[2:4] == (terminated, truncated)
    assert result[4]["text"] == "assert clamp(12"
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)
    env.close()


def test_a_time_limited_inner_env_says_truncated(sandbox):
    env = TokenEnv(TimeLimit(single_role.TesterEnv(sandbox=sandbox), max_episode_steps=1))
    _, _, terminated, truncated, _ = _play(env, [END])
    assert truncated and terminated  # TimeLimit truncates; the tester's step terminates
    env.close()


def test_an_inner_env_that_does_not_end_is_an_error(sandbox):
    env = TokenEnv(_EndAs(single_role.TesterEnv(sandbox=sandbox), False, False))
    with pytest.raises(RuntimeError, match="did not end its episode"):
        _play(env, [END])
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)
    env.close()


@pytest.mark.parametrize("env_id", SINGLE_ROLE_IDS)
def test_token_env_passes_gymnasium_check_env(sandbox, env_id):
    env = TokenEnv(env_id, sandbox=sandbox, source="procedural", max_tokens=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, skip_render_check=True)
    env.close()
