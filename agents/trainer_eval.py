"""The before/after evaluation on a fixed held-out problem set, and its summary table.

The coder answers every held-out problem (``eval_samples`` times, at the evaluation temperature
with a fixed seed); its score is the pass rate on the problems' GT tests. The tester then writes
one suite against each of the coder's codes; its scores are the referee's validity reward
(``R_val``), adversarial reward (``R_adv``) and total reward. Everything goes through the referee
in one batched call with ``update_book=False`` so evaluation never changes the mistake book.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from codea1_env.problems.problem import Problem

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


def _mean(values: Sequence[float]) -> float:
    return float(statistics.fmean(values)) if values else 0.0


def evaluate(
    problems: Sequence[Problem],
    generate: Generate,
    referee: Any,
    *,
    samples: int = 1,
    with_tester: bool = True,
    observation: Callable[[Problem, str, str], dict[str, Any]],
    extract: Callable[[str], str],
) -> dict[str, float]:
    """Score the current players on ``problems``.

    Args:
        problems: The fixed held-out problems.
        generate: Samples texts for a role (``"coder"`` or ``"tester"``).
        referee: The run's :class:`codea1_env.referee.Referee`.
        samples: Codes per problem.
        with_tester: Also evaluate the tester (off in ``golden`` mode).
        observation: ``observation(problem, role, code) -> obs`` (the env's observation).
        extract: Extracts the code from a coder's answer (what the tester is shown).

    Returns:
        ``coder/gt_pass_rate`` and, with the tester, ``tester/validity``,
        ``tester/adversarial``, ``tester/reward`` and ``tester/suites_with_failure``.

    """
    coder_obs = [observation(p, "coder", "") for p in problems for _ in range(samples)]
    coder_infos = [
        {"task_id": p.task_id, "role": "coder", "problem": p}
        for p in problems
        for _ in range(samples)
    ]
    codes = generate("coder", coder_obs, coder_infos)
    suites: list[list[str]] = [[] for _ in codes]
    if with_tester:
        tester_obs = [
            observation(problems[i // samples], "tester", extract(code))
            for i, code in enumerate(codes)
        ]
        tester_infos = [
            {
                "task_id": problems[i // samples].task_id,
                "role": "tester",
                "problem": problems[i // samples],
            }
            for i in range(len(codes))
        ]
        suites = [[text] for text in generate("tester", tester_obs, tester_infos)]
    batch = [
        (p, codes[i * samples : (i + 1) * samples], suites[i * samples : (i + 1) * samples])
        for i, p in enumerate(problems)
    ]
    judgements = referee.judge_many(batch, update_book=False)
    result = {"coder/gt_pass_rate": _mean([r for j in judgements for r in j.gt_pass_rates])}
    if with_tester:
        details = [d for j in judgements for row in j.tester_details for d in row]
        result["tester/validity"] = _mean([float(d.r_val) for d in details])
        result["tester/adversarial"] = _mean([float(d.r_adv) for d in details])
        result["tester/reward"] = _mean([float(d.total) for d in details])
        result["tester/suites_with_failure"] = _mean(
            [1.0 if float(d.r_adv) > 0 else 0.0 for d in details]
        )
    return result


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
