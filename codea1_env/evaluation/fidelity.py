"""UT fidelity (UTRL): do generated tests rank candidate codes the way the GT tests do?

UTRL (unit-test generation trained with adversarial RL, 2025) scores a generated test suite by
the **Spearman rank correlation, across the candidate codes of one problem, between each code's
pass rate on the generated tests and its pass rate on the ground-truth (GT) tests**. A suite with
fidelity 1 orders the candidates exactly as the GT tests do; 0, no relation; negative, the wrong
way round.

Definitions used here:

* **Pool** (:func:`candidate_pool`): the GT program itself, the GT's AST mutants
  (:func:`codea1_env.scoring.mutation.generate_mutants`, deterministic order, optionally cut to the
  first ``max_mutants``) and, when a coder is evaluated, its samples. Mutants give a spread of
  near-miss programs even when the coder's samples are all right or all wrong.
* **Pass rates** (:func:`pass_rates`): per candidate, the share of tests it passes. On generated
  tests (UTRL's reading): a candidate passes a test when it returns the value the *test* expects
  (so a test with a wrong expectation is failed by the correct code); on GT tests, the GT's value.
  A candidate whose program fails to run passes nothing.
* **Ties** get average ranks (the 1-based positions they span, averaged); Spearman's rho is then
  Pearson's correlation of the two rank vectors (exact with ties, unlike ``1 - 6 sum d^2 / ...``).
* **Undefined**: fewer than two candidates, or either side constant (every candidate has the
  same pass rate: no ranking to agree with): :func:`spearman` returns **None**, and the problem
  is left out of the mean (:func:`fidelity_report`), never counted as 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from codea1_env.scoring.mutation import MutantCache, generate_mutants

__all__ = [
    "FidelityReport",
    "average_ranks",
    "candidate_pool",
    "fidelity_report",
    "pass_rates",
    "spearman",
    "ut_fidelity",
]


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks of ``values`` (smallest first), ties sharing the average of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        rank = (start + end) / 2 + 1
        for position in range(start, end + 1):
            ranks[order[position]] = rank
        start = end + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho of paired samples (average ranks for ties).

    Returns:
        The correlation in ``[-1, 1]``; None when it is undefined (fewer than two pairs, or
        either side constant).

    Raises:
        ValueError: ``x`` and ``y`` differ in length, or hold a NaN.
    """
    if len(x) != len(y):
        raise ValueError(f"spearman: {len(x)} values against {len(y)}")
    if any(v != v for v in x) or any(v != v for v in y):
        raise ValueError("spearman: NaN value")
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    rx, ry = average_ranks(x), average_ranks(y)
    mx, my = math.fsum(rx) / len(rx), math.fsum(ry) / len(ry)
    dx = [r - mx for r in rx]
    dy = [r - my for r in ry]
    numerator = math.fsum(a * b for a, b in zip(dx, dy))
    denominator = math.sqrt(math.fsum(a * a for a in dx) * math.fsum(b * b for b in dy))
    return max(-1.0, min(1.0, numerator / denominator))


def ut_fidelity(
    generated_pass_rates: Sequence[float], gt_pass_rates: Sequence[float]
) -> float | None:
    """UTRL's UT fidelity of one suite on one problem: :func:`spearman` of the two pass rates.

    Args:
        generated_pass_rates: Per candidate of the pool, its pass rate on the generated tests.
        gt_pass_rates: Per candidate, in the same order, its pass rate on the GT tests.
    """
    return spearman(generated_pass_rates, gt_pass_rates)


def pass_rates(passes: Sequence[Sequence[bool]]) -> list[float]:
    """Per candidate (row), the share of tests (columns) it passes; 0.0 for a row of no tests."""
    return [sum(bool(p) for p in row) / len(row) if row else 0.0 for row in passes]


def candidate_pool(
    gt_program: str,
    *,
    samples: Sequence[str] = (),
    max_mutants: int | None = 16,
    mutant_cache: MutantCache | None = None,
) -> list[str]:
    """The candidate codes whose ranking fidelity measures: GT, its mutants, the coder's samples.

    Args:
        gt_program: The problem's complete GT program.
        samples: The coder's candidate programs (already extracted code), if any.
        max_mutants: Mutants kept (the first ones in :func:`generate_mutants`' deterministic
            order); None: all of them.
        mutant_cache: Where to look mutants up (shared with mut@k's evaluator, say).

    Returns:
        ``[gt_program, *mutants, *samples]``.
    """
    if mutant_cache is not None:
        mutants = mutant_cache.get(gt_program, max_mutants=max_mutants)
    else:
        mutants = generate_mutants(gt_program, max_mutants=max_mutants)
    return [gt_program, *(m.source for m in mutants), *samples]


@dataclass(frozen=True)
class FidelityReport:
    """UT fidelity per problem and its mean.

    Attributes:
        per_problem: Problem id -> fidelity (None: undefined for that problem).
        mean: Mean over the problems where it is defined; None when it is nowhere defined.
        n_defined: How many problems the mean is over.
    """

    per_problem: dict[str, float | None]
    mean: float | None
    n_defined: int


def fidelity_report(
    rates: Mapping[str, tuple[Sequence[float], Sequence[float]]],
) -> FidelityReport:
    """:func:`ut_fidelity` per problem, and the mean over the problems where it is defined.

    Args:
        rates: Problem id -> ``(generated_pass_rates, gt_pass_rates)`` over its candidate pool.
            For several suites per problem, key them apart (``"HumanEval/0#3"``) or average the
            per-suite values yourself.
    """
    per_problem = {key: ut_fidelity(gen, gt) for key, (gen, gt) in rates.items()}
    defined = [value for value in per_problem.values() if value is not None]
    mean = math.fsum(defined) / len(defined) if defined else None
    return FidelityReport(per_problem=per_problem, mean=mean, n_defined=len(defined))
