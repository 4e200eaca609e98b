"""The metrics of one judgement, as every view and the trainer log them.

:func:`judgement_metrics` gives the ``coder/...`` and ``tester/...`` aggregates of a
:class:`~codea1_env.scoring.verdicts.Judgement`; the referee adds them to
:attr:`Judgement.metrics` with the monitor's, the quality filter's and the mistake book's counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from codea1_env.scoring.verdicts import Judgement

__all__ = ["judgement_metrics", "mean"]


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
