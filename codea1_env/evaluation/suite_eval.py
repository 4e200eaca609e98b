"""Run generated test suites against the GT, candidate codes and the GT's mutants, batched.

:class:`SuiteEvaluator` turns ``(problem, suites, candidate codes)`` into the tables the pure
metrics of :mod:`codea1_env.evaluation.metrics` need. For a batch of problems it builds **one**
:meth:`Sandbox.run` call holding, per problem:

* the GT program on every distinct generated call, every non-literal expected expression and every
  GT test call;
* each candidate code on every distinct generated call and every GT test call;
* each mutant of the GT (from :mod:`codea1_env.mutation`, cached per GT program in a
  :class:`~codea1_env.mutation.MutantCache`) on the GT test calls and the generated calls.

Values are compared in this (trusted) process with :func:`codea1_env.plain.values_equal`; the
untrusted processes never see an expected value.

Which generated tests count: the accepted asserts of :func:`~codea1_env.testcases.parse_tests`
plus the asserts it rejected as ``"duplicate"`` (a repeated call), in source order. Each test gets
a status: ``"valid"`` (the GT returns the expected value), ``"wrong_expected"`` (the GT returns
another value, or the expected expression fails), ``"gt_error"`` (the GT cannot run the call) or
``"duplicate"``. Only ``"valid"`` tests are valid. Duplicates are not run.

Function problems only: a stdio problem's suites get ``parse_reason == "stdio_unsupported"`` and
no tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from codea1_env import plain
from codea1_env.arguments import MISSING, literal_value
from codea1_env.evaluation.metrics import classify_mutant
from codea1_env.mutation import MutantCache
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import CallResult, Job, JobResult, Limits, Sandbox
from codea1_env.testcases import TestCase, extract_code, parse_tests

__all__ = ["EvaluatedSuite", "ProblemEvaluation", "SuiteEvaluator", "TestStatus"]

TestStatus = str
"""``"valid"``, ``"wrong_expected"``, ``"gt_error"`` or ``"duplicate"``."""

_CALLS_PER_JOB = 64


@dataclass(frozen=True)
class EvaluatedSuite:
    """One generated suite, run against the GT, the candidates and the mutants.

    Attributes:
        statuses: Per test (source order, at most ``max_tests``), its status.
        valid: Per test, ``status == "valid"``.
        cases: Per test, the parsed case (None for duplicates).
        mutant_kills: ``[scored mutant][test]``: the mutant's value differs from the GT's.
        candidate_passes: ``[candidate][test]``: the candidate returns the value the test expects.
        parse_reason: Why no test was parsed (``""`` when some were).

    """

    statuses: tuple[TestStatus, ...]
    valid: tuple[bool, ...]
    cases: tuple[TestCase | None, ...]
    mutant_kills: tuple[tuple[bool, ...], ...]
    candidate_passes: tuple[tuple[bool, ...], ...]
    parse_reason: str = ""


@dataclass(frozen=True)
class ProblemEvaluation:
    """Everything measured on one problem.

    Attributes:
        task_id: The problem's id.
        suites: One entry per given suite.
        candidate_correct: Per candidate code, whether it passes every GT test the GT runs.
        candidate_gt_pass_rates: Per candidate, its GT pass rate.
        n_mutants: Mutants generated (after the ``max_mutants`` cut).
        n_crashing: Mutants that fail on a GT input (excluded from mut@k).
        n_equivalent: Mutants that match the GT on every input tried (excluded from mut@k).
        candidate_results: The sandbox results of the candidate jobs (for the monitor).

    """

    task_id: str
    suites: tuple[EvaluatedSuite, ...]
    candidate_correct: tuple[bool, ...]
    candidate_gt_pass_rates: tuple[float, ...]
    n_mutants: int = 0
    n_crashing: int = 0
    n_equivalent: int = 0
    candidate_results: tuple[JobResult, ...] = field(default=(), repr=False)


@dataclass
class _Entry:
    status: TestStatus
    case: TestCase | None


@dataclass
class _Plan:
    problem: Problem
    entries: list[list[_Entry]]
    reasons: list[str]
    gt_calls: list[str]
    calls: list[str]  # distinct generated calls (by source text)
    expected: list[str]  # non-literal expected expressions
    candidates: list[str | None]
    mutants: list[str]
    jobs: dict[str, list[tuple[int, list[str]]]] = field(default_factory=dict)


class SuiteEvaluator:
    """Measures generated test suites (see the module docstring).

    Args:
        sandbox: Where every program runs (all jobs of a batch in one :meth:`Sandbox.run`).
        limits: Per-job limits of the GT and candidate jobs.
        mutant_limits: Per-job limits of the mutant jobs. The call timeout is shorter by default
            (0.5 s): a mutant that loops (an off-by-one in a loop bound) would otherwise hold a
            worker for the full timeout; a mutant that times out counts as failing that call.
        max_tests: Tests read per suite (the rest are ignored). Metrics use the first ``k``.
        max_mutants: Mutants per problem (None: all). With a cut the first ones in the
            operators' deterministic order are kept.
        mutant_cache: A shared cache of generated mutants (one is created when None).

    """

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        limits: Limits | None = None,
        mutant_limits: Limits | None = None,
        max_tests: int = 16,
        max_mutants: int | None = None,
        mutant_cache: MutantCache | None = None,
    ) -> None:
        if max_tests < 1:
            raise ValueError(f"max_tests must be >= 1, got {max_tests}")
        self.sandbox = sandbox
        self.limits = limits or Limits(call_timeout_s=1.0, setup_timeout_s=3.0)
        self.mutant_limits = mutant_limits or Limits(call_timeout_s=0.5, setup_timeout_s=2.0)
        self.max_tests = max_tests
        self.max_mutants = max_mutants
        self.mutant_cache = mutant_cache if mutant_cache is not None else MutantCache()

    def evaluate(
        self,
        batch: Sequence[tuple[Problem, Sequence[str], Sequence[str]]],
        *,
        with_mutants: bool = True,
    ) -> list[ProblemEvaluation]:
        """Evaluate ``(problem, suite texts, candidate code texts)`` triples in one sandbox call.

        Args:
            batch: Per problem: the testers' raw answers and the candidate coders' raw answers
                (either list may be empty).
            with_mutants: Also run the GT's mutants (needed for mut@k only).

        Returns:
            One :class:`ProblemEvaluation` per triple, in order.

        """
        plans = [self._plan(p, suites, codes, with_mutants) for p, suites, codes in batch]
        jobs: list[Job] = []
        for index, plan in enumerate(plans):
            self._add_jobs(index, plan, jobs)
        results = self.sandbox.run(jobs) if jobs else []
        return [self._score(plan, results) for plan in plans]

    # ------------------------------------------------------------------ planning
    def _plan(
        self, problem: Problem, suites: Sequence[str], codes: Sequence[str], with_mutants: bool
    ) -> _Plan:
        entries: list[list[_Entry]] = []
        reasons: list[str] = []
        calls: dict[str, None] = {}
        expected: dict[str, None] = {}
        stdio = problem.kind == "stdio"
        for text in suites:
            if stdio:
                entries.append([])
                reasons.append("stdio_unsupported")
                continue
            parsed = parse_tests(text if isinstance(text, str) else "", problem.entry_point)
            ordered: list[tuple[int, _Entry]] = [(c.line, _Entry("", c)) for c in parsed.cases]
            ordered += [
                (r.line, _Entry("duplicate", None))
                for r in parsed.rejected
                if r.reason == "duplicate"
            ]
            ordered.sort(key=lambda item: item[0])
            row = [entry for _line, entry in ordered[: self.max_tests]]
            for entry in row:
                if entry.case is not None:
                    calls[entry.case.call] = None
                    if literal_value(entry.case.expected) is MISSING:
                        expected[entry.case.expected] = None
            entries.append(row)
            reasons.append(parsed.reason)
        gt_calls = (
            []
            if stdio
            else [c.call for c in parse_tests("\n".join(problem.tests), problem.entry_point).cases]
        )
        programs = [_program_of(code) for code in codes]
        mutants: list[str] = []
        if with_mutants and not stdio and calls:
            mutants = [
                m.source
                for m in self.mutant_cache.get(problem.gt_program, max_mutants=self.max_mutants)
            ]
        return _Plan(
            problem, entries, reasons, gt_calls, list(calls), list(expected), programs, mutants
        )

    def _add_jobs(self, index: int, plan: _Plan, jobs: list[Job]) -> None:
        if plan.problem.kind == "stdio":
            return
        run_calls = list(dict.fromkeys(plan.gt_calls + plan.calls))

        def add(key: str, program: str, keys: list[str], limits: Limits = self.limits) -> None:
            slots = plan.jobs.setdefault(key, [])
            for start in range(0, max(len(keys), 1), _CALLS_PER_JOB):
                chunk = keys[start : start + _CALLS_PER_JOB]
                slots.append((len(jobs), chunk))
                jobs.append(
                    Job(
                        program=program,
                        calls=tuple(chunk),
                        limits=limits,
                        tag=f"eval:{plan.problem.task_id}:{key}",
                    )
                )

        gt_keys = list(dict.fromkeys(run_calls + plan.expected))
        if gt_keys:
            add("gt", plan.problem.gt_program, gt_keys)
        for c_index, program in enumerate(plan.candidates):
            if program is not None and run_calls:
                add(f"code{c_index}", program, run_calls)
        for m_index, source in enumerate(plan.mutants):
            add(f"mutant{m_index}", source, run_calls, self.mutant_limits)

    # ------------------------------------------------------------------ scoring
    def _score(self, plan: _Plan, results: list[JobResult]) -> ProblemEvaluation:
        def outcome(key: str) -> tuple[dict[str, CallResult], list[JobResult]]:
            found: dict[str, CallResult] = {}
            raw: list[JobResult] = []
            for job_index, chunk in plan.jobs.get(key, []):
                result = results[job_index]
                raw.append(result)
                found.update(zip(chunk, result.calls))
            return found, raw

        gt, _ = outcome("gt")

        def gt_value(key: str) -> Any:
            call = gt.get(key)
            return call.value if call is not None and call.ok else MISSING

        def expected_value(case: TestCase) -> Any:
            literal = literal_value(case.expected)
            return literal if literal is not MISSING else gt_value(case.expected)

        # statuses
        for row in plan.entries:
            for entry in row:
                if entry.case is None:
                    continue
                reference = gt_value(entry.case.call)
                wanted = expected_value(entry.case)
                if reference is MISSING:
                    entry.status = "gt_error"
                elif wanted is not MISSING and plain.values_equal(wanted, reference):
                    entry.status = "valid"
                else:
                    entry.status = "wrong_expected"

        gt_inputs = [c for c in plan.gt_calls if gt_value(c) is not MISSING]

        def same(values: dict[str, CallResult], key: str, reference: Any) -> bool:
            call = values.get(key)
            return bool(
                reference is not MISSING
                and call is not None
                and call.ok
                and plain.values_equal(call.value, reference)
            )

        # candidates
        correct: list[bool] = []
        rates: list[float] = []
        cand_values: list[dict[str, CallResult]] = []
        cand_raw: list[JobResult] = []
        for c_index in range(len(plan.candidates)):
            values, raw = outcome(f"code{c_index}")
            cand_values.append(values)
            cand_raw.extend(raw)
            passed = sum(same(values, c, gt_value(c)) for c in gt_inputs)
            rate = passed / len(gt_inputs) if gt_inputs else 0.0
            rates.append(rate)
            correct.append(bool(gt_inputs) and passed == len(gt_inputs))

        # mutants
        mutant_values = [outcome(f"mutant{m}")[0] for m in range(len(plan.mutants))]
        all_cases = [e.case for row in plan.entries for e in row if e.case is not None]
        classes = []
        for values in mutant_values:
            gt_ok = [bool(values.get(c) is not None and values[c].ok) for c in gt_inputs]
            gt_same = [same(values, c, gt_value(c)) for c in gt_inputs]
            test_same = [
                same(values, case.call, gt_value(case.call))
                for case in all_cases
                if gt_value(case.call) is not MISSING
            ]
            classes.append(classify_mutant(gt_ok, gt_same, test_same).kind)
        scored = [v for v, kind in zip(mutant_values, classes) if kind == "scored"]

        suites = []
        for row, reason in zip(plan.entries, plan.reasons):
            kills = tuple(
                tuple(
                    e.case is not None
                    and gt_value(e.case.call) is not MISSING
                    and not same(values, e.case.call, gt_value(e.case.call))
                    for e in row
                )
                for values in scored
            )
            passes = tuple(
                tuple(
                    e.case is not None and same(values, e.case.call, expected_value(e.case))
                    for e in row
                )
                for values in cand_values
            )
            suites.append(
                EvaluatedSuite(
                    statuses=tuple(e.status for e in row),
                    valid=tuple(e.status == "valid" for e in row),
                    cases=tuple(e.case for e in row),
                    mutant_kills=kills,
                    candidate_passes=passes,
                    parse_reason=reason,
                )
            )
        return ProblemEvaluation(
            task_id=plan.problem.task_id,
            suites=tuple(suites),
            candidate_correct=tuple(correct),
            candidate_gt_pass_rates=tuple(rates),
            n_mutants=len(plan.mutants),
            n_crashing=classes.count("crashing"),
            n_equivalent=classes.count("equivalent"),
            candidate_results=tuple(cand_raw),
        )


def _program_of(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    code = extract_code(text)
    return code if code.strip() else None
