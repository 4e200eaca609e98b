"""Materialization: every generated call turned into a call on literal arguments.

Step 2 of the referee before the main batch (see :mod:`codea1_env.scoring.arguments`): the
non-literal arguments and expectations of every suite are evaluated in one sandbox call with no
program loaded (:func:`inputs_jobs`); calls whose arguments fail or are not plain data are
discarded as invalid (``bad_arguments``), the others rewritten on literal values, and the
evaluated expectations recorded in the plan (:func:`apply_inputs`). The referee runs the jobs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from codea1_env.problems.problem import IOPair
from codea1_env.sandbox.base import Job, JobResult, Limits
from codea1_env.scoring.arguments import MISSING, arguments_expression, literal_call, literal_value
from codea1_env.scoring.plan import CALLS_PER_JOB, Plan, make_job
from codea1_env.scoring.reasons import with_detail
from codea1_env.scoring.testcases import TestCase

__all__ = ["apply_inputs", "inputs_jobs"]


def inputs_jobs(plans: Sequence[Plan], limits: Limits) -> tuple[list[Job], dict[str, str | None]]:
    """The jobs evaluating the plans' non-literal arguments and expectations (none: ``[]``).

    Also returns, per generated call, its arguments' expression (None when already literal).
    """
    expressions: dict[str, None] = {}
    arg_exprs: dict[str, str | None] = {}
    for plan in plans:
        for row in plan.suites:
            for suite in row:
                for case in suite.cases:
                    if not isinstance(case, TestCase):
                        continue
                    if case.call in arg_exprs:
                        expr = arg_exprs[case.call]
                    else:
                        expr = arg_exprs[case.call] = arguments_expression(case.call)
                    if expr is not None:
                        expressions[expr] = None
                    if literal_value(case.expected) is MISSING:
                        expressions[case.expected] = None
    keys = list(expressions)
    jobs = [
        make_job("", keys[i : i + CALLS_PER_JOB], False, limits, "inputs")
        for i in range(0, len(keys), CALLS_PER_JOB)
    ]
    return jobs, arg_exprs


def apply_inputs(
    plans: Sequence[Plan],
    jobs: Sequence[Job],
    results: Sequence[JobResult],
    arg_exprs: dict[str, str | None],
) -> None:
    """Rewrite the plans' cases on the evaluated arguments; discard those that did not evaluate."""
    values = {
        key: call
        for job, result in zip(jobs, results)
        for key, call in zip(job.calls, result.calls)
    }
    for plan in plans:
        entry = plan.problem.entry_point
        for row in plan.suites:
            for suite in row:
                kept: list[TestCase | IOPair] = []
                for case in suite.cases:
                    if not isinstance(case, TestCase):
                        kept.append(case)
                        continue
                    expr = arg_exprs.get(case.call)
                    if expr is not None:
                        outcome = values[expr]
                        call = literal_call(entry, outcome.value) if outcome.ok else None
                        if call is None:
                            reason = outcome.error or outcome.status.value
                            suite.discarded.append(
                                (
                                    case.line,
                                    with_detail("bad_arguments", reason[:120]),
                                    case.source[:200],
                                )
                            )
                            continue
                        case = dataclasses.replace(case, call=call, written=case.key)
                    if case.expected in values:
                        outcome = values[case.expected]
                        plan.expected_values[case.expected] = (
                            outcome.ok,
                            outcome.value if outcome.ok else None,
                        )
                    kept.append(case)
                suite.cases = kept
