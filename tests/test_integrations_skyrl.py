"""SkyRL-gym 0.4.0 envs (codea1_coder, codea1_tester): made with skyrl_gym.make and stepped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import codea1_env  # noqa: F401
from codea1_env.game.duel import answer_for
from codea1_env.problems import problem_to_dict

skyrl_gym = pytest.importorskip(
    "skyrl_gym", reason="SkyRL-gym is not installed (pip install 'codea1[skyrl]')"
)
skyrl = pytest.importorskip("agents.integrations.skyrl")

PROBLEM = "bank/reverse_words"
BUGGY = answer_for(
    "def reverse_words(s):\n"
    "    words = s.split(' ')\n"
    "    return ' '.join(w for w in reversed(words) if w)\n"
)
TESTS = "```python\nassert reverse_words('a b') == 'b a'\nassert reverse_words('  a  b ') == 'b a'\nassert reverse_words('x') == 'y'\n```"


@pytest.fixture
def config(shared_sandbox: Any) -> Iterator[dict[str, Any]]:
    yield {"opponent": "gt+mistake_book", "sandbox": shared_sandbox}
    skyrl.close_shared_cores()


def test_registered_with_skyrl_gym() -> None:
    assert skyrl.CODER_ENV_ID in skyrl_gym.registry
    assert skyrl.TESTER_ENV_ID in skyrl_gym.registry
    skyrl.register_envs()  # idempotent


def test_env_config_may_be_an_omegaconf_dictconfig() -> None:
    omegaconf = pytest.importorskip("omegaconf")  # a dependency of skyrl-gym
    config = omegaconf.OmegaConf.create({"opponent": "gt", "k": 8})
    assert skyrl._plain_config(config) == {"opponent": "gt", "k": 8}


def test_coder_then_tester_steps_equal_the_env(config: dict[str, Any], shared_sandbox: Any) -> None:
    coder = skyrl_gym.make(
        skyrl.CODER_ENV_ID,
        env_config=config,
        extras={"reward_spec": {"method": "rule", "ground_truth": PROBLEM}},
    )
    assert isinstance(coder, skyrl_gym.Env) and coder.spec.id == skyrl.CODER_ENV_ID
    prompt, _ = coder.init([])
    assert "reverse_words" in prompt[0]["content"] and "```python" in prompt[0]["content"]
    given = [{"role": "user", "content": "solve it"}]
    assert coder.init(given)[0] == given
    out = coder.step(BUGGY)
    assert out["done"] is True and out["observations"] == []

    problem = skyrl.shared_core(config).problem(PROBLEM)
    env = gym.make("CodeTestDuel-v0", source="bank", sandbox=shared_sandbox)
    try:
        env.reset(options={"problem": problem_to_dict(problem)})
        env.step(BUGGY)
        *_, info = env.step("```python\n" + "\n".join(problem.tests) + "\n```")
        assert out["reward"] == info["rewards"]["coder"]
        assert out["metadata"]["verdicts"] == info["verdicts"]
        assert 0.0 < out["reward"] < 1.0

        # the tester env, frozen buggy code given in the row; the shared book now replays
        tester = skyrl_gym.make(
            skyrl.TESTER_ENV_ID,
            env_config=config,
            extras={
                "reward_spec": {"ground_truth": json.dumps(problem_to_dict(problem))},
                "extra_info": {"code": BUGGY},
            },
        )
        prompt, _ = tester.init(None)
        assert "Candidate solution" in prompt[0]["content"] and "' '.join" in prompt[0]["content"]
        out = tester.step(TESTS)
        env.reset(options={"problem": problem_to_dict(problem)})
        env.step(BUGGY)
        *_, info = env.step(TESTS)
        assert info["mistake_book_verdicts"]
        assert out["reward"] == info["rewards"]["tester"]
        assert out["metadata"]["rewards"] == info["rewards"]
        metrics = tester.get_metrics()
        assert metrics["tester_reward"] == info["rewards"]["tester"]
        assert (
            skyrl.TesterTextEnv.aggregate_metrics([metrics, metrics])["reward"] == metrics["reward"]
        )
    finally:
        env.close()


def test_scripted_frozen_tester_and_errors(shared_sandbox: Any) -> None:
    config = {"opponent": "boundary", "sandbox": shared_sandbox}
    try:
        env = skyrl_gym.make(
            skyrl.CODER_ENV_ID, env_config=config, extras={"reward_spec": {"ground_truth": PROBLEM}}
        )
        out = env.step(BUGGY)
        assert out["metadata"]["tests"].count("assert") >= 4  # the boundary tester wrote them
        assert out["reward"] == out["metadata"]["rewards"]["coder"]
        with pytest.raises(ValueError, match="ground_truth"):
            skyrl_gym.make(skyrl.CODER_ENV_ID, env_config=config, extras={})
        with pytest.raises(ValueError, match="no problem"):
            skyrl_gym.make(
                skyrl.CODER_ENV_ID,
                env_config=config,
                extras={"reward_spec": {"ground_truth": "bank/nope"}},
            )
        with pytest.raises(ValueError, match="frozen coder"):
            skyrl_gym.make(
                skyrl.TESTER_ENV_ID,
                env_config=config,
                extras={"reward_spec": {"ground_truth": PROBLEM}},
            )
    finally:
        skyrl.close_shared_cores()


def test_reward_url_sends_steps_to_the_service(shared_sandbox: Any) -> None:
    import threading

    from agents.integrations.core import RewardCore
    from agents.integrations.reward_service import RewardService, make_server

    server = make_server(
        RewardService(RewardCore("bank", opponent="gt+mistake_book", sandbox=shared_sandbox)),
        "127.0.0.1",
        0,
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        local = {"opponent": "gt+mistake_book", "sandbox": shared_sandbox}
        remote = dict(local, reward_url=server.url)
        here = skyrl_gym.make(
            skyrl.CODER_ENV_ID, env_config=local, extras={"reward_spec": {"ground_truth": PROBLEM}}
        ).step(BUGGY)
        there = skyrl_gym.make(
            skyrl.CODER_ENV_ID, env_config=remote, extras={"reward_spec": {"ground_truth": PROBLEM}}
        ).step(BUGGY)
        assert there["reward"] == here["reward"]  # both books empty before this step
        assert server.service.stats["rows"] == 1
    finally:
        server.stop()
        thread.join(10)
        skyrl.close_shared_cores()
