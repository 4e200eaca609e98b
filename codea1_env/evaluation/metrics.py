"""Pure metric functions for code and test generation (no I/O, no sandbox).

Every function takes small tables of booleans or counts and returns a number, so each metric can
be checked by hand. The sandboxed runs that fill these tables live in
:mod:`codea1_env.evaluation.suite_eval`; the runner over policies is ``agents.evaluation.evaluate``.

Code metrics
------------
``pass@k`` (:func:`pass_at_k`)
    Chen et al. 2021 (HumanEval, arXiv 2107.03374), the unbiased estimator: with ``n`` samples of
    which ``c`` are correct, ``1 - C(n - c, k) / C(n, k)``, computed as the numerically stable
    product ``1 - prod_{i = n - c + 1}^{n} (1 - k / i)``. A sample is correct when it passes all
    of the problem's ground-truth (GT) tests.
``avg@k`` (:func:`avg_at_k`)
    Code-A1 (arXiv 2603.15611) reports avg@32 at temperature 0.7, top-p 0.95: the mean pass rate
    over ``k`` samples of a problem (the share of correct samples), averaged over problems.

Test-generator metrics (``k`` = the number of tests considered, Code-A1's K = 8)
-----------------------------------------------------------------------------
validity (:func:`validity_at_k`, :func:`all_valid_at_k`)
    UnLeakedTestBench (Huang et al. 2025) pass@k: a generated test is *valid*
    when it holds on the GT solution (the GT runs the call without error and returns the value the
    test expects; a call that duplicates an earlier one is not valid). ``validity_at_k`` is the
    share of the first ``k`` tests that are valid, with missing tests (fewer than ``k`` written)
    counted as not valid; ``all_valid_at_k`` is the strict form: ``k`` tests written and all valid.
mutation score, mut@k (:func:`mutation_score`, :func:`mut_at_k`)
    Named after UnLeakedTestBench's mut@k, with codea1's own conventions (docs/metrics.md): the
    share of the GT's mutants killed by the first ``k`` tests, averaged over the entries (suites)
    whose first ``k`` tests are all valid. A mutant is killed by a test when its value on the
    test's call differs from the GT's (or the call fails). Crashing mutants (they fail on a GT
    test input; mutation tools would count them killed) and likely-equivalent mutants (same
    outputs as the GT on every GT test input and every evaluated input judged with them) are
    excluded from the denominator; see :func:`classify_mutant`.
discrimination (:func:`discrimination`)
    UTRL (unit-test generation trained with adversarial RL, 2025): the share of *wrong* candidate
    codes (codes that fail a GT test) that fail at least one valid generated test.
unit-test accuracy, p01, p00 (:func:`unit_test_accuracy`, :func:`p01_p00`)
    CURE (Wang et al. 2025, arXiv 2506.03136, Sec. 3): accuracy ``p_u`` is the share of generated
    tests that are correct (valid on the GT); ``p01`` is the chance that a wrong code passes a
    correct test (lower is better: the test misses a bug) and ``p00`` the chance that a wrong code
    passes an incorrect test (lower is better). CURE's condition for reward precision to grow with
    the number of tests is ``p_u (1 - p01) > (1 - p_u) p00``. For an incorrect test, "passes"
    means the wrong code returns the value the test (wrongly) expects.
best-of-N (:func:`best_of_n`)
    Choose among N candidate codes the one that passes the most generated tests and score the
    choice with the GT tests. Ties are averaged (the expected score of a uniformly random choice
    among the tied codes), so the metric is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "MutantClass",
    "MutantOutcome",
    "all_valid_at_k",
    "avg_at_k",
    "best_of_n",
    "classify_mutant",
    "discrimination",
    "mean_or_none",
    "mean_pass_at_k",
    "mut_at_k",
    "mutation_score",
    "p01_p00",
    "pooled_p01_p00",
    "pass_at_k",
    "unit_test_accuracy",
    "validity_at_k",
]


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")


def mean_or_none(values: Sequence[float]) -> float | None:
    """Mean of ``values``, or None when there are none (an undefined metric, not a zero)."""
    return math.fsum(values) / len(values) if values else None


# --------------------------------------------------------------------------------------------
# Code metrics
# --------------------------------------------------------------------------------------------


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem: ``1 - C(n - c, k) / C(n, k)``.

    Args:
        n: Samples drawn (``n >= 1``).
        c: Correct samples among them (``0 <= c <= n``).
        k: Samples the metric allows (``1 <= k <= n``).

    Raises:
        ValueError: a count outside the ranges above (``k > n`` cannot be estimated).

    """
    _check_k(k)
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"need n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per problem, got n={n}")
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float | None:
    """Mean of :func:`pass_at_k` over problems given as ``(n, c)`` pairs (None: no problems)."""
    return mean_or_none([pass_at_k(n, c, k) for n, c in counts])


def avg_at_k(correct: Sequence[Sequence[bool]], k: int) -> float | None:
    """Code-A1's avg@k: the share of correct samples among a problem's first ``k``, averaged.

    Args:
        correct: Per problem, whether each sample is correct, in sampling order.
        k: Samples per problem to use.

    Raises:
        ValueError: a problem has fewer than ``k`` samples.

    """
    _check_k(k)
    rates = []
    for index, samples in enumerate(correct):
        if len(samples) < k:
            raise ValueError(f"avg@{k}: problem {index} has only {len(samples)} samples")
        rates.append(sum(bool(s) for s in samples[:k]) / k)
    return mean_or_none(rates)


# --------------------------------------------------------------------------------------------
# Test-generator metrics
# --------------------------------------------------------------------------------------------


def validity_at_k(valid: Sequence[bool], k: int) -> float:
    """Share of the first ``k`` tests of one suite that hold on the GT (missing tests count 0)."""
    _check_k(k)
    return sum(bool(v) for v in valid[:k]) / k


def all_valid_at_k(valid: Sequence[bool], k: int) -> bool:
    """True when the suite has at least ``k`` tests and its first ``k`` are all valid."""
    _check_k(k)
    return len(valid) >= k and all(valid[:k])


def mutation_score(kills: Sequence[Sequence[bool]], k: int) -> float | None:
    """Share of mutants killed by at least one of the first ``k`` tests.

    Args:
        kills: ``kills[m][t]``: mutant ``m`` is killed by test ``t`` (only scored mutants: crashing
            and equivalent ones already removed).
        k: Tests considered.

    Returns:
        The killed share, or None when there is no mutant to score.

    """
    _check_k(k)
    if not kills:
        return None
    return sum(any(row[:k]) for row in kills) / len(kills)


def mut_at_k(
    problems: Sequence[tuple[Sequence[bool], Sequence[Sequence[bool]]]], k: int
) -> float | None:
    """mut@k over problems or suites (codea1's conventions, see the module docstring).

    Args:
        problems: Per problem (or per suite), ``(valid, kills)``: the validity flags of its tests
            and its scored mutants' kill rows (see :func:`mutation_score`).
        k: Tests considered.

    Returns:
        The mean mutation score over the entries whose first ``k`` tests are all valid and that
        have at least one scored mutant; None when no entry qualifies.

    """
    scores = []
    for valid, kills in problems:
        if all_valid_at_k(valid, k):
            score = mutation_score(kills, k)
            if score is not None:
                scores.append(score)
    return mean_or_none(scores)


def discrimination(passes: Sequence[Sequence[bool]], valid: Sequence[bool]) -> float | None:
    """UTRL discrimination: share of wrong codes failing at least one valid test.

    Args:
        passes: ``passes[c][t]``: wrong code ``c`` passes test ``t`` (its value equals the GT's).
            Only wrong codes (those failing a GT test) belong here.
        valid: Per test, whether it holds on the GT. Invalid tests are ignored.

    Returns:
        The share, or None when there is no wrong code.

    """
    if not passes:
        return None
    caught = 0
    for row in passes:
        if len(row) != len(valid):
            raise ValueError(f"discrimination: a row has {len(row)} tests, valid has {len(valid)}")
        caught += any(v and not p for p, v in zip(row, valid))
    return caught / len(passes)


def unit_test_accuracy(valid: Sequence[bool]) -> float | None:
    """CURE's unit-test accuracy: the share of generated tests that are correct on the GT."""
    return mean_or_none([1.0 if v else 0.0 for v in valid])


def p01_p00(
    passes: Sequence[Sequence[bool]], valid: Sequence[bool]
) -> tuple[float | None, float | None]:
    """CURE's ``p01`` and ``p00`` from wrong codes run on generated tests.

    Args:
        passes: ``passes[c][t]``: wrong code ``c`` returns the value test ``t`` expects (for a
            correct test the GT's value, for an incorrect one the test's own wrong value).
        valid: Per test, whether it is correct on the GT.

    Returns:
        ``(p01, p00)``: the pass rate of wrong codes on correct tests and on incorrect tests;
        each None when there is no such (code, test) pair.

    """
    return pooled_p01_p00([(passes, valid)])


def pooled_p01_p00(
    suites: Iterable[tuple[Sequence[Sequence[bool]], Sequence[bool]]],
) -> tuple[float | None, float | None]:
    """:func:`p01_p00` over several suites: every (wrong code, test) pair of each counts once.

    Args:
        suites: ``(passes, valid)`` per suite, as :func:`p01_p00` takes them.

    Returns:
        ``(p01, p00)`` of all the pairs together; each None when there is no such pair.

    """
    on_correct: list[float] = []
    on_incorrect: list[float] = []
    for passes, valid in suites:
        for row in passes:
            if len(row) != len(valid):
                raise ValueError(f"p01_p00: a row has {len(row)} tests, valid has {len(valid)}")
            for passed, ok in zip(row, valid):
                (on_correct if ok else on_incorrect).append(1.0 if passed else 0.0)
    return mean_or_none(on_correct), mean_or_none(on_incorrect)


def best_of_n(generated_passes: Sequence[int], gt_scores: Sequence[float]) -> float | None:
    """Score of the code passing the most generated tests, by its GT score (ties averaged).

    Args:
        generated_passes: Per candidate code, how many generated tests it passes.
        gt_scores: Per candidate code, its GT score (1.0/0.0 for correct/wrong, or a pass rate).

    Returns:
        The mean GT score of the codes with the most passes; None when there is no code.

    """
    if len(generated_passes) != len(gt_scores):
        raise ValueError(
            f"best_of_n: {len(generated_passes)} pass counts for {len(gt_scores)} GT scores"
        )
    if not generated_passes:
        return None
    top = max(generated_passes)
    chosen = [s for p, s in zip(generated_passes, gt_scores) if p == top]
    return math.fsum(chosen) / len(chosen)


# --------------------------------------------------------------------------------------------
# Mutants
# --------------------------------------------------------------------------------------------

MutantClass = Literal["scored", "crashing", "equivalent"]


@dataclass(frozen=True)
class MutantOutcome:
    """How one mutant fared.

    Attributes:
        kind: ``"scored"`` (kept in the denominator), ``"crashing"`` or ``"equivalent"``.
        kills: Per evaluated test, whether the mutant is killed by it (empty unless scored).

    """

    kind: MutantClass
    kills: tuple[bool, ...]


def classify_mutant(
    gt_ok: Sequence[bool], gt_same: Sequence[bool], test_same: Sequence[bool]
) -> MutantOutcome:
    """Classify a mutant from its runs on the GT tests' inputs and on the evaluated tests' inputs.

    Rules (documented choices):

    * **crashing**: the mutant failed (exception, timeout, early exit, setup failure ...) on at
      least one GT test input on which the GT itself ran. Such a mutant is killed by any test
      suite that calls the function the way the GT tests do; it measures nothing about the
      evaluated suite, so it is excluded from mut@k (and counted separately).
    * **equivalent** (likely): the mutant returned the GT's value on every GT test input and on
      every evaluated test input. No test of this suite can tell it apart, and nothing shows that
      any test could; it is excluded.
    * **scored**: everything else. Note that a mutant that differs from the GT only on the
      evaluated inputs is scored (and killed), one that differs only on GT inputs is scored (and
      survives the suite).

    Args:
        gt_ok: Per GT test input where the GT ran, whether the mutant's call ran (returned a
            plain value).
        gt_same: Per such GT input, whether the mutant's value equals the GT's.
        test_same: Per evaluated test, whether the mutant's value equals the GT's (False when the
            mutant's call failed). Tests on which the GT failed should not be passed.

    """
    if len(gt_ok) != len(gt_same):
        raise ValueError("classify_mutant: gt_ok and gt_same differ in length")
    if not all(gt_ok):
        return MutantOutcome("crashing", ())
    if all(gt_same) and all(test_same):
        return MutantOutcome("equivalent", ())
    return MutantOutcome("scored", tuple(not same for same in test_same))
