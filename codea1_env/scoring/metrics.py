"""The metrics of judgements, as every view, the trainer and its evaluation log them.

:func:`judgement_metrics` gives the ``coder/...`` and ``tester/...`` aggregates of a
:class:`~codea1_env.scoring.verdicts.Judgement`; the referee adds them to
:attr:`Judgement.metrics` with the monitor's, the quality filter's and the mistake book's counts.
:func:`pooled_metrics` pools the rewards of many judgements (every code and suite weighs the
same), and :func:`step_metrics` is the trainer's row: the mean of each judgement metric plus
the pooled rewards. The trainer's held-out evaluation reports a subset of :func:`pooled_metrics`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from codea1_env.scoring.verdicts import Judgement

__all__ = ["judgement_metrics", "mean", "pooled_metrics", "step_metrics"]


def mean(values: Sequence[float]) -> float:
    """The mean of ``values``; 0.0 when there are none."""
    return sum(values) / len(values) if values else 0.0


def judgement_metrics(j: Judgement) -> dict[str, float]:
    """The coder and tester aggregates of one judgement (means over codes and suites)."""
    testers = [t for row in j.tester_details for t in row]
    suites = [s for row in j.suites for s in row]
    graded = [s.grading for s in suites if s.grading is not None]
    considered = sum(len(g.graded) for g in graded)
    kept_valid = [v for s in suites for v in s.verdicts if v.valid]
    return {
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
        "tester/valid_failure_rate": (
            sum(not v.passed for v in kept_valid) / len(kept_valid) if kept_valid else 0.0
        ),
        "tester/empty_suites": float(sum(1 for s in suites if s.grading is None)),
    }


def pooled_metrics(judgements: Sequence[Judgement], with_tester: bool = True) -> dict[str, float]:
    """Rewards pooled over every code and suite of ``judgements``.

    Args:
        judgements: The judgements (one per problem).
        with_tester: Also pool the tester's rewards (off in ``golden`` mode).

    Returns:
        ``coder/reward``, ``coder/reward_std`` (population), ``coder/gt_pass_rate``,
        ``coder/all_gt_pass`` (share of codes passing every GT test) and, with the tester,
        ``tester/reward``, ``tester/validity``, ``tester/adversarial`` and
        ``tester/suites_with_failure`` (share of suites with ``R_adv > 0``). Means of no values
        are 0.0.
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
        row["tester/reward"] = _fmean([float(d.total) for d in details])
        row["tester/validity"] = _fmean([float(d.r_val) for d in details])
        row["tester/adversarial"] = _fmean([float(d.r_adv) for d in details])
        row["tester/suites_with_failure"] = _fmean(
            [1.0 if float(d.r_adv) > 0 else 0.0 for d in details]
        )
    return row


def step_metrics(judgements: Sequence[Judgement], with_tester: bool = True) -> dict[str, float]:
    """The metrics of one training step: each judgement metric's mean, then the pooled rewards.

    Args:
        judgements: The step's judgements (every rank's, in problem order).
        with_tester: Keep the ``tester/...`` keys (off in ``golden`` mode).

    Returns:
        The mean over judgements of every key of :attr:`Judgement.metrics`, overwritten where
        :func:`pooled_metrics` has the same key.
    """
    merged: dict[str, list[float]] = {}
    for judgement in judgements:
        for key, value in judgement.metrics.items():
            merged.setdefault(key, []).append(float(value))
    row = {
        k: statistics.fmean(v)
        for k, v in merged.items()
        if v and (with_tester or not k.startswith("tester/"))
    }
    row.update(pooled_metrics(judgements, with_tester))
    return row


def _fmean(values: Sequence[float]) -> float:
    return float(statistics.fmean(values)) if values else 0.0
