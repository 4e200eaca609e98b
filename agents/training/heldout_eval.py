"""The before/after evaluation on a fixed held-out problem set, and its summary table.

The coder answers every held-out problem (``eval_samples`` times, at the evaluation temperature
with a fixed seed); its scores are the mean share of the problems' GT tests its codes pass
(``coder/gt_pass_rate``) and Code-A1's avg@k with ``k = eval_samples`` (``coder/all_gt_pass``:
per problem, the share of its samples that pass every GT test, averaged over the problems, as
:func:`codea1_env.evaluation.metrics.avg_at_k` does; ``--eval-samples 32`` at temperature 0.7, top-p
0.95 gives the paper's avg@32). The tester then writes one suite against each of the coder's
codes; its scores are the referee's validity reward (``R_val``), adversarial reward (``R_adv``),
total reward and the share of suites that fail the code. After RL the tester is also scored on
the warm-started coder's codes (the ones the evaluation before RL played, ``codes=``): against a
fixed opponent, its change is the tester's own progress, apart from the coder's. The players see
what the env shows them: each code is a :class:`~codea1_env.game.duel.Duel` (the coder's move
played with :meth:`~codea1_env.game.duel.Duel.play_code`, anonymized with ``anonymize_code``),
observed with :func:`codea1_env.game.spaces.observe`. Everything is scored
with :func:`codea1_env.game.duel.judge_grid` (one batched referee call) with
``update_book=False`` so evaluation never changes the mistake book.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from codea1_env.envs.duel_env import duel_info
from codea1_env.game.duel import Duel, judge_grid
from codea1_env.game.spaces import observe
from codea1_env.problems.problem import Problem
from codea1_env.scoring.metrics import pooled_metrics

__all__ = ["CROSS_ROWS", "SUMMARY_ROWS", "coder_codes", "cross_rows", "evaluate", "format_summary"]

SUMMARY_ROWS: tuple[tuple[str, str], ...] = (
    ("coder/gt_pass_rate", "coder mean share of held-out GT tests passed"),
    ("coder/all_gt_pass", "coder avg@k: share of samples passing all GT tests"),
    ("tester/validity", "tester validity (R_val)"),
    ("tester/adversarial", "tester adversarial rate (R_adv)"),
    ("tester/reward", "tester reward"),
    ("tester/suites_with_failure", "share of suites that fail the code"),
)
"""Evaluation keys shown in the summary table, with their labels. ``coder/all_gt_pass`` is
avg@k with ``k`` the evaluation's samples per problem; ``tester/suites_with_failure`` counts a
suite when the code ran and failed at least one of its kept tests
(:func:`codea1_env.scoring.metrics.suite_failed_the_code`)."""

CROSS_ROWS: tuple[tuple[str, str, str], ...] = (
    ("tester/validity_on_start_codes", "tester/validity", "tester validity, codes before RL"),
    (
        "tester/adversarial_on_start_codes",
        "tester/adversarial",
        "tester adversarial, codes before RL",
    ),
)
"""(key, the key it is measured as, label) of the rows that score the tester on the warm-started
coder's codes. Before RL they are the plain rows (the same codes, the warm-started tester);
after RL, the trained tester on those codes (see :func:`cross_rows`)."""

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
    codes: Sequence[str] | None = None,
) -> dict[str, float]:
    """Score the current players on ``problems``.

    Args:
        problems: The fixed held-out problems.
        generate: Samples texts for a role (``"coder"`` or ``"tester"``).
        referee: The run's :class:`codea1_env.scoring.referee.Referee`.
        samples: Codes per problem.
        with_tester: Also evaluate the tester (off in ``golden`` mode).
        anonymize_code: Show the tester the anonymized program (the run's option).
        codes: The coder's answers to play (``samples`` per problem, in order, as
            :func:`coder_codes` returns them) instead of asking the coder.

    Raises:
        ValueError: ``codes`` are not ``samples`` per problem.

    Returns:
        ``coder/gt_pass_rate`` (mean share of GT tests passed), ``coder/all_gt_pass`` (avg@k,
        ``k = samples``: the share of codes passing every GT test, which with ``samples``
        codes per problem is :func:`~codea1_env.evaluation.metrics.avg_at_k`) and, with the
        tester, ``tester/validity``, ``tester/adversarial``, ``tester/reward`` and
        ``tester/suites_with_failure``.

    """
    duels = [Duel(p) for p in problems for _ in range(samples)]
    if codes is None:
        codes = _answers("coder", duels, generate)
    if len(codes) != len(duels):
        raise ValueError(f"{len(codes)} codes for {len(duels)} duels ({samples} per problem)")
    for duel, code in zip(duels, codes, strict=True):
        duel.play_code(code, anonymize_code=anonymize_code)
    if with_tester:
        suites = _answers("tester", duels, generate)
        for duel, suite in zip(duels, suites, strict=True):
            duel.play_tests(suite)
    grid = [[[d] for d in duels[i * samples : (i + 1) * samples]] for i in range(len(problems))]
    judgements = judge_grid(referee, grid, update_book=False)
    # coder/all_gt_pass, the share of all codes passing every GT test, is avg@k: every problem
    # has ``samples`` codes, so it is the mean over problems of each one's share
    pooled = pooled_metrics(judgements, with_tester)
    return {key: pooled[key] for key, _label in SUMMARY_ROWS if key in pooled}


def coder_codes(problems: Sequence[Problem], generate: Generate, *, samples: int = 1) -> list[str]:
    """The coder's answers to ``problems``, ``samples`` per problem, as :func:`evaluate` asks."""
    return _answers("coder", [Duel(p) for p in problems for _ in range(samples)], generate)


def _answers(role: str, duels: Sequence[Duel], generate: Generate) -> list[str]:
    return generate(role, [observe(d) for d in duels], [duel_info(d) for d in duels])


def cross_rows(
    before: Mapping[str, float], on_start_codes: Mapping[str, float]
) -> tuple[dict[str, float], dict[str, float]]:
    """The :data:`CROSS_ROWS` entries of the before and after evaluations.

    Args:
        before: The evaluation before RL (the warm-started players).
        on_start_codes: The trained tester's evaluation on the codes ``before`` played.

    Returns:
        ``(before_rows, after_rows)``, each keyed by the :data:`CROSS_ROWS` keys (only those
        both evaluations have).
    """
    keys = [
        (k, source) for k, source, _ in CROSS_ROWS if source in before and source in on_start_codes
    ]
    return (
        {key: before[source] for key, source in keys},
        {key: on_start_codes[source] for key, source in keys},
    )


def format_summary(before: Mapping[str, float], after: Mapping[str, float]) -> str:
    """A plain-text table of the before/after evaluation (rows missing from both are left out)."""
    labelled = [*SUMMARY_ROWS, *((key, label) for key, _, label in CROSS_ROWS)]
    rows = [(label, key) for key, label in labelled if key in before or key in after]
    width = max((len(label) for label, _ in rows), default=10)
    lines = [f"{'':{width}}  {'before RL':>10}  {'after RL':>10}  {'change':>8}"]
    for label, key in rows:
        b, a = before.get(key), after.get(key)
        cells = [f"{v:10.3f}" if v is not None else f"{'-':>10}" for v in (b, a)]
        change = f"{a - b:+8.3f}" if a is not None and b is not None else f"{'':8}"
        lines.append(f"{label:{width}}  {cells[0]}  {cells[1]}  {change}")
    return "\n".join(lines)
