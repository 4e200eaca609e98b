"""The referee: the single scoring path of codea1.

Given a problem, candidate programs and the test suites a tester wrote against each of them, the
referee runs everything in the sandbox in one batched call and returns the verdicts and both
players' rewards. The Gymnasium env, its vector form, the PettingZoo view, the single-role wrappers
and the trainer all call :meth:`Referee.judge_many`; none re-implements scoring.

One judgement, step by step (Code-A1 semantics, see docs/deviations.md):

1. Extract each coder's program (:func:`~codea1_env.scoring.testcases.extract_code`) and parse each
   tester's text into test cases (:func:`~codea1_env.scoring.testcases.parse_tests`; stdio problems:
   :func:`~codea1_env.scoring.testcases.parse_io_pairs`).
2. Build one sandbox batch: the GT program on every distinct generated call, on every expected
   expression that is not a plain literal, and on the problem's GT tests; each distinct candidate
   program on the distinct calls of all the suites written against it, the replayed mistake-book
   tests and the GT tests (identical programs of a problem share one job; each sample keeps its
   own verdicts). GT results are cached per (GT program, call), so a call is run on the GT once
   per referee.
3. Grade each suite against the GT (:func:`~codea1_env.scoring.testcases.grade_suite`, rule 2):
   calls the GT cannot run and duplicates are invalid and not kept; every other test is kept with
   the GT's value as its expectation, and counted invalid too when the tester's expectation was
   wrong. No cap at K: every kept test runs against the candidate.
4. Compare each candidate value with the GT value in this (trusted) process with
   the configured equality (:attr:`RewardConfig.equality`: Python's ``==`` by default, as the
   authors compare); the untrusted process never sees an expected value.
5. Score with :mod:`codea1_env.scoring.rewards` (rules 3-7) and, when asked, update the mistake book
   once per problem (rule 8): first -1 for every (valid code, replayed test) that passed, then +1
   for every (valid code, suite, kept test) that failed.

Where each step lives: :mod:`.plan` (steps 1-2: parsing, the batch's jobs, the GT cache),
:mod:`.materialize` (literal arguments), :mod:`.score` (steps 3-5 for one problem),
:mod:`.book` (rule 8 and the book's bounds and refresh), :mod:`.metrics` (a judgement's
aggregates) and :mod:`.verdicts` (what a judgement reports). This module runs the sandbox and
holds the referee's state (caches, pass history, mistake book); the others are pure.
"""

from __future__ import annotations

import abc
import threading
import time
from collections.abc import Sequence
from typing import Any, TypeVar

from codea1_env.mistake_book import InMemoryMistakeBook, MistakeBook
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import CallResult, IsolationReport, Job, Limits, Sandbox
from codea1_env.sandbox.worker import plain
from codea1_env.scoring import arguments, monitor
from codea1_env.scoring.book import (
    after_batch,
    apply_judgements,
    book_metrics,
    drop_stale,
    refresh_jobs,
)
from codea1_env.scoring.gcpause import paused_gc
from codea1_env.scoring.materialize import apply_inputs, inputs_jobs
from codea1_env.scoring.monitor import monitor_referee_batch
from codea1_env.scoring.plan import (
    GtCache,
    Plan,
    SuiteParser,
    add_candidate_jobs,
    add_gt_jobs,
    add_mutant_jobs,
    digest,
    plan_problem,
)
from codea1_env.scoring.plan import clear_caches as clear_parsed_gt_tests
from codea1_env.scoring.quality import PassHistory
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.scoring.score import same, score_plan
from codea1_env.scoring.verdicts import Judgement, SuiteVerdict, TestVerdict
from codea1_env.stability import StabilityOptions

__all__ = [
    "Item",
    "Judge",
    "Judgement",
    "Referee",
    "SuiteVerdict",
    "TestVerdict",
    "clear_text_caches",
]


Item = tuple[Problem, Sequence[str], Sequence[Sequence[str]]]
"""One ``(problem, codes, suites)`` item of a batch."""

_Judge = TypeVar("_Judge", bound="Judge")


def clear_text_caches() -> None:
    """Forget the memos of texts that every referee of this process shares.

    Literal values, argument expressions, program scans and normal forms are memoized per text
    for the life of the process (they are pure), and so are the problems' parsed GT tests.
    Scoring never needs this; a benchmark calls it before each timed pass or side, so that each
    pays for its texts and its problems as a fresh process would, instead of finding them from
    the one timed before it.
    """
    arguments.clear_caches()
    monitor.clear_caches()
    clear_parsed_gt_tests()


class Judge(abc.ABC):
    """What scores duels: :class:`Referee` and :class:`~codea1_env.scoring.pool.RefereePool`.

    The public calls (:meth:`judge`, :meth:`judge_many`, the context manager) are written once
    here; a subclass scores a checked batch (``_judge_many``) and releases what it started.
    """

    def __enter__(self: _Judge) -> _Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ public API
    def judge(
        self,
        problem: Problem,
        codes: Sequence[str],
        suites: Sequence[Sequence[str]],
        *,
        update_book: bool = True,
    ) -> Judgement:
        """Score one problem: ``codes[i]`` against each text in ``suites[i]``.

        Args:
            problem: The problem, with its GT program and GT tests.
            codes: The coder's raw answers (code, possibly fenced in prose).
            suites: ``suites[i]`` are the tester's raw answers written against ``codes[i]``;
                may be empty (golden mode, or a coder-only episode).
            update_book: Apply this judgement's mistake-book updates.

        Returns:
            The judgement. Never raises because of the content of ``codes`` or ``suites``.

        """
        return self.judge_many([(problem, codes, suites)], update_book=update_book)[0]

    def judge_many(
        self,
        batch: Sequence[Item],
        *,
        update_book: bool = True,
        candidate_limits: Sequence[Limits | None] | None = None,
    ) -> list[Judgement]:
        """Score several problems with one sandbox call (see :meth:`judge`).

        Args:
            batch: ``(problem, codes, suites)`` items, as :meth:`judge` takes them. The same
                problem may appear in several items (each is scored on its own; GT runs are
                shared).
            update_book: Apply the judgements' mistake-book updates.
            candidate_limits: Per item, the limits of its candidate jobs (None: the referee's);
                the evaluator runs the GT's mutants under shorter call timeouts this way.

        """
        if candidate_limits is not None and len(candidate_limits) != len(batch):
            raise ValueError(
                f"judge_many: {len(batch)} items but {len(candidate_limits)} candidate_limits"
            )
        with paused_gc():  # see gcpause.py: the collector held off while a batch is scored
            return self._judge_many(batch, update_book, candidate_limits)

    @abc.abstractmethod
    def _judge_many(
        self,
        batch: Sequence[Item],
        update_book: bool,
        candidate_limits: Sequence[Limits | None] | None,
    ) -> list[Judgement]:
        """Score a checked batch, with the collector held off."""

    @abc.abstractmethod
    def pass_history_state(self) -> dict[str, Any]:
        """The quality filter's pass history (``always_passes``), as JSON data to save.

        A :meth:`~codea1_env.scoring.quality.PassHistory.state_dict`; call it between
        judgements. The trainer saves it in its checkpoints, so that a resumed run filters as
        the uninterrupted one does.
        """

    @abc.abstractmethod
    def load_pass_history_state(self, state: Any) -> None:
        """Replace the pass history with one :meth:`pass_history_state` gave.

        Raises:
            ValueError: ``state`` is damaged (the message names the field); nothing changed.
        """

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` stopped what this scorer started (it cannot judge again)."""
        return bool(getattr(self, "_closed", False))

    @abc.abstractmethod
    def isolation(self) -> IsolationReport:
        """The sandbox's isolation report: its layers and the Python that runs the programs."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release what the scorer started. Idempotent."""


class Referee(Judge):
    """Scores duels. Thread-safe for concurrent :meth:`judge_many` calls; owns no global state.

    Args:
        sandbox: Where code runs. Defaults to the local fork-server backend, started lazily.
        reward_config: Alpha, K and the reward mode.
        limits: Per-job resource limits for candidate and GT runs.
        mistake_book: The mistake book to replay and update. Defaults to an in-memory book.
        owns_sandbox: Whether :meth:`close` stops the sandbox (default: only one it started).
        stability: Quality filter and mistake-book bounds (see :mod:`codea1_env.stability`).

    """

    def __init__(
        self,
        sandbox: Sandbox | None = None,
        reward_config: RewardConfig | None = None,
        limits: Limits | None = None,
        mistake_book: MistakeBook | None = None,
        owns_sandbox: bool | None = None,
        stability: StabilityOptions | None = None,
    ) -> None:
        self.stability = stability or StabilityOptions()
        self.history = PassHistory()
        self._batches = 0
        self._sandbox = sandbox
        self._closed = False
        self._owns_sandbox = sandbox is None if owns_sandbox is None else owns_sandbox
        self.reward_config = reward_config or RewardConfig()
        self.limits = limits or Limits()
        self.mistake_book: MistakeBook = (
            mistake_book if mistake_book is not None else InMemoryMistakeBook()
        )
        self._equal = plain.equality(self.reward_config.equality)
        self._mutants: Any = None  # a MutantCache, made on first use of the mutation bonus
        self._parser = SuiteParser()
        self._gt_cache = GtCache()
        self._lock = threading.Lock()
        self.stats: dict[str, float] = {"sandbox_seconds": 0.0, "jobs": 0.0, "calls": 0.0}

    # ------------------------------------------------------------------ lifecycle
    @property
    def sandbox(self) -> Sandbox:
        """The sandbox, started on first use.

        Raises:
            RuntimeError: :meth:`close` was called on a referee that owns its sandbox (a new
                sandbox would not be the one it was given: another backend, other workers).

        """
        with self._lock:
            if self._closed:
                raise RuntimeError("this Referee is closed: its sandbox was stopped by close()")
            if self._sandbox is None:
                from codea1_env.sandbox.factory import make_sandbox

                self._sandbox = make_sandbox("local")
            return self._sandbox

    def isolation(self) -> IsolationReport:
        """The sandbox's isolation report; starts the sandbox if it has not started yet."""
        return self.sandbox.isolation()

    def close(self) -> None:
        """Stop the sandbox if this referee owns it. Idempotent.

        A referee that owns its sandbox cannot judge after this (:attr:`sandbox` raises); one
        given a sandbox it does not own leaves it running and stays usable.
        """
        with self._lock:
            if self._owns_sandbox:
                if self._sandbox is not None:
                    self._sandbox.close()
                    self._sandbox = None
                self._closed = True

    def _judge_many(
        self,
        batch: Sequence[Item],
        update_book: bool,
        candidate_limits: Sequence[Limits | None] | None,
    ) -> list[Judgement]:
        plans = [self._plan(problem, codes, suites) for problem, codes, suites in batch]
        for plan, item_limits in zip(plans, candidate_limits or ()):
            plan.limits = item_limits
        inputs_seconds = self._materialize(plans)
        jobs: list[Job] = []
        gt_slots: list[tuple[str, list[str], int]] = []  # (program, keys, job index)
        gt_seen: set[tuple[str, str]] = set()
        coverage = bool(self.reward_config.coverage_bonus)
        for plan in plans:
            add_gt_jobs(
                plan,
                jobs,
                gt_slots,
                gt_seen,
                cache=self._gt_cache,
                limits=self.limits,
                coverage=coverage,
            )
            add_candidate_jobs(plan, jobs, self.limits)
            if self.reward_config.mutation_bonus:
                add_mutant_jobs(
                    plan,
                    jobs,
                    mutants=self._mutant_cache,
                    cache=self._gt_cache,
                    limits=self.limits,
                )
        started = time.perf_counter()
        results = self.sandbox.run(jobs) if jobs else []
        elapsed = time.perf_counter() - started + inputs_seconds
        with self._lock:
            self.stats["sandbox_seconds"] += elapsed
            self.stats["jobs"] += len(jobs)
            self.stats["calls"] += sum(job.n_calls for job in jobs)
            batch_gt: dict[tuple[str, str], CallResult] = {}
            for program, keys, index in gt_slots:
                program_digest = digest(program)
                for key, call in zip(keys, results[index].calls):
                    batch_gt[(program_digest, key)] = call
                    self._gt_cache.put((program_digest, key), call)
        judgements = [
            score_plan(
                plan,
                results,
                batch_gt,
                cache=self._gt_cache,
                config=self.reward_config,
                stability=self.stability,
                history=self.history,
                equal=self._equal,
            )
            for plan in plans
        ]
        for plan, judgement in zip(plans, judgements):
            judgement.metrics.update(
                monitor_referee_batch(
                    plan.programs,
                    [[results[i]] if i >= 0 else [] for i in plan.cand_jobs],
                    [
                        (suite.cases, list(suite.rejected) + list(suite.discarded))
                        for row in plan.suites
                        for suite in row
                    ],
                    plan.problem.entry_point,
                )
            )
        per_problem = elapsed / max(len(plans), 1)
        books = update_book and self.reward_config.mode != "golden"
        for judgement in judgements:
            judgement.metrics["sandbox/seconds"] = per_problem
        if books:
            apply_judgements(self.mistake_book, list(zip(plans, judgements)))
        evicted = refreshed = 0
        if books:
            self._batches += 1
            evicted, refreshed = after_batch(
                self.mistake_book,
                self.stability,
                self._batches,
                lambda: self.refresh_book([plan.problem for plan in plans]),
            )
        judged = [(plan.problem.task_id, judgement) for plan, judgement in zip(plans, judgements)]
        book_metrics(self.mistake_book, judged, evicted, refreshed)
        return judgements

    def pass_history_state(self) -> dict[str, Any]:
        """:attr:`history`'s :meth:`~codea1_env.scoring.quality.PassHistory.state_dict`."""
        return self.history.state_dict()

    def load_pass_history_state(self, state: Any) -> None:
        """Replace :attr:`history` with a saved one (checked first: ValueError names a field)."""
        self.history.load_state_dict(state)

    def refresh_book(self, problems: Sequence[Problem]) -> int:
        """Re-run the stored tests of ``problems`` on their GT; drop those that no longer hold.

        A stored test is dropped when the GT now fails on its call or returns a different value
        (for example after a problem's GT was corrected). One sandbox call for all problems.

        Returns:
            The number of entries dropped.
        """
        work, jobs = refresh_jobs(self.mistake_book, problems, self.limits)
        if not work:
            return 0
        results = self.sandbox.run(jobs)
        return drop_stale(self.mistake_book, work, results, self._same)

    def gt_pass_rates(self, problem: Problem, codes: Sequence[str]) -> list[float]:
        """Pass rate of each code on the problem's GT tests (no tester, no mistake book)."""
        return list(
            self.judge(problem, codes, [[] for _ in codes], update_book=False).gt_pass_rates
        )

    # ------------------------------------------------------------------ steps
    def _plan(
        self, problem: Problem, codes: Sequence[str], suites: Sequence[Sequence[str]]
    ) -> Plan:
        return plan_problem(
            problem,
            codes,
            suites,
            parser=self._parser,
            config=self.reward_config,
            stability=self.stability,
            history=self.history,
            mistake_book=self.mistake_book,
        )

    def _materialize(self, plans: Sequence[Plan]) -> float:
        """Turn every generated call into a call on literal arguments (see :mod:`.materialize`).

        Returns the seconds spent in the sandbox.
        """
        jobs, arg_exprs = inputs_jobs(plans, self.limits)
        if not jobs:
            return 0.0
        started = time.perf_counter()
        results = self.sandbox.run(jobs)
        elapsed = time.perf_counter() - started
        apply_inputs(plans, jobs, results, arg_exprs)
        return elapsed

    def _mutant_cache(self) -> Any:
        """The GT mutants of the mutation-kill bonus, cached per GT program (made on first use)."""
        if self._mutants is None:
            from codea1_env.scoring.mutation import MutantCache

            self._mutants = MutantCache()
        return self._mutants

    def _same(self, value: Any, expected: Any, stdio: bool) -> bool:
        return same(value, expected, stdio, self._equal)
