"""Planning a judgement: parsed inputs, the sandbox batch, and the GT cache behind it.

Steps 1-2 of the referee (see :mod:`codea1_env.scoring.referee`): each coder's program is
extracted and each tester's text parsed into test cases (:class:`SuiteParser`, cached per text),
optionally filtered for trivial tests; the replayed mistake-book tests and the problem's GT tests
are added (:func:`plan_problem`). Then the jobs of one sandbox batch are laid out: the GT on
every call it has not run yet (:class:`GtCache` remembers its outcomes per referee), each distinct
candidate program on the union of its rows' calls, and, for the optional mutation-kill bonus,
the GT's mutants on the suites' calls.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import hashlib
import itertools
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from codea1_env.mistake_book import BookEntry, MistakeBook
from codea1_env.problems.problem import IOPair, Problem
from codea1_env.problems.pysource import quiet_parse
from codea1_env.sandbox.base import CallResult, CallStatus, Job, Limits
from codea1_env.scoring.candidate_context import authors_program
from codea1_env.scoring.quality import PassHistory, trivial_reason
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.scoring.testcases import TestCase, extract_code, parse_io_pairs, parse_tests
from codea1_env.stability import StabilityOptions

__all__ = [
    "BONUS_MUTANTS",
    "BONUS_MUTANT_TIMEOUT_S",
    "CALLS_PER_JOB",
    "GtCache",
    "ParsedSuite",
    "Plan",
    "SuiteParser",
    "add_candidate_jobs",
    "add_gt_jobs",
    "add_mutant_jobs",
    "all_cases",
    "call_key",
    "digest",
    "make_job",
    "normalize",
    "plan_problem",
    "program_of",
]

_GT_CACHE_SIZE = 200_000
_PARSE_CACHE_SIZE = 4096

BONUS_MUTANTS = 8
"""Most mutants of a GT the optional mutation-kill bonus runs (cached per problem)."""

BONUS_MUTANT_TIMEOUT_S = (0.05, 0.25)
"""A bonus mutant's call timeout: 20x the GT's slowest cached call on the same inputs, within
these bounds (the upper one when the GT's times are not cached yet); a mutant that loops
counts as killed on that call without holding a worker for the full call timeout."""
CALLS_PER_JOB = 128
"""Most calls of one GT or inputs job (larger sets are cut into several jobs)."""
_MAX_CASES_FACTOR = 8
"""At most ``8 * K`` asserts of a suite are read (64 for K = 8); later ones are ignored."""


@dataclass
class ParsedSuite:
    """Parsed tests of one suite, plus the raw text for the penalty."""

    text: str
    cases: list[TestCase | IOPair]
    rejected: list[tuple[int, str, str]]
    reason: str
    discarded: list[tuple[int, str, str]] = field(default_factory=list)
    """Tests removed before grading (trivial, or arguments that do not evaluate): invalid."""


@dataclass
class Plan:
    """One problem's work: parsed inputs and where each needed result will come from."""

    problem: Problem
    programs: list[str | None]
    program_errors: list[str]
    suites: list[list[ParsedSuite]]
    book: list[BookEntry]
    gt_cases: list[TestCase | IOPair]
    # expected-expression source -> (evaluated?, plain value), for non-literal expectations
    expected_values: dict[str, tuple[bool, Any]] = field(default_factory=dict)
    # per candidate: the ordered distinct calls and their job index in the batch
    cand_calls: list[list[str]] = field(default_factory=list)
    cand_jobs: list[int] = field(default_factory=list)
    # limits of this problem's candidate jobs (the referee's when None)
    limits: Limits | None = None
    # the optional mutation-kill bonus: the calls the GT's mutants ran, and their jobs
    mutant_calls: list[str] = field(default_factory=list)
    mutant_jobs: list[int] = field(default_factory=list)
    # run each candidate in the authors' context (RewardConfig.candidate_context)
    authors_context: bool = False


class GtCache:
    """The GT's call outcomes per ``(GT program digest, call)``, least recently used out first.

    Only deterministic outcomes are kept: a timeout, a crash or a call that did not run may be
    load, and is run again next time. Thread-safe.
    """

    def __init__(self, size: int = _GT_CACHE_SIZE) -> None:
        self._entries: OrderedDict[tuple[str, str], CallResult] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> CallResult | None:
        """The cached outcome of ``key``, or None."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: tuple[str, str], value: CallResult) -> None:
        """Cache a deterministic GT outcome (a timeout or crash may be load: not cached)."""
        if value.status in (CallStatus.TIMEOUT, CallStatus.NOT_RUN, CallStatus.CRASH):
            return
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


class SuiteParser:
    """Parses suites; results are cached per (kind, entry point, text) (parsing is pure).

    A batch often holds the same text several times (the evaluator judges every suite against
    every candidate and mutant), and the GT tests of a problem come back each step. Thread-safe.
    """

    def __init__(self, size: int = _PARSE_CACHE_SIZE) -> None:
        self._cache: OrderedDict[
            tuple[str, str, str], tuple[tuple[Any, ...], tuple[tuple[int, str, str], ...], str]
        ] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def parse(self, text: str, problem: Problem, k: int, inline: Any) -> ParsedSuite:
        """Parse one suite of ``problem`` (at most ``8 * k`` asserts; ``inline`` as the config)."""
        if not isinstance(text, str):
            return ParsedSuite("", [], [], "not_text")
        key = (problem.kind, problem.entry_point, text)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
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
                tests = parse_tests(text, problem.entry_point, max_cases=max_cases, inline=inline)
                hit = (
                    tests.cases,
                    tuple((r.line, r.reason, r.source) for r in tests.rejected),
                    tests.reason,
                )
            with self._lock:
                self._cache[key] = hit
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        cases, rejected, reason = hit
        return ParsedSuite(text, list(cases), list(rejected), reason)


def plan_problem(
    problem: Problem,
    codes: Sequence[str],
    suites: Sequence[Sequence[str]],
    *,
    parser: SuiteParser,
    config: RewardConfig,
    stability: StabilityOptions,
    history: PassHistory,
    mistake_book: MistakeBook,
) -> Plan:
    """Steps 1-2 for one problem: programs, parsed (and filtered) suites, book and GT tests."""
    if len(suites) != len(codes):
        raise ValueError(
            f"judge: {len(codes)} codes but {len(suites)} suite lists (one list per code)"
        )
    k = config.k
    stdio = problem.kind == "stdio"
    checked = [program_of(text) for text in codes]
    programs = [program for program, _ in checked]
    errors = [error for _, error in checked]
    parsed = [[parser.parse(text, problem, k, config.inline) for text in row] for row in suites]
    if stability.quality_filter and problem.kind == "function":
        for row in parsed:
            for suite in row:
                _filter_trivial(suite, problem, history, stability.always_pass_after)
    book = [] if config.mode == "golden" else mistake_book.top(problem.task_id)
    if stdio:
        gt_cases: list[TestCase | IOPair] = list(problem.io_pairs)
    else:
        gt_cases = list(_gt_tests(problem.task_id, problem.entry_point, tuple(problem.tests)))
    authors = config.candidate_context == "authors" and not stdio
    return Plan(problem, programs, errors, parsed, book, gt_cases, authors_context=authors)


def _filter_trivial(
    suite: ParsedSuite, problem: Problem, history: PassHistory, always_pass_after: Any
) -> None:
    kept: list[TestCase | IOPair] = []
    for case in suite.cases:
        assert isinstance(case, TestCase)
        reason = trivial_reason(case, problem.entry_point, problem.prompt)
        if not reason and history.always_passes(problem.task_id, case.call, always_pass_after):
            reason = "always_passes"
        if reason:
            suite.discarded.append((case.line, f"trivial:{reason}", case.source[:200]))
        else:
            kept.append(case)
    suite.cases = kept


def add_gt_jobs(
    plan: Plan,
    jobs: list[Job],
    gt_slots: list[tuple[str, list[str], int]],
    seen: set[tuple[str, str]],
    *,
    cache: GtCache,
    limits: Limits,
    coverage: bool,
) -> None:
    """The GT on every call of the plan that neither the batch nor ``cache`` has yet.

    Appends to ``jobs`` and records ``(GT program, calls, job index)`` in ``gt_slots``; ``seen``
    holds the batch's ``(digest, call)`` keys so far. ``coverage`` traces the GT's runs.
    """
    program = plan.problem.gt_program
    key_digest = digest(program)
    needed: list[str] = []
    for case in all_cases(plan):
        key = call_key(case)
        if (key_digest, key) in seen:
            continue
        seen.add((key_digest, key))
        if cache.get((key_digest, key)) is None:
            needed.append(key)
    stdio = plan.problem.kind == "stdio"
    for start in range(0, len(needed), CALLS_PER_JOB):
        keys = needed[start : start + CALLS_PER_JOB]
        gt_slots.append((program, keys, len(jobs)))
        job = make_job(program, keys, stdio, limits, f"gt:{plan.problem.task_id}")
        if coverage and not stdio:
            job = dataclasses.replace(job, coverage=True)
        jobs.append(job)


def add_mutant_jobs(
    plan: Plan,
    jobs: list[Job],
    *,
    mutants: Callable[[], Any],
    cache: GtCache,
    limits: Limits,
) -> None:
    """The optional mutation-kill bonus: the GT's mutants on every call of the suites.

    ``mutants`` returns the referee's :class:`~codea1_env.scoring.mutation.MutantCache` (made
    on first use).
    """
    if plan.problem.kind != "function":
        return
    calls = list(dict.fromkeys(call_key(c) for row in plan.suites for s in row for c in s.cases))
    if not calls:
        return
    found = mutants().get(plan.problem.gt_program, max_mutants=BONUS_MUTANTS)
    plan.mutant_calls = calls
    key_digest = digest(plan.problem.gt_program)
    cached = [cache.get((key_digest, call)) for call in calls]
    low, high = BONUS_MUTANT_TIMEOUT_S
    timeout = high
    if all(result is not None for result in cached):
        slowest = max(result.duration_s for result in cached if result is not None)
        timeout = min(high, max(low, 20.0 * slowest))
    mutant_limits = limits.with_call_budget(min(timeout, limits.call_timeout_s))
    for index, mutant in enumerate(found):
        plan.mutant_jobs.append(len(jobs))
        tag = f"mutant:{plan.problem.task_id}:{index}"
        jobs.append(make_job(mutant.source, calls, False, mutant_limits, tag))


def add_candidate_jobs(plan: Plan, jobs: list[Job], limits: Limits) -> None:
    """One job per distinct program of the item: rows with the same program share it.

    Each row (a code sample) still gets its own verdicts and its own book updates; the job
    runs the union of the rows' calls, under ``plan.limits`` or else ``limits``.
    """
    stdio = plan.problem.kind == "stdio"
    by_program: dict[str, dict[str, None]] = {}
    for index, program in enumerate(plan.programs):
        if program is None:
            continue
        calls = by_program.setdefault(program, {})
        for suite in plan.suites[index]:
            for case in suite.cases:
                calls[call_key(case)] = None
    shared: dict[str, tuple[list[str], int]] = {}
    for program, calls in by_program.items():
        for entry in plan.book:
            calls[entry.call] = None
        for case in plan.gt_cases:
            calls[call_key(case)] = None
        ordered = list(calls)
        if not ordered:
            shared[program] = (ordered, -1)
            continue
        tag = f"code:{plan.problem.task_id}:{len(shared)}"
        shared[program] = (ordered, len(jobs))
        run = authors_program(plan.problem.gt_program, program) if plan.authors_context else program
        jobs.append(make_job(run, ordered, stdio, plan.limits or limits, tag))
    for program in plan.programs:
        ordered, job = shared[program] if program is not None else ([], -1)
        plan.cand_calls.append(ordered)
        plan.cand_jobs.append(job)


@functools.lru_cache(maxsize=4096)
def _gt_tests(task_id: str, entry_point: str, tests: tuple[str, ...]) -> tuple[TestCase, ...]:
    """A problem's GT tests as cases (parsed once per process; the parse is pure).

    Every GT test counts: none of the limits on a tester's answer (its first 8 K asserts, its
    first 20,000 characters) applies. A GT test the parser rejects (not ``assert CALL ==
    EXPECTED`` on the entry point, a statement past the size limit) cannot be scored: it is
    left out of the GT pass rate with a warning naming the problem and the test, once per
    process.
    """
    text = "\n".join(tests)
    parsed = parse_tests(
        text, entry_point, inline="anywhere", max_chars=len(text) + 1, max_cases=len(tests)
    )
    if parsed.rejected:
        firsts = list(itertools.accumulate((t.count("\n") + 1 for t in tests), initial=1))
        shown = [
            f"tests[{bisect.bisect_right(firsts, item.line) - 1}] ({item.reason})"
            for item in parsed.rejected[:3]
        ]
        more = f" and {len(parsed.rejected) - 3} more" if len(parsed.rejected) > 3 else ""
        warnings.warn(
            f"problem {task_id!r}: {len(parsed.rejected)} of its {len(tests)} GT tests cannot "
            f"be scored and are left out of the GT pass rate: {', '.join(shown)}{more}",
            stacklevel=2,
        )
    return parsed.cases


def clear_caches() -> None:
    """Forget the problems' parsed GT tests.

    See :func:`codea1_env.scoring.referee.clear_text_caches`.
    """
    _gt_tests.cache_clear()


def digest(program: str) -> str:
    """The GT cache's key for a program: its SHA-256."""
    return hashlib.sha256(program.encode("utf-8", "surrogatepass")).hexdigest()


def program_of(text: Any) -> tuple[str | None, str]:
    """The program in a coder's answer, or None with the reason it cannot run."""
    if not isinstance(text, str):
        return None, "not_text"
    code = extract_code(text)
    if not code.strip():
        return None, "no_code"
    try:
        quiet_parse(code)  # the same answer under any warning filter (see quiet_parse)
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno is not None else ""  # NUL bytes: no line
        return None, f"syntax_error: {where}{exc.msg}"
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return None, f"syntax_error: {type(exc).__name__}"
    return code, ""


def call_key(case: TestCase | IOPair) -> str:
    """What a case runs: its call (function problems) or its stdin text (stdio problems)."""
    return case.input if isinstance(case, IOPair) else case.call


def all_cases(plan: Plan) -> Iterable[TestCase | IOPair]:
    """Every generated case of the plan's suites, then its GT cases."""
    for row in plan.suites:
        for suite in row:
            yield from suite.cases
    yield from plan.gt_cases


def make_job(program: str, keys: list[str], stdio: bool, limits: Limits, tag: str) -> Job:
    """A sandbox job running ``program`` on ``keys`` (calls, or stdin texts when ``stdio``)."""
    if stdio:
        return Job(program=program, stdin_inputs=tuple(keys), limits=limits, tag=tag)
    return Job(program=program, calls=tuple(keys), limits=limits, tag=tag)


def normalize(value: Any, stdio: bool) -> Any:
    """A value as compared: stdio outputs without trailing spaces and outer blank lines."""
    if stdio and isinstance(value, str):
        return "\n".join(line.rstrip() for line in value.strip().splitlines())
    return value
