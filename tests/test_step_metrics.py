"""How a training step's row and the held-out evaluation combine judgements into metrics.

Hand-built judgements for the pooling rules of :func:`codea1_env.scoring.metrics.step_metrics`,
and the referee on small problems for what the keys measure (the audit's cases): the pooled
``tester/valid_failure_rate``, ``tester/suites_with_failure`` with mistake-book entries, counts
summed per step, and the held-out avg@k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from agents.evaluation.plots import PLOTS, plot_keys, series_style
from agents.training.heldout_eval import SUMMARY_ROWS, evaluate, format_summary
from codea1_env import problems
from codea1_env.evaluation.metrics import avg_at_k
from codea1_env.mistake_book import InMemoryMistakeBook
from codea1_env.problems.problem import Problem
from codea1_env.scoring.metrics import is_count, pooled_metrics, step_metrics
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.scoring.verdicts import Judgement

BANK = problems.load_source("bank")
CLAMP = BANK["bank/clamp"]
REVERSE = BANK["bank/reverse_words"]
WRONG_CLAMP = "def clamp(value, low, high):\n    return value\n"
ADD = Problem(
    task_id="demo/add",
    prompt='def add(a, b):\n    """Return a + b."""\n',
    entry_point="add",
    canonical_solution="    return a + b\n",
    tests=(
        "assert add(1, 2) == 3",
        "assert add(0, 0) == 0",
        "assert add(5, 5) == 10",
        "assert add(-1, 1) == 0",
    ),
)


def _judgement(metrics: Mapping[str, float]) -> Judgement:
    return Judgement((), (), (), (), (), metrics=dict(metrics))


@pytest.fixture
def referee(sandbox: Any) -> Referee:
    return Referee(
        sandbox=sandbox, reward_config=RewardConfig(), mistake_book=InMemoryMistakeBook()
    )


# --- tester/valid_failure_rate: pooled over the step's kept valid tests ---------------------------


def test_valid_failure_rate_is_pooled_over_the_steps_kept_valid_tests(referee: Referee) -> None:
    # problem 1: 2 kept valid tests, the code fails 1; problem 2: its one kept test is invalid
    s1 = "assert clamp(-1, 0, 10) == 0\nassert clamp(5, 0, 10) == 5\n"
    s2 = "assert reverse_words('a b') == 'nope'\n"
    js = referee.judge_many(
        [(CLAMP, [WRONG_CLAMP], [[s1]]), (REVERSE, [REVERSE.gt_program], [[s2]])],
        update_book=False,
    )
    first, second = js
    assert (first.metrics["tester/valid_tests"], first.metrics["tester/valid_failures"]) == (2, 1)
    assert first.metrics["tester/valid_failure_rate"] == 0.5
    assert (second.metrics["tester/valid_tests"], second.metrics["tester/valid_failures"]) == (0, 0)
    assert "tester/valid_failure_rate" not in second.metrics  # no kept valid test: no rate
    row = step_metrics(js)
    assert row["tester/valid_failure_rate"] == 0.5  # 1 of the step's 2 (the old mean: 0.25)
    assert (row["tester/valid_tests"], row["tester/valid_failures"]) == (2.0, 1.0)


def test_valid_failure_rate_pools_counts_and_is_absent_without_valid_tests() -> None:
    counts = [(10, 1), (1, 1), (0, 0)]  # per problem: kept valid tests, failures
    js = [
        _judgement(
            {"tester/valid_tests": float(n), "tester/valid_failures": float(f)}
            | ({"tester/valid_failure_rate": f / n} if n else {})
        )
        for n, f in counts
    ]
    assert step_metrics(js)["tester/valid_failure_rate"] == pytest.approx(2 / 11)  # not 0.55
    none = [_judgement({"tester/valid_tests": 0.0, "tester/valid_failures": 0.0})] * 3
    row = step_metrics(none)
    assert "tester/valid_failure_rate" not in row and row["tester/valid_tests"] == 0.0
    assert "tester/valid_failure_rate" not in step_metrics(js, with_tester=False)


# --- counts summed per step, rates averaged -------------------------------------------------------


def test_counts_are_summed_over_the_steps_problems_and_rates_averaged() -> None:
    per_problem = {
        "monitor/early_exit": 2.0,
        "monitor/programs": 2.0,
        "monitor/flagged": 2.0,
        "tester/empty_suites": 2.0,
        "coder/syntax_errors": 2.0,
        "quality/trivial_tests": 2.0,
        "tester/valid_share": 0.5,
        "sandbox/seconds": 0.25,
        "mistake_book/total_size": 7.0,
    }
    row = step_metrics([_judgement(per_problem) for _ in range(4)])
    for key in (
        "monitor/early_exit",
        "monitor/programs",
        "monitor/flagged",
        "tester/empty_suites",
        "coder/syntax_errors",
        "quality/trivial_tests",
    ):
        assert row[key] == 8.0, key  # 4 problems x 2: a count per step
    assert row["tester/valid_share"] == 0.5  # a rate: the mean
    assert row["sandbox/seconds"] == 0.25  # a problem's share of its batch: the mean
    assert row["mistake_book/total_size"] == 7.0  # the book's state, the same on each: the mean
    assert "tester/empty_suites" not in step_metrics([_judgement(per_problem)], with_tester=False)


def test_is_count_rule() -> None:
    assert is_count("monitor/no_entry_point_call") and is_count("tester/valid_tests")
    assert is_count("tester/empty_suites") and is_count("coder/syntax_errors")
    assert not is_count("tester/valid_failure_rate") and not is_count("coder/gt_pass_rate")
    assert not is_count("mistake_book/size") and not is_count("sandbox/seconds")


def test_referee_monitor_counts_are_per_step(referee: Referee) -> None:
    s1 = "assert clamp(-1, 0, 10) == 0\nassert clamp(5, 0, 10) == 5\n"
    s2 = "assert reverse_words('a b') == 'nope'\n"
    js = referee.judge_many(
        [(CLAMP, [WRONG_CLAMP], [[s1]]), (REVERSE, [REVERSE.gt_program], [[s2]])],
        update_book=False,
    )
    row = step_metrics(js)
    assert row["monitor/programs"] == 2.0 and row["monitor/tests"] == 3.0  # 1 + 1, 2 + 1


# --- tester/suites_with_failure: the code fails a kept test of the suite ---------------------------


def test_suites_with_failure_counts_suites_the_code_fails_not_r_adv(referee: Referee) -> None:
    # a wrong code fails a kept test: the book gets an entry for clamp
    referee.judge_many(
        [(CLAMP, [WRONG_CLAMP], [["assert clamp(-1, 0, 10) == 0\n"]])], update_book=True
    )
    assert referee.mistake_book.size(CLAMP.task_id) > 0
    passed = "assert clamp(5, 0, 10) == 5\n"
    failed = "assert clamp(-1, 0, 10) == 0\nassert clamp(5, 0, 10) == 5\n"
    [j] = referee.judge_many(
        [(CLAMP, [CLAMP.gt_program, WRONG_CLAMP, "def clamp(:\n"], [[passed], [failed], [failed]])],
        update_book=False,
    )
    right, wrong, broken = (row[0] for row in j.tester_details)
    assert right.r_adv == 0.5  # (0 - 0 + 1) / 2 with the book's entry: R_adv > 0, yet no failure
    assert wrong.r_adv > 0 and broken.reason == "candidate_did_not_run"
    assert pooled_metrics([j])["tester/suites_with_failure"] == pytest.approx(1 / 3)
    only_right = referee.judge_many([(CLAMP, [CLAMP.gt_program], [[passed]])], update_book=False)
    assert pooled_metrics(only_right)["tester/suites_with_failure"] == 0.0  # was 1.0 (R_adv)


# --- held-out avg@k -----------------------------------------------------------------------------


def test_heldout_reports_avg_at_k_next_to_the_gt_pass_rate(sandbox: Any) -> None:
    right = "```python\ndef add(a, b):\n    return a + b\n```"
    three_of_four = "```python\ndef add(a, b):\n    return a + b if a != 5 else 0\n```"
    other = Problem(
        task_id="demo/add2",
        prompt=ADD.prompt,
        entry_point="add",
        canonical_solution=ADD.canonical_solution,
        tests=ADD.tests,
    )
    golden = RewardConfig(mode="golden")

    def run(codes: Sequence[str], on: Sequence[Problem]) -> dict[str, float]:
        with Referee(sandbox=sandbox, reward_config=golden) as ref:
            return evaluate(on, _no_generate, ref, samples=2, with_tester=False, codes=codes)

    # the audit's case: each sample passes 3 of 4 GT tests, none passes all
    partial = run([three_of_four, three_of_four], [ADD])
    assert partial["coder/gt_pass_rate"] == 0.75
    assert partial["coder/all_gt_pass"] == 0.0
    # problem 1: one of two samples correct, problem 2: both: avg@2 = (0.5 + 1) / 2
    mixed = run([right, three_of_four, right, right], [ADD, other])
    assert mixed["coder/all_gt_pass"] == avg_at_k([[True, False], [True, True]], 2) == 0.75
    assert mixed["coder/gt_pass_rate"] == pytest.approx((1 + 0.75 + 1 + 1) / 4)
    labels = dict(SUMMARY_ROWS)
    assert labels["coder/all_gt_pass"] == "coder avg@k: share of samples passing all GT tests"
    table = format_summary(partial, mixed)
    line = next(x for x in table.splitlines() if x.startswith("coder avg@k"))
    assert line.split()[-3:] == ["0.000", "0.750", "+0.750"]


def _no_generate(role: str, observations: Sequence[Any], infos: Sequence[Any]) -> list[str]:
    raise AssertionError(f"the {role} is not asked: the codes are given")


# --- plots: which keys each plot draws, and distinguishable series --------------------------------


def _patterns(stem: str) -> tuple[str, ...]:
    return next(patterns for name, _, patterns, _ in PLOTS if name == stem)


def test_kl_plot_holds_only_the_kl_to_the_reference() -> None:
    rows = [
        {
            "step": 1,
            "losses/coder_kl": 0.1,
            "losses/tester_kl": 0.2,
            "losses/coder_approx_kl": 0.01,
            "losses/tester_approx_kl": 0.02,
            "losses/coder_clip_fraction": 0.0,
        }
    ]
    assert plot_keys(rows, _patterns("kl")) == ["losses/coder_kl", "losses/tester_kl"]
    assert plot_keys(rows, _patterns("ppo_kl")) == [
        "losses/coder_approx_kl",
        "losses/tester_approx_kl",
    ]
    assert plot_keys([{"step": 1, "losses/shared_kl": 0.1}], _patterns("kl")) == [
        "losses/shared_kl"
    ]


def test_every_series_of_a_plot_has_its_own_colour_and_style() -> None:
    styles = [series_style(i) for i in range(60)]
    assert len(set(map(repr, styles))) == 60
    assert series_style(0) == ("C0", "-") and series_style(10) == ("C0", "--")
    with pytest.raises(ValueError):
        series_style(-1)


@pytest.mark.requires("matplotlib")
def test_monitor_plot_curves_are_distinguishable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.axes import Axes

    from agents.evaluation.plots import plot_run

    drawn: list[tuple[Axes, dict[str, Any]]] = []
    original = Axes.plot

    def spy(self: Axes, *args: Any, **kwargs: Any) -> Any:
        drawn.append((self, kwargs))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", spy)
    flags = [f"monitor/flag_{i:02d}" for i in range(18)]
    rows = [{"step": s, **{k: float(s % 3) for k in flags}} for s in range(1, 4)]
    plot_run(rows, tmp_path)
    labelled = [
        (kw["color"], repr(kw.get("linestyle", "-")))
        for ax, kw in drawn
        if ax.get_title().startswith("Reward-hacking") and "label" in kw
    ]
    assert len(labelled) == 18 and len(set(labelled)) == 18
