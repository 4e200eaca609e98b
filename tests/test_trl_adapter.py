"""The TRL reward adapter: GT pass rates through the referee, TRL's signature, a real GRPOTrainer run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agents.integrations.trl import GoldenTestReward, completion_text, make_trl_reward
from codea1_env.problems.procedural import ProceduralSource


@pytest.fixture(scope="module")
def problems() -> list:  # type: ignore[type-arg]
    source = ProceduralSource(seed=0, n=6)
    return [source[i] for i in source.ids()]


@pytest.fixture(scope="module")
def reward(problems: list) -> Iterator[GoldenTestReward]:  # type: ignore[type-arg]
    fn = make_trl_reward(problems)
    yield fn
    fn.close()


def test_rewards_are_gt_pass_rates(reward: GoldenTestReward, problems: list) -> None:  # type: ignore[type-arg]
    p0, p1 = problems[0], problems[1]
    right = f"```python\n{p0.gt_program}\n```"
    # A constant function passes only the GT tests whose answer is that constant.
    const = p0.tests[0].split("==")[1].strip()
    wrong = f"def {p0.entry_point}(x):\n    return {const}\n"
    out = reward(
        prompts=["p"] * 4,
        completions=[
            right,
            wrong,
            "not python at all (",
            [{"role": "assistant", "content": right}],
        ],
        completion_ids=[[1]] * 4,
        task_id=[p0.task_id, p0.task_id, p1.task_id, p0.task_id],
        trainer_state=None,
    )
    expected_wrong = sum(t.endswith(f"== {const}") for t in p0.tests) / len(p0.tests)
    assert out == [1.0, pytest.approx(expected_wrong), 0.0, 1.0]
    assert 0.0 < expected_wrong < 1.0
    assert reward.__name__ == "codea1_golden" and reward.calls >= 1


def test_answer_prefix_reads_the_fenced_block(problems: list) -> None:  # type: ignore[type-arg]
    p0 = problems[0]
    fn = make_trl_reward({p.task_id: p for p in problems}, answer_prefix="```python")
    try:
        out = fn(["x"], [f"\n{p0.gt_program}\n```\n### Problem\ngarbage ("], task_id=[p0.task_id])
    finally:
        fn.close()
    assert out == [1.0]


def test_bad_inputs_have_clear_errors(reward: GoldenTestReward) -> None:
    with pytest.raises(ValueError, match="needs a 'task_id' column"):
        reward(["p"], ["c"])
    with pytest.raises(ValueError, match="1 completions but 2 task ids"):
        reward(["p"], ["c"], task_id=["a", "b"])
    with pytest.raises(KeyError, match="unknown task_id 'nope'"):
        reward(["p"], ["c"], task_id=["nope"])
    with pytest.raises(TypeError, match="string or a list of chat messages"):
        completion_text(42)
    with pytest.raises(TypeError, match="ProblemSource"):
        make_trl_reward(42)


def test_trl_grpo_trainer_runs_with_our_reward(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("trl")
    from examples.trl_grpo import main

    out = main(
        [
            "--steps",
            "2",
            "--n-problems",
            "8",
            "--num-generations",
            "4",
            "--max-completion-length",
            "24",
            "--output-dir",
            str(tmp_path),
        ]
    )
    assert out["reward_calls"] >= 2
    assert len(out["log_history"]) == 2
    assert all(0.0 <= row["reward"] <= 1.0 for row in out["log_history"])
