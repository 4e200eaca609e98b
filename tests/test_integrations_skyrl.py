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
    """The service's answer is the local path's: reward, metadata and metrics, both roles."""
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
    local = {"opponent": "gt+mistake_book", "sandbox": shared_sandbox}
    remote = {"reward_url": server.url, "reward_retries": 0}
    coder = {"reward_spec": {"ground_truth": PROBLEM}}
    tester = {"reward_spec": {"ground_truth": PROBLEM}, "extra_info": {"code": BUGGY}}
    counted = []
    try:
        for env_id, extras, moves in (
            (skyrl.CODER_ENV_ID, coder, [BUGGY, None, b"\xff", "x" * 70_000]),
            (skyrl.TESTER_ENV_ID, tester, [TESTS, None]),
        ):
            for move in moves:  # both books start empty and see the same moves
                here_env = skyrl_gym.make(env_id, env_config=local, extras=extras)
                there_env = skyrl_gym.make(env_id, env_config=remote, extras=extras)
                here, there = here_env.step(move), there_env.step(move)
                assert there["reward"] == here["reward"], (env_id, move)
                assert there_env.get_metrics() == here_env.get_metrics(), (env_id, move)
                reasons = here["metadata"]["reasons"]
                if reasons.get(there_env.role) == "binary":  # null on the wire: not_text there
                    reasons = dict(reasons, **{there_env.role: "not_text"})
                assert there["metadata"] == dict(here["metadata"], reasons=reasons), (env_id, move)
                counted.append(len(there["metadata"]["verdicts"]))
        assert counted[0] > 0 and counted[4] > 0  # the real moves of both roles were tested
        assert server.service.stats["rows"] == 6
        # the service chooses the scoring: a scoring key next to reward_url is an error
        with pytest.raises(ValueError, match="opponent, sandbox belong on"):
            skyrl_gym.make(skyrl.CODER_ENV_ID, env_config=dict(local, **remote), extras=coder)
        # the worker builds no core: a problem id is the service's to resolve, so an empty
        # prompt cannot be filled here, while a record can
        by_id = skyrl_gym.make(
            skyrl.CODER_ENV_ID, env_config=remote, extras={"reward_spec": {"ground_truth": "x/y"}}
        )
        with pytest.raises(ValueError, match="give the row its prompt"):
            by_id.init([])
        record = json.dumps(problem_to_dict(here_env.problem))
        by_record = skyrl_gym.make(
            skyrl.CODER_ENV_ID, env_config=remote, extras={"reward_spec": {"ground_truth": record}}
        )
        assert "reverse_words" in by_record.init([])[0][0]["content"]
    finally:
        server.stop()
        thread.join(10)
        skyrl.close_shared_cores()


def test_an_unknown_env_config_key_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"unknown env_config key\(s\) \['opponnent'\]"):
        skyrl_gym.make(
            skyrl.CODER_ENV_ID,
            env_config={"opponnent": "gt"},
            extras={"reward_spec": {"ground_truth": PROBLEM}},
        )


@pytest.mark.parametrize(
    ("ground_truth", "says"),
    [
        ('{"task_id": ', "reward_spec.ground_truth: not valid JSON"),
        ("[" * 20_000, None),  # not a record: an id only the service can resolve
        ({"task_id": "t", "prompt": "p"}, "reward_spec.ground_truth"),
    ],
)
def test_a_record_is_read_alike_with_and_without_reward_url(
    ground_truth: Any, says: str | None
) -> None:
    # One reading of a row's problem record: the local core's, also where the worker builds
    # no core (reward_url), so both refuse a bad record with the same message.
    extras = {"reward_spec": {"ground_truth": ground_truth}}
    remote = {"reward_url": "http://127.0.0.1:9"}  # never contacted by make()
    messages: list[str | None] = []
    for config in ({"opponent": "gt"}, remote):
        try:
            skyrl_gym.make(skyrl.CODER_ENV_ID, env_config=config, extras=extras)
        except ValueError as exc:
            messages.append(str(exc))
        else:
            messages.append(None)
    skyrl.close_shared_cores()
    if says is None:
        assert messages[1] is None and "no problem" in str(messages[0])
    else:
        assert messages[0] == messages[1] and says in str(messages[0])
