"""Scoring one problem's plan: GT correction, the candidates' verdicts and both rewards.

Steps 3-5 of the referee (see :mod:`codea1_env.scoring.referee`), after the sandbox batch: each
suite is graded against the GT (:func:`grade`, rule 2 of
:func:`~codea1_env.scoring.testcases.grade_suite`), each candidate's values are compared with the
GT's in this trusted process with the configured equality (:func:`same`), and the pair, coder
and tester rewards come from :mod:`codea1_env.scoring.rewards` (rules 3-7), with the optional
coverage and mutation-kill bonuses (:func:`coverage_bonus`, :func:`mutation_bonus`).
"""

from __future__ import annotations

import dataclasses
import functools
import tokenize
from collections.abc import Callable, Sequence
from typing import Any

from codea1_env.problems.problem import IOPair
from codea1_env.sandbox.base import CallResult, CallStatus, JobResult
from codea1_env.sandbox.worker import plain
from codea1_env.scoring.arguments import MISSING, literal_value
from codea1_env.scoring.grading import SuiteGrading, case_key, grade_suite
from codea1_env.scoring.metrics import judgement_metrics
from codea1_env.scoring.plan import GtCache, ParsedSuite, Plan, call_key, digest, normalize
from codea1_env.scoring.quality import PassHistory
from codea1_env.scoring.rewards import (
    CoderReward,
    RewardConfig,
    TesterReward,
    score_coder,
    tester_reward,
)
from codea1_env.scoring.testcases import TestCase
from codea1_env.scoring.verdicts import Judgement, SuiteVerdict, TestVerdict
from codea1_env.stability import StabilityOptions

__all__ = ["coverage_bonus", "gen_mean", "grade", "mutation_bonus", "same", "score_plan"]


def same(value: Any, expected: Any, stdio: bool, equal: Callable[[Any, Any], bool]) -> bool:
    """Whether a candidate's value equals the expected one (stdio outputs normalized first)."""
    return equal(normalize(value, stdio), normalize(expected, stdio))


def score_plan(
    plan: Plan,
    results: list[JobResult],
    batch_gt: dict[tuple[str, str], CallResult],
    *,
    cache: GtCache,
    config: RewardConfig,
    stability: StabilityOptions,
    history: PassHistory,
    equal: Callable[[Any, Any], bool],
) -> Judgement:
    """Steps 3-5 for one problem: grade each suite, compare each candidate, score both players.

    ``batch_gt`` holds the GT outcomes of this batch, ``cache`` the earlier ones; ``history``
    records the kept tests' outcomes for the quality filter's ``always_passes`` rule.
    """
    gt_digest = digest(plan.problem.gt_program)
    stdio = plan.problem.kind == "stdio"

    def gt(key: str | None) -> CallResult | None:
        if key is None:
            return None
        found = batch_gt.get((gt_digest, key))
        return found if found is not None else cache.get((gt_digest, key))

    shown: dict[tuple[str, str], str] = {}  # (source, call) -> display text (GT values)
    normal: dict[tuple[str, str], str] = {}  # (written call, call run) -> normalized test
    shared = _ProblemScoring(
        plan, results, gt, config, stability, history, equal, stdio, shown, normal
    )
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
            return bool(call is not None and call.ok and same(call.value, expected, stdio, equal))

        # GT tests: those whose call the GT runs; the GT's value is the expectation
        gt_verdicts: list[TestVerdict] = []
        for case in plan.gt_cases:
            reference = gt(call_key(case))
            if reference is None or not reference.ok:
                continue
            gt_verdicts.append(
                _verdict(call_key(case), reference.value, True, outcome, passed, "gt", stdio, shown)
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
        code = _CodeRun(program, ran, outcome, passed, mb_fail, mb_total, mb_rate)
        for suite in plan.suites[index]:
            verdict, gen_rate = _score_suite(suite, shared, code)
            row.append(verdict)
            gen_rates.append(gen_rate)
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
    judgement.metrics.update(judgement_metrics(judgement))
    judgement.metrics["quality/trivial_tests"] = float(
        sum(len(suite.discarded) for row in plan.suites for suite in row)
    )
    judgement.metrics["coder/syntax_errors"] = float(
        sum(error.startswith("syntax_error") for error in plan.program_errors)
    )
    return judgement


@dataclasses.dataclass(frozen=True)
class _ProblemScoring:
    """What scoring every pair of one problem shares."""

    plan: Plan
    results: Sequence[JobResult]
    gt: Callable[[str | None], CallResult | None]
    config: RewardConfig
    stability: StabilityOptions
    history: PassHistory
    equal: Callable[[Any, Any], bool]
    stdio: bool
    shown: dict[tuple[str, str], str]
    normal: dict[tuple[str, str], str]


@dataclasses.dataclass(frozen=True)
class _CodeRun:
    """One candidate's run: its outcomes per call and its mistake-book counts."""

    program: str | None
    ran: bool
    outcome: dict[str, CallResult]
    passed: Callable[[str, Any], bool]
    mb_fail: int
    mb_total: int
    mb_rate: float | None


def _score_suite(
    suite: ParsedSuite, c: _ProblemScoring, code: _CodeRun
) -> tuple[SuiteVerdict, float | None]:
    """One (code, suite) pair: grading, verdicts, pair and tester rewards, and its pass rate."""
    grading, verdicts = grade(
        suite,
        c.gt,
        code.outcome,
        code.passed,
        c.stdio,
        c.plan,
        c.equal,
        shown=c.shown,
        normal=c.normal,
    )
    # rule 4: the pass rate over every kept test, the fail rate over the first K
    gen_rate = sum(v.passed for v in verdicts) / len(verdicts) if verdicts else None
    gen_failures = sum(not v.passed for v in verdicts[: c.config.k])
    n_invalid = (grading.n_invalid if grading else 0) + len(suite.discarded)
    first_k = [call_key(t.case) for t in grading.tests[: c.config.k]] if grading else []
    coverage = (
        coverage_bonus(c.plan.problem.gt_program, first_k, c.gt)
        if c.config.coverage_bonus and not c.stdio
        else None
    )
    killed = (
        mutation_bonus(c.plan, first_k, c.gt, c.results, c.equal)
        if c.config.mutation_bonus and not c.stdio
        else None
    )
    tester = tester_reward(
        coverage=coverage,
        mutation=killed,
        n_kept=grading.n_kept if grading else 0,
        n_invalid=n_invalid,
        gen_failures=gen_failures,
        mb_failures=code.mb_fail if code.mb_total else None,
        mb_total=code.mb_total or None,
        candidate_ran=code.ran,
        text=suite.text,
        config=c.config,
    )
    pair = (
        score_coder([gen_rate], code.mb_rate, config=_code_a1(c.config)).total if code.ran else 0.0
    )
    if code.ran and grading is not None and c.stability.quality_filter:
        for test, verdict in zip(grading.tests, verdicts):
            if verdict.valid:
                c.history.record(
                    c.plan.problem.task_id,
                    call_key(test.case),
                    code.program or "",
                    verdict.passed,
                    keep=c.stability.always_pass_after,
                )
    dropped = tuple(
        (_case_line(t.case), t.status, _case_text(t.case))
        for t in (grading.graded if grading else ())
        if not t.kept
    )
    suite_verdict = SuiteVerdict(
        grading=grading,
        verdicts=verdicts,
        rejected=tuple(suite.rejected) + tuple(suite.discarded) + dropped,
        parse_reason=suite.reason,
        coder_pair_reward=pair,
        tester=tester,
        n_invalid=n_invalid,
    )
    return suite_verdict, gen_rate


def grade(
    suite: ParsedSuite,
    gt: Any,
    outcome: dict[str, CallResult],
    passed: Any,
    stdio: bool,
    plan: Plan,
    equal: Callable[[Any, Any], bool],
    shown: dict[tuple[str, str], str] | None = None,
    normal: dict[tuple[str, str], str] | None = None,
) -> tuple[SuiteGrading | None, tuple[TestVerdict, ...]]:
    """One suite graded against the GT (rule 2), and its kept tests run on one candidate.

    ``shown`` memoizes the verdicts' display text per call within one problem, and ``normal``
    each case's normalized form (:func:`case_key`) per (written call, call run): the GT's
    value of a call is the same in every suite of the problem.
    """
    if not suite.cases:
        return None, ()
    gt_ok: list[bool] = []
    gt_values: list[Any] = []
    exp_ok: list[bool] = []
    exp_values: list[Any] = []
    keys: list[str | None] = []
    for case in suite.cases:
        run = call_key(case)
        reference = gt(run)
        ok = bool(reference is not None and reference.ok)
        gt_ok.append(ok)
        gt_value = normalize(reference.value, stdio) if ok and reference is not None else None
        gt_values.append(gt_value)
        key = None
        if ok and normal is not None:
            memo = (case.input if isinstance(case, IOPair) else case.key, run)
            key = normal.get(memo)
            if key is None:
                key = normal[memo] = case_key(case, gt_value)
        keys.append(key)
        ok, value = _expected(case, plan.expected_values)
        exp_ok.append(ok)
        exp_values.append(value)
    grading = grade_suite(suite.cases, gt_ok, gt_values, exp_ok, exp_values, equal=equal, keys=keys)
    claims = {id(case): (ok, value) for case, ok, value in zip(suite.cases, exp_ok, exp_values)}
    verdicts = []
    for t in grading.tests:
        key = call_key(t.case)
        valid = t.status == "valid"
        claim = claims[id(t.case)]
        verdicts.append(
            _verdict(
                key, t.gt_value, valid, outcome, passed, "generated", stdio, shown, claim=claim
            )
        )
    return grading, tuple(verdicts)


def coverage_bonus(gt_program: str, calls: Sequence[str], gt: Any) -> float:
    """LCov@K of the GT by ``calls`` (the first K kept tests), from its traced GT runs."""
    from codea1_env.evaluation.coverage import coverage_at_k

    model = _program_model(gt_program)
    if model is None or not calls:
        return 0.0
    runs = [getattr(gt(call), "coverage", None) for call in calls]
    figures = coverage_at_k(model, runs, len(calls))
    return float(figures.lcov or 0.0)


def mutation_bonus(
    plan: Plan,
    calls: Sequence[str],
    gt: Any,
    results: Sequence[JobResult],
    equal: Callable[[Any, Any], bool],
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
            if not (outcome.ok and equal(outcome.value, reference.value)):
                killed += 1
                break
    return killed / len(ran)


@functools.lru_cache(maxsize=1024)
def _program_model(program: str) -> Any:
    """The static coverage model of a GT program (None when it cannot be analysed)."""
    from codea1_env.evaluation.coverage import analyze_program

    try:
        return analyze_program(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError, tokenize.TokenError):
        return None


def _expected(case: TestCase | IOPair, evaluated: dict[str, tuple[bool, Any]]) -> tuple[bool, Any]:
    """Whether the tester's expectation evaluated to a plain value, and that value."""
    if isinstance(case, IOPair):
        return True, normalize(case.output, True)
    literal = literal_value(case.expected)
    if literal is not MISSING:
        return True, literal
    return evaluated.get(case.expected, (False, None))


def _verdict(
    key: str,
    expected: Any,
    valid: bool,
    outcome: dict[str, CallResult],
    passed: Any,
    source: str,
    stdio: bool,
    shown: dict[tuple[str, str], str] | None = None,
    claim: tuple[bool, Any] | None = None,
) -> TestVerdict:
    """One test's verdict.

    ``claim``: for a generated test, whether the tester's own expectation evaluated and its
    value; ``agrees_with_tester`` is then the candidate's verdict on it (a valid test's claim is
    the GT value: ``passed``). Without a claim (GT and mistake-book tests) it is False.
    ``shown`` memoizes the display text per ``(source, key)``: give it only where ``expected``
    is a function of ``key`` (the GT's value), never for mistake-book entries.
    """
    call = outcome.get(key)
    ok = bool(passed(key, expected))
    agrees = False
    if claim is not None:
        agrees = ok if valid else bool(claim[0] and passed(key, claim[1]))
    memo = (source, key)
    text = shown.get(memo) if shown is not None else None
    if text is None:
        text = f"stdin={key!r}" if stdio else f"assert {key} == {plain.to_source(expected)}"
        text = text[:500]
        if shown is not None:
            shown[memo] = text
    status = call.status.value if call is not None else CallStatus.NOT_RUN.value
    error = call.error[:300] if call is not None else "candidate did not run"
    duration = call.duration_s if call is not None else 0.0
    wall = call.wall_s if call is not None else 0.0
    return TestVerdict(
        text,
        valid,
        ok,
        status,
        "" if ok else error,
        source,
        agrees_with_tester=agrees,
        duration_s=duration,
        wall_s=wall,
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
