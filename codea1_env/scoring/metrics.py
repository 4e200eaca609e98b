"""The metrics of judgements, as every view, the trainer and its evaluation log them.

:func:`judgement_metrics` gives the ``coder/...`` and ``tester/...`` aggregates of a
:class:`~codea1_env.scoring.verdicts.Judgement`; the referee adds them to
:attr:`Judgement.metrics` with the monitor's, the quality filter's and the mistake book's counts.
:func:`pooled_metrics` pools the rewards of many judgements (every code and suite weighs the
same), and :func:`step_metrics` is the trainer's row. The trainer's held-out evaluation reports a
subset of :func:`pooled_metrics`.

How :func:`step_metrics` combines the judgements' (one per problem) values of a key:

* **counts are summed** (a count per step, over every problem of the step): every ``monitor/``
  key (:data:`SUMMED_PREFIXES`; programs, tests, each flag, ``monitor/flagged``) and the keys of
  :data:`SUMMED_KEYS` (``tester/empty_suites``, ``tester/valid_tests``,
  ``tester/valid_failures``, ``quality/trivial_tests``, ``coder/syntax_errors``);
* **pooled rates** (:data:`POOLED_RATES`) are the step's summed numerator over its summed
  denominator, left out of the row when the denominator is 0 (never 0.0):
  ``tester/valid_failure_rate`` is ``tester/valid_failures / tester/valid_tests``, the share of
  the step's kept valid tests that the codes failed;
* **every other key is averaged** over the step's problems: the rates and means of
  :func:`judgement_metrics`, ``sandbox/seconds`` (a problem's share of its batch's sandbox
  time) and ``mistake_book/*`` (the book's state and upkeep after the batch, the same on every
  judgement of a batch except ``mistake_book/size``, the problem's own entries);
* then the keys of :func:`pooled_metrics` (rewards pooled over every code and suite) replace
  any mean of the same name.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from codea1_env.scoring.verdicts import Judgement, SuiteVerdict

__all__ = [
    "POOLED_RATES",
    "SUMMED_KEYS",
    "SUMMED_PREFIXES",
    "is_count",
    "judgement_metrics",
    "mean",
    "pooled_metrics",
    "step_metrics",
    "suite_failed_the_code",
]

SUMMED_PREFIXES: tuple[str, ...] = ("monitor/",)
"""Key prefixes whose values are counts: :func:`step_metrics` sums them over the problems."""

SUMMED_KEYS: frozenset[str] = frozenset(
    {
        "tester/empty_suites",
        "tester/valid_tests",
        "tester/valid_failures",
        "quality/trivial_tests",
        "coder/syntax_errors",
    }
)
"""Other keys whose values are counts: :func:`step_metrics` sums them over the problems."""

POOLED_RATES: Mapping[str, tuple[str, str]] = {
    "tester/valid_failure_rate": ("tester/valid_failures", "tester/valid_tests"),
}
"""``rate key -> (numerator count, denominator count)``: the rates :func:`step_metrics` pools."""


def is_count(key: str) -> bool:
    """Whether ``key`` is a count that :func:`step_metrics` sums over a step's problems."""
    return key in SUMMED_KEYS or key.startswith(SUMMED_PREFIXES)


def mean(values: Sequence[float]) -> float:
    """The mean of ``values``; 0.0 when there are none."""
    return sum(values) / len(values) if values else 0.0


def judgement_metrics(j: Judgement) -> dict[str, float]:
    """The coder and tester aggregates of one judgement (means over codes and suites).

    ``tester/valid_tests`` counts the kept valid tests of the judgement's (code, suite) pairs
    (one per pair a kept valid test is run in), ``tester/valid_failures`` those the code failed
    (a code that did not run fails them all), and ``tester/valid_failure_rate`` is their ratio,
    left out when there is no kept valid test. ``tester/empty_suites`` counts the suites with no
    parsed test.
    """
    testers = [t for row in j.tester_details for t in row]
    suites = [s for row in j.suites for s in row]
    graded = [s.grading for s in suites if s.grading is not None]
    considered = sum(len(g.graded) for g in graded)
    kept_valid = [v for s in suites for v in s.verdicts if v.valid]
    failures = sum(not v.passed for v in kept_valid)
    row = {
        "coder/reward": mean(j.coder_rewards),
        "coder/gt_pass_rate": mean(j.gt_pass_rates),
        "coder/compile_rate": mean([float(c) for c in j.compiled]),
        "tester/reward": mean([t.total for t in testers]),
        "tester/validity": mean([t.r_val for t in testers]),
        "tester/adversarial": mean([t.r_adv for t in testers]),
        "tester/coverage": mean([t.coverage for t in testers]),
        "tester/mutation_kill": mean([t.mutation for t in testers]),
        "tester/valid_share": (sum(g.n_valid for g in graded) / considered) if considered else 0.0,
        "tester/tests_per_suite": mean([float(len(s.verdicts)) for s in suites]),
        "tester/valid_tests": float(len(kept_valid)),
        "tester/valid_failures": float(failures),
        "tester/empty_suites": float(sum(1 for s in suites if s.grading is None)),
    }
    if kept_valid:
        row["tester/valid_failure_rate"] = failures / len(kept_valid)
    return row


def suite_failed_the_code(suite: SuiteVerdict) -> bool:
    """Whether the code ran and failed at least one of the suite's kept generated tests.

    Every kept test counts (the coder's pair reward reads them all), not only the first K that
    ``R_adv`` reads; replayed mistake-book tests do not (they are not the suite's). A code that
    did not run fails no suite: the tester did not break it.
    """
    if suite.tester.reason == "candidate_did_not_run":
        return False
    return any(not v.passed for v in suite.verdicts if v.source == "generated")


def pooled_metrics(judgements: Sequence[Judgement], with_tester: bool = True) -> dict[str, float]:
    """Rewards pooled over every code and suite of ``judgements``.

    Args:
        judgements: The judgements (one per problem).
        with_tester: Also pool the tester's rewards (off in ``golden`` mode).

    Returns:
        ``coder/reward``, ``coder/reward_std`` (population), ``coder/gt_pass_rate`` (the mean
        share of GT tests a code passes), ``coder/all_gt_pass`` (share of codes passing every GT
        test) and, with the tester, ``tester/reward``, ``tester/validity``,
        ``tester/adversarial`` and ``tester/suites_with_failure`` (share of (code, suite) pairs
        in which the code ran and failed at least one kept generated test of the suite:
        :func:`suite_failed_the_code`). Means of no values are 0.0.
    """
    coder = [r for j in judgements for r in j.coder_rewards]
    rates = [r for j in judgements for r in j.gt_pass_rates]
    row = {
        "coder/reward": _fmean(coder),
        "coder/reward_std": statistics.pstdev(coder) if coder else 0.0,
        "coder/gt_pass_rate": _fmean(rates),
        "coder/all_gt_pass": _fmean([1.0 if r >= 1.0 else 0.0 for r in rates]),
    }
    if with_tester:
        details = [d for j in judgements for row_ in j.tester_details for d in row_]
        suites = [s for j in judgements for row_ in j.suites for s in row_]
        row["tester/reward"] = _fmean([float(d.total) for d in details])
        row["tester/validity"] = _fmean([float(d.r_val) for d in details])
        row["tester/adversarial"] = _fmean([float(d.r_adv) for d in details])
        row["tester/suites_with_failure"] = _fmean(
            [1.0 if suite_failed_the_code(s) else 0.0 for s in suites]
        )
    return row


def step_metrics(judgements: Sequence[Judgement], with_tester: bool = True) -> dict[str, float]:
    """The metrics of one training step (see the module docstring for how keys combine).

    Args:
        judgements: The step's judgements (every rank's, in problem order).
        with_tester: Keep the ``tester/...`` keys (off in ``golden`` mode).

    Returns:
        Per key of :attr:`Judgement.metrics`: the sum over judgements for a count
        (:func:`is_count`), the pooled ratio for a :data:`POOLED_RATES` key (absent when its
        denominator sums to 0), the mean otherwise; overwritten where :func:`pooled_metrics`
        has the same key.
    """
    merged: dict[str, list[float]] = {}
    for judgement in judgements:
        for key, value in judgement.metrics.items():
            merged.setdefault(key, []).append(float(value))
    row: dict[str, float] = {}
    for key, values in merged.items():
        if not values or key in POOLED_RATES or (not with_tester and key.startswith("tester/")):
            continue
        row[key] = math.fsum(values) if is_count(key) else statistics.fmean(values)
    for key, (numerator, denominator) in POOLED_RATES.items():
        if not with_tester and key.startswith("tester/"):
            continue
        total = math.fsum(merged.get(denominator, ()))
        if total > 0:
            row[key] = math.fsum(merged.get(numerator, ())) / total
    row.update(pooled_metrics(judgements, with_tester))
    return row


def _fmean(values: Sequence[float]) -> float:
    return float(statistics.fmean(values)) if values else 0.0
