"""The referee's upkeep of the mistake book: rule 8, its bounds, and its refresh against the GT.

What the book is and how it is stored lives in :mod:`codea1_env.mistake_book`; this module holds
what the referee does to it after a judgement (:func:`apply_judgement`), after a batch
(:func:`bound_book`, the stability options' capacities) and every ``book_refresh_every`` batches
(:func:`refresh_jobs` and :func:`drop_stale`: stored tests the GT no longer passes are dropped).
The sandbox runs stay with the referee.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from codea1_env.mistake_book import BookEntry, MistakeBook
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import Job, JobResult, Limits
from codea1_env.scoring.plan import Plan, call_key, make_job
from codea1_env.scoring.verdicts import Judgement
from codea1_env.stability import StabilityOptions

__all__ = [
    "after_batch",
    "apply_judgement",
    "apply_judgements",
    "book_metrics",
    "bound_book",
    "drop_stale",
    "judgement_outcomes",
    "refresh_jobs",
]

RefreshWork = list[tuple[Problem, list[BookEntry]]]
"""The problems whose stored tests a refresh re-runs, with those entries."""


def judgement_outcomes(plan: Plan, judgement: Judgement) -> tuple[list[tuple[str, Any]], list[str]]:
    """Rule 8's inputs from one judgement: ``(failed, passed)`` over the problem's valid codes.

    ``failed`` holds ``(call, GT value)`` once per (code, suite, kept test) that failed;
    ``passed`` a replayed call once per (code, replayed test) that passed.
    """
    failed: list[tuple[str, Any]] = []
    passed: list[str] = []
    for index, ran in enumerate(judgement.compiled):
        if not ran:
            continue
        for suite in judgement.suites[index]:
            if suite.grading is None:
                continue
            for test, verdict in zip(suite.grading.tests, suite.verdicts):
                if not verdict.passed:
                    failed.append((call_key(test.case), test.gt_value))
        for entry, verdict in zip(plan.book, judgement.mistake_book[index]):
            if verdict.passed:
                passed.append(entry.call)
    return failed, passed


def apply_judgement(book: MistakeBook, plan: Plan, judgement: Judgement) -> None:
    """Rule 8, over this problem's valid codes: -1 per replayed pass, then +1 per kept fail."""
    apply_judgements(book, [(plan, judgement)])


def apply_judgements(book: MistakeBook, judged: Sequence[tuple[Plan, Judgement]]) -> None:
    """Rule 8 once per problem over a step's judgements, in the order problems first appear.

    A problem judged more than once in the step (drawn twice, or one plan per episode of a
    vector env's group) gets one update over all its judgements' codes: every decrement of the
    step before any increment, as the authors' one update per problem per step does. Applying
    the judgements one after the other would differ where a decrement removes an entry that a
    later judgement's failure then adds back, or a failure adds one that a later pass removes.
    """
    merged: dict[str, tuple[list[tuple[str, Any]], list[str]]] = {}
    for plan, judgement in judged:
        failed, passed = judgement_outcomes(plan, judgement)
        all_failed, all_passed = merged.setdefault(plan.problem.task_id, ([], []))
        all_failed.extend(failed)
        all_passed.extend(passed)
    for task_id, (failed, passed) in merged.items():
        if failed or passed:
            book.apply(task_id, failed, passed)


def bound_book(book: MistakeBook, stability: StabilityOptions) -> int:
    """Evict down to the configured capacities; returns the number of entries evicted."""
    per_problem = stability.book_capacity_per_problem
    total = stability.book_capacity_total
    if per_problem is None and total is None:
        return 0
    return book.evict(per_problem=per_problem, total=total)


def after_batch(
    book: MistakeBook, stability: StabilityOptions, batch_number: int, refresh: Callable[[], int]
) -> tuple[int, int]:
    """The book's upkeep after the ``batch_number``-th updated batch: bound it, refresh it.

    ``refresh`` re-runs the batch's stored tests on the GT and returns how many it dropped; it
    is called every ``book_refresh_every`` batches. Returns ``(evicted, refreshed)``.
    """
    evicted = bound_book(book, stability)
    every = stability.book_refresh_every
    refreshed = refresh() if every and batch_number % every == 0 else 0
    return evicted, refreshed


def book_metrics(
    book: MistakeBook,
    judged: Sequence[tuple[str, Judgement]],
    evicted: int,
    refreshed: int,
) -> None:
    """Set the book's metrics of each ``(task id, judgement)`` of a batch, after its upkeep."""
    total = float(book.size())
    for task_id, judgement in judged:
        judgement.metrics["mistake_book/size"] = float(book.size(task_id))
        judgement.metrics["mistake_book/total_size"] = total
        judgement.metrics["mistake_book/evicted"] = float(evicted)
        judgement.metrics["mistake_book/refresh_dropped"] = float(refreshed)


def refresh_jobs(
    book: MistakeBook, problems: Sequence[Problem], limits: Limits
) -> tuple[RefreshWork, list[Job]]:
    """The GT jobs that re-run the stored tests of ``problems`` (one job per problem with any)."""
    work: RefreshWork = []
    for problem in {p.task_id: p for p in problems}.values():
        entries = book.entries(problem.task_id)
        if entries:
            work.append((problem, entries))
    jobs = [
        make_job(p.gt_program, [e.call for e in entries], p.kind == "stdio", limits, "refresh")
        for p, entries in work
    ]
    return work, jobs


def drop_stale(
    book: MistakeBook,
    work: RefreshWork,
    results: Sequence[JobResult],
    same: Callable[[Any, Any, bool], bool],
) -> int:
    """Drop the stored tests the GT now fails or answers differently; returns how many."""
    dropped = 0
    for (problem, entries), result in zip(work, results):
        stdio = problem.kind == "stdio"
        stale = [
            e.call
            for e, call in zip(entries, result.calls)
            if not (call.ok and same(call.value, e.expected, stdio))
        ]
        if stale:
            dropped += book.remove(problem.task_id, stale)
    return dropped
