"""The before/after evaluation on a fixed held-out problem set, and its summary table.

The coder answers every held-out problem (``eval_samples`` times, at the evaluation temperature
with a fixed seed); its score is the pass rate on the problems' GT tests. The tester then writes
one suite against each of the coder's codes; its scores are the referee's validity reward
(``R_val``), adversarial reward (``R_adv``) and total reward. The players see what the env shows
them: each code is a :class:`~codea1_env.game.duel.Duel` (the coder's move played with
:meth:`~codea1_env.game.duel.Duel.play_code`, anonymized with ``anonymize_code``), observed with
:func:`codea1_env.game.spaces.observe`. Everything is scored with
:func:`codea1_env.game.duel.judge_grid` (one batched referee call) with ``update_book=False`` so
evaluation never changes the mistake book.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from codea1_env.envs.duel_env import duel_info
from codea1_env.game.duel import Duel, judge_grid
from codea1_env.game.spaces import observe
from codea1_env.problems.problem import Problem
from codea1_env.scoring.metrics import pooled_metrics

__all__ = ["SUMMARY_ROWS", "evaluate", "format_summary"]

SUMMARY_ROWS: tuple[tuple[str, str], ...] = (
    ("coder/gt_pass_rate", "coder pass rate on held-out GT tests"),
    ("tester/validity", "tester validity (R_val)"),
    ("tester/adversarial", "tester adversarial rate (R_adv)"),
    ("tester/reward", "tester reward"),
    ("tester/suites_with_failure", "share of suites that fail the code"),
)
"""Evaluation keys shown in the summary table, with their labels."""

Generate = Callable[[str, Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]], list[str]]
"""``generate(role, observations, infos) -> texts`` (the trainer's evaluation sampler)."""


def evaluate(
    problems: Sequence[Problem],
    generate: Generate,
    referee: Any,
    *,
    samples: int = 1,
    with_tester: bool = True,
    anonymize_code: bool = False,
) -> dict[str, float]:
    """Score the current players on ``problems``.

    Args:
        problems: The fixed held-out problems.
        generate: Samples texts for a role (``"coder"`` or ``"tester"``).
        referee: The run's :class:`codea1_env.scoring.referee.Referee`.
        samples: Codes per problem.
        with_tester: Also evaluate the tester (off in ``golden`` mode).
        anonymize_code: Show the tester the anonymized program (the run's option).

    Returns:
        ``coder/gt_pass_rate`` and, with the tester, ``tester/validity``,
        ``tester/adversarial``, ``tester/reward`` and ``tester/suites_with_failure``.

    """
    duels = [Duel(p) for p in problems for _ in range(samples)]
    codes = generate("coder", [observe(d) for d in duels], [duel_info(d) for d in duels])
    for duel, code in zip(duels, codes, strict=True):
        duel.play_code(code, anonymize_code=anonymize_code)
    if with_tester:
        suites = generate("tester", [observe(d) for d in duels], [duel_info(d) for d in duels])
        for duel, suite in zip(duels, suites, strict=True):
            duel.play_tests(suite)
    grid = [[[d] for d in duels[i * samples : (i + 1) * samples]] for i in range(len(problems))]
    judgements = judge_grid(referee, grid, update_book=False)
    pooled = pooled_metrics(judgements, with_tester)
    return {key: pooled[key] for key, _label in SUMMARY_ROWS if key in pooled}


def format_summary(before: Mapping[str, float], after: Mapping[str, float]) -> str:
    """A plain-text table of the before/after evaluation (rows missing from both are left out)."""
    rows = [(label, key) for key, label in SUMMARY_ROWS if key in before or key in after]
    width = max((len(label) for label, _ in rows), default=10)
    lines = [f"{'':{width}}  {'before RL':>10}  {'after RL':>10}  {'change':>8}"]
    for label, key in rows:
        b, a = before.get(key), after.get(key)
        cells = [f"{v:10.3f}" if v is not None else f"{'-':>10}" for v in (b, a)]
        change = f"{a - b:+8.3f}" if a is not None and b is not None else f"{'':8}"
        lines.append(f"{label:{width}}  {cells[0]}  {cells[1]}  {change}")
    return "\n".join(lines)
