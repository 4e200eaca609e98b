"""The referee: the single scoring path of codea1.

Given a problem, candidate programs and the test suites a tester wrote against each of them, the
referee runs everything in the sandbox in one batched call and returns the verdicts and both
players' rewards. The Gymnasium env, its vector form, the PettingZoo view, the single-role wrappers
and the trainer all call :meth:`Referee.judge_many`; none re-implements scoring.

One judgement, step by step (Code-A1 semantics, see DESIGN.md):

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
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import threading
import time
import tokenize
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from codea1_env.mistake_book import BookEntry, InMemoryMistakeBook, MistakeBook
from codea1_env.problems.problem import IOPair, Problem
from codea1_env.sandbox.base import CallResult, CallStatus, Job, JobResult, Limits, Sandbox
from codea1_env.sandbox.worker import plain
from codea1_env.scoring.arguments import MISSING, arguments_expression, literal_call, literal_value
from codea1_env.scoring.monitor import monitor_referee_batch
from codea1_env.scoring.quality import PassHistory, trivial_reason
from codea1_env.scoring.rewards import (
    CoderReward,
    RewardConfig,
    TesterReward,
    score_coder,
    tester_reward,
)
from codea1_env.scoring.testcases import (
    SuiteGrading,
    TestCase,
    extract_code,
    grade_suite,
    parse_io_pairs,
    parse_tests,
)
from codea1_env.stability import StabilityOptions

__all__ = ["Judgement", "Referee", "SuiteVerdict", "TestVerdict"]

_GT_CACHE_SIZE = 200_000
_PARSE_CACHE_SIZE = 4096

BONUS_MUTANTS = 8
"""Most mutants of a GT the optional mutation-kill bonus runs (cached per problem)."""

BONUS_MUTANT_TIMEOUT_S = (0.05, 0.25)
"""A bonus mutant's call timeout: 20x the GT's slowest cached call on the same inputs, within
these bounds (the upper one when the GT's times are not cached yet); a mutant that loops
counts as killed on that call without holding a worker for the full call timeout."""
_CALLS_PER_JOB = 128
_MAX_CASES_FACTOR = 8
"""At most ``8 * K`` asserts of a suite are read (64 for K = 8); later ones are ignored."""


@dataclass(frozen=True)
class TestVerdict:
    """One kept test run against one candidate.

    Attributes:
        test: The assert as scored: ``assert call == <GT value>`` (stdio: the input text).
        valid: True when the tester's own expectation matched the GT.
        passed: True when the candidate's value equals the GT value.
        status: How the candidate's call ended (``"ok"``, ``"exception"``, ``"timeout"``, ...).
        error: The candidate's error, if any (truncated).
        source: ``"generated"``, ``"mistake_book"`` or ``"gt"``.
        agrees_with_tester: The candidate's value equals the value the TESTER claimed (its own
            expected expression, before GT correction): what a test "passes" means when the GT
            is not known, as in best-of-N selection or CURE's p00. Equals ``passed`` for a valid
            test; False when the claim did not evaluate.
        duration_s: How long the candidate's call took (the sandbox's measure; 0 if not run).

    """

    __test__ = False

    test: str
    valid: bool
    passed: bool
    status: str
    error: str = ""
    source: str = "generated"
    agrees_with_tester: bool = False
    duration_s: float = 0.0


@dataclass(frozen=True)
class SuiteVerdict:
    """One (code, suite) pair: what the suite became after GT correction and how the code did.

    Attributes:
        grading: The GT-corrected suite.
        verdicts: One :class:`TestVerdict` per kept generated test.
        rejected: ``(line, reason, source)`` for every assert that was not kept (parse
            rejections and GT drops), so a user can see why a test did not count.
        parse_reason: Why nothing was parsed (``""`` when something was).
        coder_pair_reward: The code's reward against this suite.
        tester: The tester's reward for this suite.
        n_invalid: Invalid tests (rule 3): the grading's, plus those whose arguments did not
            evaluate or that the optional quality filter removed.

    """

    grading: SuiteGrading | None
    verdicts: tuple[TestVerdict, ...]
    rejected: tuple[tuple[int, str, str], ...]
    parse_reason: str
    coder_pair_reward: float
    tester: TesterReward
    n_invalid: int = 0

    @property
    def n_kept(self) -> int:
        """Kept tests (rule 3)."""
        return self.grading.n_kept if self.grading is not None else 0


@dataclass(frozen=True)
class Judgement:
    """Everything the referee decided about one problem.

    Attributes:
        coder_rewards: Per code: mean pair reward over its suites (golden mode: GT pass rate).
        tester_rewards: ``[code][suite]`` tester rewards.
        gt_pass_rates: Per code, pass rate on the problem's GT tests.
        coder_details: Per code, the reward and its parts.
        tester_details: ``[code][suite]`` tester rewards and their parts.
        suites: ``[code][suite]`` per-suite verdicts.
        mistake_book: Per code, verdicts on the replayed mistake-book tests.
        gt_tests: Per code, verdicts on the problem's GT tests that the GT itself passes.
        compiled: Per code, whether the program's top level ran.
        code_errors: Per code, why it did not compile/run (``""`` when it did).
        metrics: Aggregates for logging.

    """

    coder_rewards: tuple[float, ...]
    tester_rewards: tuple[tuple[float, ...], ...]
    gt_pass_rates: tuple[float, ...]
    coder_details: tuple[CoderReward, ...]
    tester_details: tuple[tuple[TesterReward, ...], ...]
    suites: tuple[tuple[SuiteVerdict, ...], ...] = ()
    mistake_book: tuple[tuple[TestVerdict, ...], ...] = ()
    gt_tests: tuple[tuple[TestVerdict, ...], ...] = ()
    compiled: tuple[bool, ...] = ()
    code_errors: tuple[str, ...] = ()
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class _Parsed:
    """Parsed tests of one suite, plus the raw text for the penalty."""

    text: str
    cases: list[TestCase | IOPair]
    rejected: list[tuple[int, str, str]]
    reason: str
    discarded: list[tuple[int, str, str]] = field(default_factory=list)
    """Tests removed before grading (trivial, or arguments that do not evaluate): invalid."""


@dataclass
class _Plan:
    """One problem's work: parsed inputs and where each needed result will come from."""

    problem: Problem
    programs: list[str | None]
    program_errors: list[str]
    suites: list[list[_Parsed]]
    book: list[BookEntry]
    gt_cases: list[TestCase | IOPair]
    # expected-expression source -> (evaluated?, plain value), for non-literal expectations
    expected_values: dict[str, tuple[bool, Any]] = field(default_factory=dict)
    # keys of the GT job calls -> result (filled after the sandbox run)
    gt_needed: dict[str, str] = field(default_factory=dict)
    # per candidate: the ordered distinct calls and their job index in the batch
    cand_calls: list[list[str]] = field(default_factory=list)
    cand_jobs: list[int] = field(default_factory=list)
    # limits of this problem's candidate jobs (the referee's when None)
    limits: Limits | None = None
    # the optional mutation-kill bonus: the calls the GT's mutants ran, and their jobs
    mutant_calls: list[str] = field(default_factory=list)
    mutant_jobs: list[int] = field(default_factory=list)


class Referee:
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
        self._owns_sandbox = sandbox is None if owns_sandbox is None else owns_sandbox
        self.reward_config = reward_config or RewardConfig()
        self.limits = limits or Limits()
        self.mistake_book: MistakeBook = (
            mistake_book if mistake_book is not None else InMemoryMistakeBook()
        )
        self._equal = plain.equality(self.reward_config.equality)
        self._mutants: Any = None  # a MutantCache, made on first use of the mutation bonus
        self._parse_cache: OrderedDict[
            tuple[str, str, str], tuple[tuple[Any, ...], tuple[tuple[int, str, str], ...], str]
        ] = OrderedDict()
        self._gt_cache: OrderedDict[tuple[str, str], CallResult] = OrderedDict()
        self._lock = threading.Lock()
        self.stats: dict[str, float] = {"sandbox_seconds": 0.0, "jobs": 0.0, "calls": 0.0}

    # ------------------------------------------------------------------ lifecycle
    @property
    def sandbox(self) -> Sandbox:
        """The sandbox, started on first use."""
        with self._lock:
            if self._sandbox is None:
                from codea1_env.sandbox.factory import make_sandbox

                self._sandbox = make_sandbox("local")
            return self._sandbox

    def close(self) -> None:
        """Stop the sandbox if this referee started it. Idempotent."""
        with self._lock:
            if self._owns_sandbox and self._sandbox is not None:
                self._sandbox.close()
                self._sandbox = None

    def __enter__(self) -> Referee:
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
        batch: Sequence[tuple[Problem, Sequence[str], Sequence[Sequence[str]]]],
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
        plans = [self._plan(problem, codes, suites) for problem, codes, suites in batch]
        for plan, item_limits in zip(plans, candidate_limits or ()):
            plan.limits = item_limits
        inputs_seconds = self._materialize(plans)
        jobs: list[Job] = []
        gt_slots: list[tuple[str, list[str], int]] = []  # (program, keys, job index)
        gt_seen: set[tuple[str, str]] = set()
        for plan in plans:
            self._add_gt_jobs(plan, jobs, gt_slots, gt_seen)
            self._add_candidate_jobs(plan, jobs)
            if self.reward_config.mutation_bonus:
                self._add_mutant_jobs(plan, jobs)
        started = time.perf_counter()
        results = self.sandbox.run(jobs) if jobs else []
        elapsed = time.perf_counter() - started + inputs_seconds
        with self._lock:
            self.stats["sandbox_seconds"] += elapsed
            self.stats["jobs"] += len(jobs)
            self.stats["calls"] += sum(job.n_calls for job in jobs)
            batch_gt: dict[tuple[str, str], CallResult] = {}
            for program, keys, index in gt_slots:
                digest = _digest(program)
                for key, call in zip(keys, results[index].calls):
                    batch_gt[(digest, key)] = call
                    self._cache_put((digest, key), call)
        judgements = [self._score(plan, results, batch_gt) for plan in plans]
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
        for plan, judgement in zip(plans, judgements):
            judgement.metrics["sandbox/seconds"] = per_problem
            if books:
                self._update_book(plan, judgement)
        evicted = refreshed = 0
        if books:
            self._batches += 1
            evicted = self._bound_book()
            every = self.stability.book_refresh_every
            if every and self._batches % every == 0:
                refreshed = self.refresh_book([plan.problem for plan in plans])
        total = float(self.mistake_book.size())
        for plan, judgement in zip(plans, judgements):
            judgement.metrics["mistake_book/size"] = float(
                self.mistake_book.size(plan.problem.task_id)
            )
            judgement.metrics["mistake_book/total_size"] = total
            judgement.metrics["mistake_book/evicted"] = float(evicted)
            judgement.metrics["mistake_book/refresh_dropped"] = float(refreshed)
        return judgements

    def refresh_book(self, problems: Sequence[Problem]) -> int:
        """Re-run the stored tests of ``problems`` on their GT; drop those that no longer hold.

        A stored test is dropped when the GT now fails on its call or returns a different value
        (for example after a problem's GT was corrected). One sandbox call for all problems.

        Returns:
            The number of entries dropped.
        """
        work: list[tuple[Problem, list[BookEntry]]] = []
        for problem in {p.task_id: p for p in problems}.values():
            entries = self.mistake_book.entries(problem.task_id)
            if entries:
                work.append((problem, entries))
        if not work:
            return 0
        jobs = [
            _job(p.gt_program, [e.call for e in entries], p.kind == "stdio", self.limits, "refresh")
            for p, entries in work
        ]
        results = self.sandbox.run(jobs)
        dropped = 0
        for (problem, entries), result in zip(work, results):
            stdio = problem.kind == "stdio"
            stale = [
                e.call
                for e, call in zip(entries, result.calls)
                if not (call.ok and self._same(call.value, e.expected, stdio))
            ]
            if stale:
                dropped += self.mistake_book.remove(problem.task_id, stale)
        return dropped

    def _bound_book(self) -> int:
        per_problem = self.stability.book_capacity_per_problem
        total = self.stability.book_capacity_total
        if per_problem is None and total is None:
            return 0
        return self.mistake_book.evict(per_problem=per_problem, total=total)

    def gt_pass_rates(self, problem: Problem, codes: Sequence[str]) -> list[float]:
        """Pass rate of each code on the problem's GT tests (no tester, no mistake book)."""
        return list(
            self.judge(problem, codes, [[] for _ in codes], update_book=False).gt_pass_rates
        )

    # ------------------------------------------------------------------ planning
    def _plan(
        self, problem: Problem, codes: Sequence[str], suites: Sequence[Sequence[str]]
    ) -> _Plan:
        if len(suites) != len(codes):
            raise ValueError(
                f"judge: {len(codes)} codes but {len(suites)} suite lists (one list per code)"
            )
        k = self.reward_config.k
        stdio = problem.kind == "stdio"
        checked = [_program_of(text) for text in codes]
        programs = [program for program, _ in checked]
        errors = [error for _, error in checked]
        parsed = [[self._parse(text, problem, k) for text in row] for row in suites]
        if self.stability.quality_filter and problem.kind == "function":
            for row in parsed:
                for suite in row:
                    self._filter_trivial(suite, problem)
        book = [] if self.reward_config.mode == "golden" else self.mistake_book.top(problem.task_id)
        if stdio:
            gt_cases: list[TestCase | IOPair] = list(problem.io_pairs)
        else:
            gt_cases = list(_gt_tests(problem.entry_point, tuple(problem.tests)))
        return _Plan(problem, programs, errors, parsed, book, gt_cases)

    def _filter_trivial(self, suite: _Parsed, problem: Problem) -> None:
        kept: list[TestCase | IOPair] = []
        for case in suite.cases:
            assert isinstance(case, TestCase)
            reason = trivial_reason(case, problem.entry_point, problem.prompt)
            if not reason and self.history.always_passes(
                problem.task_id, case.call, self.stability.always_pass_after
            ):
                reason = "always_passes"
            if reason:
                suite.discarded.append((case.line, f"trivial:{reason}", case.source[:200]))
            else:
                kept.append(case)
        suite.cases = kept

    def _parse(self, text: str, problem: Problem, k: int) -> _Parsed:
        """Parse one suite; results are cached per (kind, entry point, text) (parsing is pure).

        A batch often holds the same text several times (the evaluator judges every suite
        against every candidate and mutant), and the GT tests of a problem come back each step.
        """
        if not isinstance(text, str):
            return _Parsed("", [], [], "not_text")
        key = (problem.kind, problem.entry_point, text)
        with self._lock:
            hit = self._parse_cache.get(key)
            if hit is not None:
                self._parse_cache.move_to_end(key)
        if hit is None:
            max_cases = _MAX_CASES_FACTOR * k
            if problem.kind == "stdio":
                io = parse_io_pairs(text, max_cases=max_cases)
                hit = (
                    io.pairs,
                    tuple((r.line, r.reason, r.source) for r in io.rejected),
                    io.reason,
                )
            else:
                tests = parse_tests(
                    text, problem.entry_point, max_cases=max_cases, inline=self.reward_config.inline
                )
                hit = (
                    tests.cases,
                    tuple((r.line, r.reason, r.source) for r in tests.rejected),
                    tests.reason,
                )
            with self._lock:
                self._parse_cache[key] = hit
                while len(self._parse_cache) > _PARSE_CACHE_SIZE:
                    self._parse_cache.popitem(last=False)
        cases, rejected, reason = hit
        return _Parsed(text, list(cases), list(rejected), reason)

    def _materialize(self, plans: Sequence[_Plan]) -> float:
        """Turn every generated call into a call on literal arguments (see :mod:`.arguments`).

        Non-literal arguments and expectations are evaluated in one sandbox call with no program
        loaded; calls whose arguments fail or are not plain data are discarded as invalid
        (``bad_arguments``). Returns the seconds spent in the sandbox.
        """
        expressions: dict[str, None] = {}
        arg_exprs: dict[str, str | None] = {}
        for plan in plans:
            for row in plan.suites:
                for suite in row:
                    for case in suite.cases:
                        if not isinstance(case, TestCase):
                            continue
                        expr = arg_exprs.setdefault(case.call, arguments_expression(case.call))
                        if expr is not None:
                            expressions[expr] = None
                        if literal_value(case.expected) is MISSING:
                            expressions[case.expected] = None
        if not expressions:
            return 0.0
        keys = list(expressions)
        jobs = [
            _job("", keys[i : i + _CALLS_PER_JOB], False, self.limits, "inputs")
            for i in range(0, len(keys), _CALLS_PER_JOB)
        ]
        started = time.perf_counter()
        results = self.sandbox.run(jobs)
        elapsed = time.perf_counter() - started
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
                                    (case.line, f"bad_arguments: {reason[:120]}", case.source[:200])
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
        return elapsed

    def _add_gt_jobs(
        self,
        plan: _Plan,
        jobs: list[Job],
        gt_slots: list[tuple[str, list[str], int]],
        seen: set[tuple[str, str]],
    ) -> None:
        program = plan.problem.gt_program
        digest = _digest(program)
        needed: list[str] = []
        for case in _all_cases(plan):
            key = _call_key(case)
            if (digest, key) in seen:
                continue
            seen.add((digest, key))
            if self._cache_get((digest, key)) is None:
                needed.append(key)
        stdio = plan.problem.kind == "stdio"
        for start in range(0, len(needed), _CALLS_PER_JOB):
            keys = needed[start : start + _CALLS_PER_JOB]
            gt_slots.append((program, keys, len(jobs)))
            job = _job(program, keys, stdio, self.limits, f"gt:{plan.problem.task_id}")
            if self.reward_config.coverage_bonus and not stdio:
                job = dataclasses.replace(job, coverage=True)
            jobs.append(job)

    def _add_mutant_jobs(self, plan: _Plan, jobs: list[Job]) -> None:
        """The optional mutation-kill bonus: the GT's mutants on every call of the suites."""
        if plan.problem.kind != "function":
            return
        calls = list(
            dict.fromkeys(_call_key(c) for row in plan.suites for s in row for c in s.cases)
        )
        if not calls:
            return
        if self._mutants is None:
            from codea1_env.scoring.mutation import MutantCache

            self._mutants = MutantCache()
        mutants = self._mutants.get(plan.problem.gt_program, max_mutants=BONUS_MUTANTS)
        plan.mutant_calls = calls
        digest = _digest(plan.problem.gt_program)
        cached = [self._cache_get((digest, call)) for call in calls]
        low, high = BONUS_MUTANT_TIMEOUT_S
        timeout = high
        if all(result is not None for result in cached):
            slowest = max(result.duration_s for result in cached if result is not None)
            timeout = min(high, max(low, 20.0 * slowest))
        limits = dataclasses.replace(
            self.limits, call_timeout_s=min(timeout, self.limits.call_timeout_s)
        )
        for index, mutant in enumerate(mutants):
            plan.mutant_jobs.append(len(jobs))
            tag = f"mutant:{plan.problem.task_id}:{index}"
            jobs.append(_job(mutant.source, calls, False, limits, tag))

    def _add_candidate_jobs(self, plan: _Plan, jobs: list[Job]) -> None:
        """One job per distinct program of the item: rows with the same program share it.

        Each row (a code sample) still gets its own verdicts and its own book updates; the job
        runs the union of the rows' calls.
        """
        stdio = plan.problem.kind == "stdio"
        by_program: dict[str, dict[str, None]] = {}
        for index, program in enumerate(plan.programs):
            if program is None:
                continue
            calls = by_program.setdefault(program, {})
            for suite in plan.suites[index]:
                for case in suite.cases:
                    calls[_call_key(case)] = None
        shared: dict[str, tuple[list[str], int]] = {}
        for program, calls in by_program.items():
            for entry in plan.book:
                calls[entry.call] = None
            for case in plan.gt_cases:
                calls[_call_key(case)] = None
            ordered = list(calls)
            if not ordered:
                shared[program] = (ordered, -1)
                continue
            tag = f"code:{plan.problem.task_id}:{len(shared)}"
            shared[program] = (ordered, len(jobs))
            jobs.append(_job(program, ordered, stdio, plan.limits or self.limits, tag))
        for program in plan.programs:
            ordered, job = shared[program] if program is not None else ([], -1)
            plan.cand_calls.append(ordered)
            plan.cand_jobs.append(job)

    # ------------------------------------------------------------------ scoring
    def _score(
        self,
        plan: _Plan,
        results: list[JobResult],
        batch_gt: dict[tuple[str, str], CallResult],
    ) -> Judgement:
        digest = _digest(plan.problem.gt_program)
        config = self.reward_config
        stdio = plan.problem.kind == "stdio"

        def gt(key: str | None) -> CallResult | None:
            if key is None:
                return None
            found = batch_gt.get((digest, key))
            return found if found is not None else self._cache_get((digest, key))

        coder_details: list[CoderReward] = []
        tester_details: list[tuple[TesterReward, ...]] = []
        suite_rows: list[tuple[SuiteVerdict, ...]] = []
        book_rows: list[tuple[TestVerdict, ...]] = []
        compiled: list[bool] = []
        errors: list[str] = []
        gt_rates: list[float] = []
        gt_rows: list[tuple[TestVerdict, ...]] = []
        for index, program in enumerate(plan.programs):
            job_index = plan.cand_jobs[index]
            outcome: dict[str, CallResult] = {}
            ran = program is not None
            error = "" if program is not None else plan.program_errors[index]
            if job_index >= 0:
                result = results[job_index]
                ran = result.compiled
                error = "" if ran else f"{result.setup_status.value}: {result.setup_error}"
                outcome = dict(zip(plan.cand_calls[index], result.calls))
            compiled.append(ran)
            errors.append(error)

            def passed(key: str, expected: Any, outcome: dict[str, CallResult] = outcome) -> bool:
                call = outcome.get(key)
                return bool(
                    call is not None and call.ok and self._same(call.value, expected, stdio)
                )

            # GT tests: those whose call the GT runs; the GT's value is the expectation
            gt_verdicts: list[TestVerdict] = []
            for case in plan.gt_cases:
                reference = gt(_call_key(case))
                if reference is None or not reference.ok:
                    continue
                gt_verdicts.append(
                    _verdict(_call_key(case), reference.value, True, outcome, passed, "gt", stdio)
                )
            gt_rows.append(tuple(gt_verdicts))
            gt_rate = sum(v.passed for v in gt_verdicts) / len(gt_verdicts) if gt_verdicts else 0.0
            gt_rates.append(gt_rate)
            # mistake book
            book_verdicts = tuple(
                _verdict(entry.call, entry.expected, True, outcome, passed, "mistake_book", stdio)
                for entry in plan.book
            )
            book_rows.append(book_verdicts)
            mb_total = len(book_verdicts) if ran else 0
            mb_fail = sum(not v.passed for v in book_verdicts)
            mb_rate = (1.0 - mb_fail / mb_total) if mb_total else None
            # generated suites
            row: list[SuiteVerdict] = []
            gen_rates: list[float | None] = []
            for suite in plan.suites[index]:
                grading, verdicts = self._grade(suite, gt, outcome, passed, stdio, plan)
                # rule 4: the pass rate over every kept test, the fail rate over the first K
                gen_rate = sum(v.passed for v in verdicts) / len(verdicts) if verdicts else None
                gen_rates.append(gen_rate)
                gen_failures = sum(not v.passed for v in verdicts[: config.k])
                n_invalid = (grading.n_invalid if grading else 0) + len(suite.discarded)
                first_k = [_call_key(t.case) for t in grading.tests[: config.k]] if grading else []
                coverage = (
                    self._coverage_bonus(plan.problem.gt_program, first_k, gt)
                    if config.coverage_bonus and not stdio
                    else None
                )
                killed = (
                    self._mutation_bonus(plan, first_k, gt, results)
                    if config.mutation_bonus and not stdio
                    else None
                )
                tester = tester_reward(
                    coverage=coverage,
                    mutation=killed,
                    n_kept=grading.n_kept if grading else 0,
                    n_invalid=n_invalid,
                    gen_failures=gen_failures,
                    mb_failures=mb_fail if mb_total else None,
                    mb_total=mb_total or None,
                    candidate_ran=ran,
                    text=suite.text,
                    config=config,
                )
                pair = (
                    score_coder([gen_rate], mb_rate, config=_code_a1(config)).total if ran else 0.0
                )
                if ran and grading is not None and self.stability.quality_filter:
                    for test, verdict in zip(grading.tests, verdicts):
                        if verdict.valid:
                            self.history.record(
                                plan.problem.task_id,
                                _call_key(test.case),
                                program or "",
                                verdict.passed,
                            )
                dropped = tuple(
                    (_case_line(t.case), t.status, _case_text(t.case))
                    for t in (grading.graded if grading else ())
                    if not t.kept
                )
                row.append(
                    SuiteVerdict(
                        grading=grading,
                        verdicts=verdicts,
                        rejected=tuple(suite.rejected) + tuple(suite.discarded) + dropped,
                        parse_reason=suite.reason,
                        coder_pair_reward=pair,
                        tester=tester,
                        n_invalid=n_invalid,
                    )
                )
            suite_rows.append(tuple(row))
            tester_details.append(tuple(v.tester for v in row))
            if not ran:
                coder_details.append(CoderReward(0.0, gen_mean(gen_rates), mb_rate, "did_not_run"))
            else:
                coder_details.append(
                    score_coder(gen_rates, mb_rate, gt_pass_rate=gt_rate, config=config)
                )
        judgement = Judgement(
            coder_rewards=tuple(c.total for c in coder_details),
            tester_rewards=tuple(tuple(t.total for t in row) for row in tester_details),
            gt_pass_rates=tuple(gt_rates),
            coder_details=tuple(coder_details),
            tester_details=tuple(tester_details),
            suites=tuple(suite_rows),
            mistake_book=tuple(book_rows),
            gt_tests=tuple(gt_rows),
            compiled=tuple(compiled),
            code_errors=tuple(errors),
        )
        judgement.metrics.update(_metrics(judgement))
        judgement.metrics["quality/trivial_tests"] = float(
            sum(len(suite.discarded) for row in plan.suites for suite in row)
        )
        judgement.metrics["coder/syntax_errors"] = float(
            sum(error.startswith("syntax_error") for error in plan.program_errors)
        )
        return judgement

    def _grade(
        self,
        suite: _Parsed,
        gt: Any,
        outcome: dict[str, CallResult],
        passed: Any,
        stdio: bool,
        plan: _Plan,
    ) -> tuple[SuiteGrading | None, tuple[TestVerdict, ...]]:
        if not suite.cases:
            return None, ()
        gt_ok: list[bool] = []
        gt_values: list[Any] = []
        exp_ok: list[bool] = []
        exp_values: list[Any] = []
        for case in suite.cases:
            reference = gt(_call_key(case))
            gt_ok.append(bool(reference is not None and reference.ok))
            gt_values.append(_norm(reference.value, stdio) if reference and reference.ok else None)
            ok, value = _expected(case, plan.expected_values)
            exp_ok.append(ok)
            exp_values.append(value)
        grading = grade_suite(suite.cases, gt_ok, gt_values, exp_ok, exp_values, equal=self._equal)
        claims = {id(case): (ok, value) for case, ok, value in zip(suite.cases, exp_ok, exp_values)}
        verdicts = []
        for t in grading.tests:
            key = _call_key(t.case)
            verdict = _verdict(
                key, t.gt_value, t.status == "valid", outcome, passed, "generated", stdio
            )
            claimed_ok, claimed = claims[id(t.case)]
            agrees = verdict.passed if verdict.valid else bool(claimed_ok and passed(key, claimed))
            verdicts.append(dataclasses.replace(verdict, agrees_with_tester=agrees))
        return grading, tuple(verdicts)

    # ------------------------------------------------------------------ optional bonuses
    def _coverage_bonus(self, gt_program: str, calls: Sequence[str], gt: Any) -> float:
        """LCov@K of the GT by ``calls`` (the first K kept tests), from its traced GT runs."""
        from codea1_env.evaluation.coverage import coverage_at_k

        model = _program_model(gt_program)
        if model is None or not calls:
            return 0.0
        runs = [getattr(gt(call), "coverage", None) for call in calls]
        figures = coverage_at_k(model, runs, len(calls))
        return float(figures.lcov or 0.0)

    def _mutation_bonus(
        self, plan: _Plan, calls: Sequence[str], gt: Any, results: Sequence[JobResult]
    ) -> float:
        """Share of the GT's mutants (those whose program ran) killed by the first K kept tests.

        Each mutant is credited to the first of ``calls`` (in the suite's order) on which its
        value differs from the GT's or its call fails.
        """
        ran = [results[i] for i in plan.mutant_jobs if results[i].compiled]
        if not ran:
            return 0.0
        position = {call: i for i, call in enumerate(plan.mutant_calls)}
        killed = 0
        for result in ran:
            for call in calls:
                reference = gt(call)
                outcome = result.calls[position[call]] if call in position else None
                if reference is None or not reference.ok or outcome is None:
                    continue
                if not (outcome.ok and self._equal(outcome.value, reference.value)):
                    killed += 1
                    break
        return killed / len(ran)

    # ------------------------------------------------------------------ mistake book
    def _update_book(self, plan: _Plan, judgement: Judgement) -> None:
        """Rule 8, over this problem's valid codes: -1 per replayed pass, then +1 per kept fail."""
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
                        failed.append((_call_key(test.case), test.gt_value))
            for entry, verdict in zip(plan.book, judgement.mistake_book[index]):
                if verdict.passed:
                    passed.append(entry.call)
        if failed or passed:
            self.mistake_book.apply(plan.problem.task_id, failed, passed)

    def _same(self, value: Any, expected: Any, stdio: bool) -> bool:
        return self._equal(_norm(value, stdio), _norm(expected, stdio))

    # ------------------------------------------------------------------ GT cache
    def _cache_get(self, key: tuple[str, str]) -> CallResult | None:
        with self._lock:
            value = self._gt_cache.get(key)
            if value is not None:
                self._gt_cache.move_to_end(key)
            return value

    def _cache_put(self, key: tuple[str, str], value: CallResult) -> None:
        """Cache a deterministic GT outcome (a timeout or crash may be load: not cached)."""
        if value.status in (CallStatus.TIMEOUT, CallStatus.NOT_RUN, CallStatus.CRASH):
            return
        self._gt_cache[key] = value
        self._gt_cache.move_to_end(key)
        while len(self._gt_cache) > _GT_CACHE_SIZE:
            self._gt_cache.popitem(last=False)


@functools.lru_cache(maxsize=1024)
def _program_model(program: str) -> Any:
    """The static coverage model of a GT program (None when it cannot be analysed)."""
    from codea1_env.evaluation.coverage import analyze_program

    try:
        return analyze_program(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError, tokenize.TokenError):
        return None


@functools.lru_cache(maxsize=4096)
def _gt_tests(entry_point: str, tests: tuple[str, ...]) -> tuple[TestCase, ...]:
    """A problem's GT tests as cases (parsed once per process; the parse is pure)."""
    return parse_tests("\n".join(tests), entry_point, inline="anywhere").cases


def _digest(program: str) -> str:
    return hashlib.sha256(program.encode("utf-8", "surrogatepass")).hexdigest()


def _program_of(text: Any) -> tuple[str | None, str]:
    """The program in a coder's answer, or None with the reason it cannot run."""
    if not isinstance(text, str):
        return None, "not_text"
    code = extract_code(text)
    if not code.strip():
        return None, "no_code"
    try:
        ast.parse(code)
    except SyntaxError as exc:
        return None, f"syntax_error: line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return None, f"syntax_error: {type(exc).__name__}"
    return code, ""


def _call_key(case: TestCase | IOPair) -> str:
    return case.input if isinstance(case, IOPair) else case.call


def _expected(case: TestCase | IOPair, evaluated: dict[str, tuple[bool, Any]]) -> tuple[bool, Any]:
    """Whether the tester's expectation evaluated to a plain value, and that value."""
    if isinstance(case, IOPair):
        return True, _norm(case.output, True)
    literal = literal_value(case.expected)
    if literal is not MISSING:
        return True, literal
    return evaluated.get(case.expected, (False, None))


def _all_cases(plan: _Plan) -> Iterable[TestCase | IOPair]:
    for row in plan.suites:
        for suite in row:
            yield from suite.cases
    yield from plan.gt_cases


def _job(program: str, keys: list[str], stdio: bool, limits: Limits, tag: str) -> Job:
    if stdio:
        return Job(program=program, stdin_inputs=tuple(keys), limits=limits, tag=tag)
    return Job(program=program, calls=tuple(keys), limits=limits, tag=tag)


def _norm(value: Any, stdio: bool) -> Any:
    if stdio and isinstance(value, str):
        return "\n".join(line.rstrip() for line in value.strip().splitlines())
    return value


def _verdict(
    key: str,
    expected: Any,
    valid: bool,
    outcome: dict[str, CallResult],
    passed: Any,
    source: str,
    stdio: bool,
) -> TestVerdict:
    call = outcome.get(key)
    ok = bool(passed(key, expected))
    shown = f"stdin={key!r}" if stdio else f"assert {key} == {plain.to_source(expected)}"
    status = call.status.value if call is not None else CallStatus.NOT_RUN.value
    error = call.error[:300] if call is not None else "candidate did not run"
    duration = call.duration_s if call is not None else 0.0
    return TestVerdict(
        shown[:500], valid, ok, status, "" if ok else error, source, duration_s=duration
    )


def _case_line(case: TestCase | IOPair) -> int:
    return case.line if isinstance(case, TestCase) else 0


def _case_text(case: TestCase | IOPair) -> str:
    return (case.source if isinstance(case, TestCase) else case.input)[:200]


def gen_mean(rates: Sequence[float | None]) -> float | None:
    """Mean of the suites' pass rates that exist (None when no suite kept a test)."""
    rated = [rate for rate in rates if rate is not None]
    return sum(rated) / len(rated) if rated else None


def _code_a1(config: RewardConfig) -> RewardConfig:
    if config.mode != "golden":
        return config
    return RewardConfig(alpha=config.alpha, k=config.k, mode="code-a1")


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _metrics(j: Judgement) -> dict[str, float]:
    testers = [t for row in j.tester_details for t in row]
    suites = [s for row in j.suites for s in row]
    graded = [s.grading for s in suites if s.grading is not None]
    considered = sum(len(g.graded) for g in graded)
    kept_valid = [v for s in suites for v in s.verdicts if v.valid]
    return {
        "coder/reward": _mean(j.coder_rewards),
        "coder/gt_pass_rate": _mean(j.gt_pass_rates),
        "coder/compile_rate": _mean([float(c) for c in j.compiled]),
        "tester/reward": _mean([t.total for t in testers]),
        "tester/validity": _mean([t.r_val for t in testers]),
        "tester/adversarial": _mean([t.r_adv for t in testers]),
        "tester/coverage": _mean([t.coverage for t in testers]),
        "tester/mutation_kill": _mean([t.mutation for t in testers]),
        "tester/valid_share": (sum(g.n_valid for g in graded) / considered) if considered else 0.0,
        "tester/tests_per_suite": _mean([float(len(s.verdicts)) for s in suites]),
        "tester/valid_failure_rate": (
            sum(not v.passed for v in kept_valid) / len(kept_valid) if kept_valid else 0.0
        ),
        "tester/empty_suites": float(sum(1 for s in suites if s.grading is None)),
    }
