"""The TRL reward adapter: GT pass rates through the referee, TRL's signature, a real GRPOTrainer run."""

from __future__ import annotations

import warnings
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
    completion = f"\n{p0.gt_program}\n```\n### Problem\ngarbage ("
    try:
        out = fn(["x"] * 3, [completion, completion.encode(), b"\xff"], task_id=[p0.task_id] * 3)
    finally:
        fn.close()
    assert out == [1.0, 1.0, 0.0]  # bytes are decoded (the prefix put back), or are "binary"
    assert fn.last_reasons == ["", "", "binary"]


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
    with pytest.raises(TypeError, match=r"load_source\('bank'\)"):
        make_trl_reward("bank")
    for prefix in (None, 5):
        with pytest.raises(TypeError, match="answer_prefix must be a string"):
            make_trl_reward([], answer_prefix=prefix)  # type: ignore[arg-type]


def test_trl_grpo_trainer_runs_with_our_reward(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("trl")
    from examples.trl_grpo import main

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
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
    # the config names checkpointing as this transformers does (the old name warns)
    assert not [w for w in caught if "`gradient_checkpointing` is deprecated" in str(w.message)]
    assert out["reward_calls"] >= 2
    assert len(out["log_history"]) == 2
    assert all(0.0 <= row["reward"] <= 1.0 for row in out["log_history"])


def test_rewards_equal_the_coder_envs_on_the_same_answers(
    reward: GoldenTestReward,
    problems: list,  # type: ignore[type-arg]
) -> None:
    # One scoring path: the adapter plays each completion as the coder's move, as
    # CodeTestDuel-Coder-v0(opponent="gt") does, so a move that cannot score (too long, empty,
    # no code) gets the env's 0 and reason, and the rest the env's GT pass rate.
    import gymnasium as gym

    from codea1_env.game.duel import MAX_ACTION_CHARS

    p0 = problems[0]
    right = f"```python\n{p0.gt_program}\n```"
    const = p0.tests[0].split("==")[1].strip()
    answers = [
        right,
        f"def {p0.entry_point}(x):\n    return {const}\n",
        right + "\n#" + "x" * MAX_ACTION_CHARS,  # a correct program in an answer over the limit
        "   ",
        "no code here",
    ]
    ours = reward(["p"] * len(answers), answers, task_id=[p0.task_id] * len(answers))
    env = gym.make("CodeTestDuel-Coder-v0", source=problems, opponent="gt")
    try:
        theirs, reasons = [], []
        for answer in answers:
            env.reset(seed=0, options={"problem_id": p0.task_id})
            _, r, _, _, info = env.step(answer)
            theirs.append(r)
            reasons.append(info["reasons"]["coder"])
    finally:
        env.close()
    assert ours == theirs
    assert reward.last_reasons == reasons
    assert ours[0] == 1.0 and ours[2] == 0.0 and reward.last_reasons[2] == "too_long"


def test_chat_completions_of_every_shape(reward: GoldenTestReward, problems: list) -> None:  # type: ignore[type-arg]
    p0 = problems[0]
    fenced = f"```python\n{p0.gt_program}\n```"
    shapes = [
        # a tool-call turn first (content None), then the answer
        [
            {"role": "assistant", "content": None, "tool_calls": [{"name": "run"}]},
            {"role": "tool", "content": "ok"},
            {"role": "assistant", "content": fenced},
        ],
        # the code in one message and a remark in the next: the closing fence stays a line
        [{"role": "assistant", "content": fenced}, {"role": "assistant", "content": "Done."}],
        # content as blocks
        [{"role": "assistant", "content": [{"type": "text", "text": fenced}]}],
    ]
    out = reward(["p"] * len(shapes), shapes, task_id=[p0.task_id] * len(shapes))
    assert out == [1.0, 1.0, 1.0]
    assert completion_text(shapes[1]) == fenced + "\nDone."


def test_odd_completions_score_zero_with_a_reason_and_are_logged(
    reward: GoldenTestReward,
    problems: list,  # type: ignore[type-arg]
) -> None:
    p0 = problems[0]
    logged: dict[str, list[str]] = {}
    out = reward(
        ["p"] * 3,
        [None, 42, ""],
        task_id=[p0.task_id] * 3,
        log_extra=lambda column, values: logged.setdefault(column, []).extend(values),
        log_metric=lambda name, value: None,
    )
    assert out == [0.0, 0.0, 0.0]
    assert reward.last_reasons == ["not_text", "not_text", "empty"]
    assert logged == {"codea1_reason": ["not_text", "not_text", "empty"]}


def test_task_ids_that_are_not_strings_name_the_row(
    reward: GoldenTestReward,
    problems: list,  # type: ignore[type-arg]
) -> None:
    with pytest.raises(TypeError, match=r"task_id\[1\] must be a string, got list"):
        reward(["p", "p"], ["c", "c"], task_id=[problems[0].task_id, ["a"]])


def test_a_closed_reward_says_so_and_stops_its_sandbox(problems: list) -> None:  # type: ignore[type-arg]
    with make_trl_reward(problems, workers=1) as fn:
        referee = fn.referee
        assert fn(["p"], ["c"], task_id=[problems[0].task_id]) == [0.0]
    assert fn.referee is None
    with pytest.raises(RuntimeError, match="closed"):
        fn(["p"], ["c"], task_id=[problems[0].task_id])
    with pytest.raises(RuntimeError, match="closed"):
        referee.sandbox  # noqa: B018 - the property raises instead of starting a new sandbox
    fn.close()  # idempotent


def test_a_referee_that_is_not_golden_is_refused(problems: list) -> None:  # type: ignore[type-arg]
    from codea1_env.scoring.referee import Referee

    referee = Referee()
    try:
        with pytest.raises(ValueError, match="golden mode"):
            make_trl_reward(problems, referee)
    finally:
        referee.close()
