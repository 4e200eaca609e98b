"""Run generated test suites against the GT, candidate codes and the GT's mutants, batched.

:class:`SuiteEvaluator` turns ``(problem, suites, candidate codes)`` into the tables the pure
metrics of :mod:`codea1_env.evaluation.metrics` need. It grades through the **same path as
training**: one :meth:`~codea1_env.scoring.referee.Referee.judge_many` call per batch, so parsing,
the argument materialization, the GT correction (rules 1-3 of docs/deviations.md) and the value
comparison are the referee's, and the training numbers (``R_val``, ``n_kept``, ``n_invalid``) come
out next to the evaluation metrics. For a batch of problems the referee judges, in two sandbox
calls:

1. per problem, the GT itself (row 0) and each candidate code against every suite;
2. per problem, each mutant of the GT (from :mod:`codea1_env.scoring.mutation`, cached per GT
   program in a :class:`~codea1_env.scoring.mutation.MutantCache`) against every suite, under a call
   timeout scaled from the GT's own call times measured in step 1 (:data:`MUTANT_TIMEOUT_FACTOR`,
   within ``mutant_limits``); the GT's runs are shared through the referee's GT cache.

Every suite of a problem given in one call is run on every mutant, and a mutant's class
(:func:`~codea1_env.evaluation.metrics.classify_mutant`: crashing, likely equivalent, scored) is
judged on the GT tests' inputs and on the inputs of **all** those suites together. Judged on one
suite's own inputs, every mutant that suite misses would look equivalent and its mut@k would be 1;
:meth:`SuiteEvaluator.evaluate_pooled` gives several testers' suites one judgement, so each tester
is scored against the same mutants (the runs are the same single batch as :meth:`evaluate`).

The evaluator's referee has its own empty mistake book and never updates it, so evaluation
replays no book test and changes nothing.

Statuses of a suite's tests, in the tester's order (every assert that became a test; asserts the
parser rejected are not tests, as in the authors' rule 1): ``"valid"`` (kept, expectation right),
``"wrong_expected"`` (kept with the GT's value: the expectation was wrong or did not evaluate),
``"gt_error"`` (the GT raised on the call), ``"duplicate"`` (same normalized statement as an
earlier kept test), ``"bad_arguments"`` (the arguments did not evaluate to plain data, so the call
cannot run) and ``"filtered"`` (removed by the optional quality filter). Only ``"valid"`` tests are
valid for UnLeakedTestBench's validity.

Function problems only: a stdio problem's suites get ``parse_reason == "stdio_unsupported"`` and
no tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from codea1_env.evaluation.metrics import MutantClass, classify_mutant
from codea1_env.mistake_book import InMemoryMistakeBook
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import JobResult, Limits, Sandbox
from codea1_env.scoring.mutation import Mutant, MutantCache
from codea1_env.scoring.referee import Judgement, Referee, SuiteVerdict
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.scoring.testcases import TestCase

__all__ = [
    "MUTANT_TIMEOUT_FACTOR",
    "MUTANT_TIMEOUT_FLOOR_S",
    "TEST_STATUSES",
    "EvaluatedSuite",
    "ProblemEvaluation",
    "SuiteEvaluator",
    "TestStatus",
]

TestStatus = Literal[
    "valid", "wrong_expected", "gt_error", "duplicate", "bad_arguments", "filtered"
]
"""What became of one generated test (see the module docstring)."""

TEST_STATUSES: tuple[str, ...] = (
    "valid",
    "wrong_expected",
    "gt_error",
    "duplicate",
    "bad_arguments",
    "filtered",
)

MUTANT_TIMEOUT_FACTOR = 20.0
"""A mutant call may take this many times the GT's slowest call of the problem."""

MUTANT_TIMEOUT_FLOOR_S = 0.05
"""...and at least this long (sandbox timers are accurate to a few milliseconds)."""

_GRADE_TO_STATUS: dict[str, TestStatus] = {
    "valid": "valid",
    "invalid_kept": "wrong_expected",
    "dropped_gt_error": "gt_error",
    "dropped_duplicate": "duplicate",
}


@dataclass(frozen=True)
class EvaluatedSuite:
    """One generated suite, run against the GT, the candidates and the mutants.

    Attributes:
        statuses: Per test (the tester's order, at most ``max_tests``), its status.
        valid: Per test, ``status == "valid"``.
        cases: Per test, the graded case (None when the call could not run: bad arguments or
            filtered).
        mutant_kills: ``[scored mutant][test]``: a kept test on which the mutant's value differs
            from the GT's (or the mutant's call fails); False for tests that are not kept.
        candidate_passes: ``[candidate][test]``: the candidate returns the value the TESTER
            claims (before GT correction), as best-of-N selection and CURE's p00 need it; False
            for tests that are not kept.
        parse_reason: Why no test was parsed (``""`` when some were).
        r_val: The training validity reward of the suite (rule 3), as the referee computes it.
        n_kept: Kept tests (rule 3).
        n_invalid: Invalid tests (rule 3).

    """

    statuses: tuple[TestStatus, ...]
    valid: tuple[bool, ...]
    cases: tuple[TestCase | None, ...]
    mutant_kills: tuple[tuple[bool, ...], ...]
    candidate_passes: tuple[tuple[bool, ...], ...]
    parse_reason: str = ""
    r_val: float = 0.0
    n_kept: int = 0
    n_invalid: int = 0


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
        judgement: The referee's judgement of the GT and the candidates (row 0 is the GT; with
            :meth:`SuiteEvaluator.evaluate_pooled`, its suites are every group's).
        candidate_results: Kept for compatibility; the referee's monitor metrics are in
            ``judgement.metrics`` (always empty).
        mutant_classes: Per generated mutant, in
            :func:`~codea1_env.scoring.mutation.generate_mutants` order (the first
            ``max_mutants``), ``"scored"`` (counted by mut@k, one
            ``mutant_kills`` row each, in this order), ``"crashing"`` or ``"equivalent"``;
            empty when no mutant ran.
        mutant_changes: Per generated mutant, the same order, what it changes
            (``"line 2: '<' -> '<='"``).
        judged_on_suites: How many suites' inputs (with the GT tests') judged the mutants'
            classes: this problem's suites of the call, every group's with
            :meth:`SuiteEvaluator.evaluate_pooled`.

    """

    task_id: str
    suites: tuple[EvaluatedSuite, ...]
    candidate_correct: tuple[bool, ...]
    candidate_gt_pass_rates: tuple[float, ...]
    n_mutants: int = 0
    n_crashing: int = 0
    n_equivalent: int = 0
    judgement: Judgement | None = field(default=None, repr=False)
    candidate_results: tuple[JobResult, ...] = field(default=(), repr=False)
    mutant_classes: tuple[MutantClass, ...] = ()
    mutant_changes: tuple[str, ...] = ()
    judged_on_suites: int = 0


class SuiteEvaluator:
    """Measures generated test suites (see the module docstring).

    Args:
        sandbox: Where every program runs (all jobs of a batch in one :meth:`Sandbox.run`).
        limits: Per-job limits of the GT and candidate jobs.
        mutant_limits: Per-job limits of the mutant jobs. Their call timeout is the most a mutant
            call may take (0.5 s by default); within it, each problem's mutants get
            ``max(MUTANT_TIMEOUT_FLOOR_S, MUTANT_TIMEOUT_FACTOR x the GT's slowest call)``, as
            mutation tools do: a mutant that loops (an off-by-one in a loop bound) would
            otherwise hold a worker for the full timeout, and a mutant that times out counts as
            failing (killed on) that call.
        max_tests: Tests reported per suite (the first ones in the tester's order); None (the
            default): every test the referee read (at most ``8 K``, as in training). The
            ``@k`` metrics use the first ``k``, the others every reported test;
            ``r_val``/``n_kept``/``n_invalid`` count every test, as training.
        max_mutants: Mutants per problem (None: all). With a cut the first ones in the
            operators' deterministic order are kept.
        mutant_cache: A shared cache of generated mutants (one is created when None).
        reward_config: The scoring settings (K, alpha, the inlining policy, the equality) of
            the training run to compare with; the defaults are the paper's.

    """

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        limits: Limits | None = None,
        mutant_limits: Limits | None = None,
        max_tests: int | None = None,
        max_mutants: int | None = None,
        mutant_cache: MutantCache | None = None,
        reward_config: RewardConfig | None = None,
    ) -> None:
        if max_tests is not None and max_tests < 1:
            raise ValueError(f"max_tests must be >= 1 or None, got {max_tests}")
        self.sandbox = sandbox
        self.limits = limits or Limits(call_timeout_s=1.0, setup_timeout_s=3.0)
        self.mutant_limits = mutant_limits or Limits(call_timeout_s=0.5, setup_timeout_s=2.0)
        self.max_tests = max_tests
        self.max_mutants = max_mutants
        self.mutant_cache = mutant_cache if mutant_cache is not None else MutantCache()
        config = reward_config or RewardConfig()
        if config.mode == "golden":  # golden mode plays no tester: grade suites as code-a1 does
            config = RewardConfig(
                alpha=config.alpha,
                k=config.k,
                inline=config.inline,
                equality=config.equality,
                candidate_context=config.candidate_context,
            )
        self.referee = Referee(
            sandbox=sandbox,
            reward_config=config,
            limits=self.limits,
            mistake_book=InMemoryMistakeBook(),
            owns_sandbox=False,
        )

    def evaluate(
        self,
        batch: Sequence[tuple[Problem, Sequence[str], Sequence[str]]],
        *,
        with_mutants: bool = True,
    ) -> list[ProblemEvaluation]:
        """Evaluate ``(problem, suite texts, candidate code texts)`` triples in one sandbox call.

        A problem's mutants are classified on the GT tests' inputs and the inputs of all its
        suites given here (see the module docstring).

        Args:
            batch: Per problem: the testers' raw answers and the candidate coders' raw answers
                (either list may be empty).
            with_mutants: Also run the GT's mutants (needed for mut@k only).

        Returns:
            One :class:`ProblemEvaluation` per triple, in order.

        """
        # 1. the GT (row 0) and the candidates of every problem, in one sandbox call
        items: list[tuple[Problem, list[str], list[list[str]]]] = []
        where: list[int] = []  # per batch entry: its item, or -1 for a stdio problem
        mutant_lists: list[list[Mutant]] = []
        for problem, suites, codes in batch:
            texts = [t if isinstance(t, str) else "" for t in suites]
            if problem.kind == "stdio":
                where.append(-1)
                mutant_lists.append([])
                continue
            rows = [problem.gt_program, *codes]
            where.append(len(items))
            items.append((problem, rows, [list(texts) for _ in rows]))
            mutants: list[Mutant] = []
            if with_mutants and texts:
                mutants = self.mutant_cache.get(problem.gt_program, max_mutants=self.max_mutants)
            mutant_lists.append(mutants)
        judgements = self.referee.judge_many(items, update_book=False) if items else []
        # 2. every problem's mutants, in one more sandbox call, each under a call timeout set
        #    from the GT's own call times on the same inputs (measured in step 1)
        mutant_items: list[tuple[Problem, list[str], list[list[str]]]] = []
        mutant_limits: list[Limits | None] = []
        mutant_where: dict[int, int] = {}
        for index, ((problem, suites, _codes), item) in enumerate(zip(batch, where)):
            if item < 0 or not mutant_lists[index]:
                continue
            mutant_where[index] = len(mutant_items)
            sources = [m.source for m in mutant_lists[index]]
            texts = [t if isinstance(t, str) else "" for t in suites]
            mutant_items.append((problem, sources, [list(texts) for _ in sources]))
            mutant_limits.append(self._mutant_limits(judgements[item]))
        mutant_judgements = (
            self.referee.judge_many(mutant_items, update_book=False, candidate_limits=mutant_limits)
            if mutant_items
            else []
        )
        out: list[ProblemEvaluation] = []
        for index, ((problem, suites, codes), item) in enumerate(zip(batch, where)):
            if item < 0:
                out.append(
                    ProblemEvaluation(
                        task_id=problem.task_id,
                        suites=tuple(_stdio_suite() for _ in suites),
                        candidate_correct=tuple(False for _ in codes),
                        candidate_gt_pass_rates=tuple(0.0 for _ in codes),
                    )
                )
                continue
            slot = mutant_where.get(index)
            judged_mutants = mutant_judgements[slot] if slot is not None else None
            out.append(
                self._problem(problem, judgements[item], judged_mutants, mutant_lists[index])
            )
        return out

    def evaluate_pooled(
        self,
        problems: Sequence[Problem],
        groups: Sequence[Sequence[Sequence[str]]],
        codes: Sequence[Sequence[str]],
        *,
        with_mutants: bool = True,
    ) -> list[list[ProblemEvaluation]]:
        """Evaluate several testers' suites on the same problems, their mutants judged together.

        Per problem, every group's suites go into one :meth:`evaluate` batch (one sandbox call
        for the GT and the candidates, one for the mutants, as for a single group), so a mutant
        is likely equivalent only when it matches the GT on the GT tests' inputs and on the
        inputs of every group's suites, and every group is scored against the same mutants.
        Each group then gets its own suites back; the rest of a :class:`ProblemEvaluation`
        (candidates, mutant counts and classes) is the problem's, the same for every group.

        Args:
            problems: The problems.
            groups: Per group (a tester), per problem, its suites' raw answers.
            codes: Per problem, the candidate coders' raw answers (shared by every group).
            with_mutants: Also run the GT's mutants (needed for mut@k only).

        Returns:
            Per group, one :class:`ProblemEvaluation` per problem, in order. With one group,
            exactly :meth:`evaluate`'s.

        Raises:
            ValueError: a group or ``codes`` does not have one entry per problem.

        """
        for index, group in enumerate(groups):
            if len(group) != len(problems):
                raise ValueError(
                    f"evaluate_pooled: group {index} has {len(group)} entries for "
                    f"{len(problems)} problems"
                )
        if len(codes) != len(problems):
            raise ValueError(
                f"evaluate_pooled: {len(codes)} candidate lists for {len(problems)} problems"
            )
        batch = [
            (problem, [text for group in groups for text in group[i]], codes[i])
            for i, problem in enumerate(problems)
        ]
        pooled = self.evaluate(batch, with_mutants=with_mutants)
        out: list[list[ProblemEvaluation]] = [[] for _ in groups]
        for i, evaluation in enumerate(pooled):
            start = 0
            for g, group in enumerate(groups):
                end = start + len(group[i])
                out[g].append(dataclasses.replace(evaluation, suites=evaluation.suites[start:end]))
                start = end
        return out

    def _mutant_limits(self, judged: Judgement) -> Limits:
        """The mutants' limits: the call timeout scaled from the GT's slowest call (row 0)."""
        durations = [v.duration_s for v in judged.gt_tests[0]] if judged.gt_tests else []
        durations += [v.duration_s for suite in judged.suites[0] for v in suite.verdicts]
        slowest = max(durations, default=0.0)
        ceiling = self.mutant_limits.call_timeout_s
        timeout = min(ceiling, max(MUTANT_TIMEOUT_FLOOR_S, MUTANT_TIMEOUT_FACTOR * slowest))
        return self.mutant_limits.with_call_budget(timeout)

    # ------------------------------------------------------------------ tables
    def _problem(
        self,
        problem: Problem,
        judged: Judgement,
        mutants: Judgement | None,
        generated: Sequence[Mutant],
    ) -> ProblemEvaluation:
        rates = judged.gt_pass_rates[1:]
        has_gt_tests = bool(judged.gt_tests and judged.gt_tests[0])
        correct = tuple(has_gt_tests and rate == 1.0 for rate in rates)
        scored: list[int] = []
        classes: list[MutantClass] = []
        if mutants is not None:
            for m in range(len(mutants.compiled)):
                gt_rows = mutants.gt_tests[m] if mutants.gt_tests else ()
                gt_ok = [v.status == "ok" for v in gt_rows]
                gt_same = [v.passed for v in gt_rows]
                test_same = [v.passed for suite in mutants.suites[m] for v in suite.verdicts]
                kind = classify_mutant(gt_ok, gt_same, test_same).kind
                classes.append(kind)
                if kind == "scored":
                    scored.append(m)
        suites: list[EvaluatedSuite] = []
        for s_index, reference in enumerate(judged.suites[0] if judged.suites else ()):
            order = self._order(reference)
            cand_rows = [judged.suites[c][s_index] for c in range(1, len(judged.compiled))]
            mutant_rows = [mutants.suites[m][s_index] for m in scored] if mutants else []
            suites.append(
                EvaluatedSuite(
                    statuses=tuple(status for status, _case, _slot in order),
                    valid=tuple(status == "valid" for status, _case, _slot in order),
                    cases=tuple(case for _status, case, _slot in order),
                    mutant_kills=tuple(
                        tuple(
                            slot is not None and not row.verdicts[slot].passed
                            for _s, _c, slot in order
                        )
                        for row in mutant_rows
                    ),
                    candidate_passes=tuple(
                        tuple(
                            slot is not None and row.verdicts[slot].agrees_with_tester
                            for _s, _c, slot in order
                        )
                        for row in cand_rows
                    ),
                    parse_reason=reference.parse_reason,
                    r_val=reference.tester.r_val,
                    n_kept=reference.grading.n_kept if reference.grading else 0,
                    n_invalid=reference.n_invalid,
                )
            )
        return ProblemEvaluation(
            task_id=problem.task_id,
            suites=tuple(suites),
            candidate_correct=correct,
            candidate_gt_pass_rates=tuple(rates),
            n_mutants=len(generated),
            n_crashing=classes.count("crashing"),
            n_equivalent=classes.count("equivalent"),
            judgement=judged,
            mutant_classes=tuple(classes),
            mutant_changes=tuple(f"line {m.line}: {m.description}" for m in generated),
            judged_on_suites=len(suites) if mutants is not None else 0,
        )

    def _order(self, suite: SuiteVerdict) -> list[tuple[TestStatus, TestCase | None, int | None]]:
        """Every test of a suite in the tester's order: ``(status, case, kept-test index)``."""
        rows: list[tuple[int, int, TestStatus, TestCase | None, int | None]] = []
        kept = 0
        graded = suite.grading.graded if suite.grading else ()
        for position, test in enumerate(graded):
            case = test.case if isinstance(test.case, TestCase) else None
            line = case.line if case is not None else 0
            slot = kept if test.kept else None
            kept += test.kept
            rows.append((line, position, _GRADE_TO_STATUS[test.status], case, slot))
        offset = len(rows)
        for position, (line, reason, _source) in enumerate(suite.rejected):
            if reason.startswith("bad_arguments"):
                rows.append((line, offset + position, "bad_arguments", None, None))
            elif reason.startswith("trivial:"):
                rows.append((line, offset + position, "filtered", None, None))
        rows.sort(key=lambda row: (row[0], row[1]))
        shown = rows if self.max_tests is None else rows[: self.max_tests]
        return [(status, case, slot) for _l, _p, status, case, slot in shown]


def _stdio_suite() -> EvaluatedSuite:
    return EvaluatedSuite((), (), (), (), (), parse_reason="stdio_unsupported")
