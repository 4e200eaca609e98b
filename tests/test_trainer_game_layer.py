"""The trainer plays through the env's game layer: the tester sees what ``CodeTestDuel-v0`` shows.

A tiny trainer (the ``nano`` preset, one custom problem) runs one RL step and one evaluation with
the coder's answer fixed to a program that has helper names, comments and docstrings; the tester's
rendered prompts and observations are recorded where the trainer hands them to its models.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import codea1_env  # noqa: F401  (registers CodeTestDuel-v0)
from agents.lm.interfaces import Generation, SamplingParams
from agents.training.config import TrainConfig, from_preset
from agents.training.trainer import Trainer
from codea1_env.game.duel import answer_for
from codea1_env.problems import problem_from_dict
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import Sandbox
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.testcases import extract_code

PROBLEM: Problem = problem_from_dict(
    {
        "task_id": "custom/clamp_sum",
        "prompt": 'def clamp_sum(xs: list, hi: int) -> int:\n    """Sum of xs, each cut at hi."""\n',
        "entry_point": "clamp_sum",
        "canonical_solution": "    return sum(min(x, hi) for x in xs)\n",
        "tests": [
            "assert clamp_sum([1, 5], 3) == 4",
            "assert clamp_sum([], 3) == 0",
            "assert clamp_sum([7, 8], 7) == 14",
        ],
    }
)

ANSWER = '''Here is my solution.

```python
def _clip_value(value, ceiling):
    """Clip one value at the ceiling."""
    # never above the ceiling
    return min(value, ceiling)


def clamp_sum(xs, hi):
    """Adds the clipped values one by one."""
    running_total = 0  # what we have so far
    for item in xs:
        running_total += _clip_value(item, hi)
    return running_total
```
'''
"""The coder's answer in every rollout: prose, a helper, comments, docstrings."""

REVEALING = (
    "_clip_value",
    "ceiling",
    "running_total",
    "Clip one value",
    "Adds the clipped values",
    "never above",
    "what we have so far",
    "item",
)
"""Text of the code (names, comments, docstrings) that anonymization must hide."""


class RecordingLM:
    """Wraps a trainer's LM: records the prompts it is given; optionally fixes the answer text."""

    def __init__(self, inner: Any, answer: str | None = None) -> None:
        self.inner = inner
        self.answer = answer
        self.prompts: list[str] = []

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Generation]:
        self.prompts.extend(prompts)
        gens = list(self.inner.generate(prompts, params))
        if self.answer is None:
            return gens
        return [replace(g, text=self.answer) for g in gens]


def _config(tmp_path: Path, anonymize: bool, **overrides: Any) -> TrainConfig:
    values: dict[str, Any] = {
        "steps": 1,
        "problems_per_step": 1,
        "n_codes": 2,
        "n_suites": 2,
        "max_test_tokens": 8,
        "anonymize_code": anonymize,
        "output_dir": str(tmp_path / f"run_{anonymize}"),
        **overrides,
    }
    return from_preset("nano", **values)


@pytest.fixture
def run(
    tmp_path: Path, sandbox: Sandbox, request: pytest.FixtureRequest
) -> Iterator[tuple[Trainer, dict[str, list[Mapping[str, Any]]], RecordingLM]]:
    """A tiny trainer after one RL step and one evaluation with the coder's answer fixed."""
    cfg = _config(tmp_path, bool(request.param))
    referee = Referee(
        sandbox=sandbox,
        reward_config=cfg.reward_config(),
        stability=cfg.stability,
        owns_sandbox=False,
    )
    trainer = Trainer(
        cfg, referee=referee, train_source=[PROBLEM], eval_problems=[PROBLEM], log=lambda _m: None
    )
    try:
        trainer.roles.lms["coder"] = RecordingLM(trainer.roles.lms["coder"], ANSWER)
        tester_lm = RecordingLM(trainer.roles.lms["tester"])
        trainer.roles.lms["tester"] = tester_lm
        seen: dict[str, list[Mapping[str, Any]]] = {"coder": [], "tester": []}
        generate = trainer.roles.generate

        def recording(
            role: str, observations: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
        ) -> list[Generation]:
            seen[role].extend(observations)
            return generate(role, observations, *args, **kwargs)

        trainer.roles.generate = recording  # type: ignore[method-assign]
        row = trainer.step()
        assert row["step"] == 1
        trainer.evaluate()
        yield trainer, seen, tester_lm
    finally:
        trainer.close()


def _env_tester_observation(anonymize: bool) -> dict[str, Any]:
    env = gym.make("CodeTestDuel-v0", source=[PROBLEM], stability={"anonymize_code": anonymize})
    try:
        env.reset(seed=0, options={"problem": PROBLEM})
        obs, reward, terminated, _truncated, _info = env.step(ANSWER)
        assert reward == 0.0 and not terminated and obs["role"] == 1
        return dict(obs)
    finally:
        env.close()


@pytest.mark.parametrize("run", [True], indirect=True)
def test_anonymized_tester_prompt_hides_names_comments_and_docstrings(
    run: tuple[Trainer, dict[str, list[Mapping[str, Any]]], RecordingLM],
) -> None:
    _trainer, seen, tester_lm = run
    # one step: 1 problem x 2 codes x 2 suites; then the evaluation: 1 suite on 1 code
    assert len(tester_lm.prompts) == 2 * 2 + 1
    for prompt in tester_lm.prompts:
        assert "def clamp_sum(xs, hi):" in prompt  # the entry point and its parameters stay
        for text in REVEALING:
            assert text not in prompt, text
    for obs in seen["tester"]:
        assert obs["code"] and "#" not in obs["code"] and '"""' not in obs["code"]


@pytest.mark.parametrize("run", [False], indirect=True)
def test_plain_tester_prompt_shows_the_code_as_the_env_does(
    run: tuple[Trainer, dict[str, list[Mapping[str, Any]]], RecordingLM],
) -> None:
    trainer, seen, tester_lm = run
    program = extract_code(ANSWER)
    for obs in seen["tester"]:
        assert obs["code"] == program
    for prompt in tester_lm.prompts:
        assert program.rstrip() in prompt
        assert "Here is my solution" not in prompt  # the extracted program, not the answer
    assert tester_lm.prompts[0] == trainer.roles.prompt("tester", _env_tester_observation(False))


@pytest.mark.parametrize("run", [False, True], indirect=True)
def test_trainer_observations_equal_the_envs(
    run: tuple[Trainer, dict[str, list[Mapping[str, Any]]], RecordingLM],
) -> None:
    trainer, seen, _tester_lm = run
    expected = _env_tester_observation(trainer.config.stability.anonymize_code)
    assert seen["tester"] and all(dict(obs) == expected for obs in seen["tester"])
    env = gym.make("CodeTestDuel-v0", source=[PROBLEM])
    try:
        coder_obs, _info = env.reset(seed=0, options={"problem": PROBLEM})
    finally:
        env.close()
    assert seen["coder"] and all(dict(obs) == dict(coder_obs) for obs in seen["coder"])


class _GtDraw:
    """An rng whose draws make the warm start show the tester the GT program (not a mutant)."""

    def random(self) -> float:
        return 0.0


@pytest.mark.parametrize("anonymize", [False, True])
def test_warm_start_tester_prompt_is_the_envs(tmp_path: Path, anonymize: bool) -> None:
    cfg = _config(tmp_path, anonymize)
    trainer = Trainer(cfg, train_source=[PROBLEM], eval_problems=[], log=lambda _m: None)
    try:
        rng: Any = _GtDraw()
        example = trainer.roles.supervised_example("tester", PROBLEM, rng)
        env = gym.make("CodeTestDuel-v0", source=[PROBLEM], stability={"anonymize_code": anonymize})
        try:
            env.reset(seed=0, options={"problem": PROBLEM})
            obs, *_ = env.step(answer_for(PROBLEM.gt_program.strip("\n")))
        finally:
            env.close()
        prompt = trainer.roles.prompt("tester", obs)
        assert list(example.prompt_ids) == list(
            trainer.roles.encoders["tester"].encode_prompt(prompt)
        )
        coder = trainer.roles.supervised_example("coder", PROBLEM, np.random.default_rng(0))
        env_coder = trainer.roles.prompt("coder", {"role": 0, **_coder_fields(PROBLEM)})
        assert list(coder.prompt_ids) == list(
            trainer.roles.encoders["coder"].encode_prompt(env_coder)
        )
    finally:
        trainer.close()


def _coder_fields(problem: Problem) -> dict[str, str]:
    return {"prompt": problem.prompt, "entry_point": problem.entry_point, "code": ""}
