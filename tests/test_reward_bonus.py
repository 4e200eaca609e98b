"""Optional tester reward terms (off by default): coverage and mutation-kill bonuses."""

from __future__ import annotations

import pytest

from codea1_env.mistake_book import InMemoryMistakeBook
from codea1_env.problems.problem import Problem
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig

STEP = Problem(
    task_id="bonus/step",
    prompt='def f(x: int) -> int:\n    """1 when x > 10, else 0."""',
    entry_point="f",
    canonical_solution="def f(x):\n    if x > 10:\n        return 1\n    return 0\n",
    tests=("assert f(0) == 0", "assert f(11) == 1"),
)
ONE = "assert f(0) == 0"
THREE = "assert f(0) == 0\nassert f(10) == 0\nassert f(11) == 1"


def judge(sandbox, config: RewardConfig, suites: list[str]):
    referee = Referee(sandbox=sandbox, reward_config=config, mistake_book=InMemoryMistakeBook())
    return referee.judge(STEP, [STEP.canonical_solution], [suites], update_book=False)


def test_bonuses_are_off_by_default(sandbox) -> None:
    j = judge(sandbox, RewardConfig(), [ONE, THREE])
    assert [(t.coverage, t.mutation) for t in j.tester_details[0]] == [(0.0, 0.0), (0.0, 0.0)]
    # the paper's reward: 0.5 * R_val (1/8, 3/8), R_adv 0 against the GT
    assert j.tester_rewards[0] == pytest.approx((0.0625, 0.1875))


def test_coverage_and_mutation_bonuses_have_known_values(sandbox) -> None:
    config = RewardConfig(coverage_bonus=0.5, mutation_bonus=0.5)
    j = judge(sandbox, config, [ONE, THREE])
    one, three = j.tester_details[0]
    # f(0) runs lines 1, 2 and 4 of 4 statements; the three tests run all of them
    assert (one.coverage, three.coverage) == (pytest.approx(0.75), 1.0)
    # the first 8 mutants of the GT (mutation.generate_mutants): x >= 10, x <= 10, x < 10,
    # x > 11, x > 9, `return 2`, `return 0` in the branch, `return 1` at the end. f(0) kills 3
    # (x <= 10, x < 10, the last return); f(10) and f(11) kill the other 5
    assert (one.mutation, three.mutation) == (pytest.approx(3 / 8), 1.0)
    assert j.tester_rewards[0][0] == pytest.approx(0.0625 + 0.5 * 0.75 + 0.5 * 3 / 8)
    assert j.tester_rewards[0][1] == pytest.approx(0.1875 + 0.5 * 1.0 + 0.5 * 1.0)
    assert j.metrics["tester/coverage"] == pytest.approx((0.75 + 1.0) / 2)
    assert j.metrics["tester/mutation_kill"] == pytest.approx((3 / 8 + 1.0) / 2)


def test_bonus_weights_are_validated() -> None:
    with pytest.raises(ValueError, match="coverage_bonus"):
        RewardConfig(coverage_bonus=-1.0)
    with pytest.raises(ValueError, match="mutation_bonus"):
        RewardConfig(mutation_bonus=True)  # type: ignore[arg-type]
