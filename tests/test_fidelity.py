"""UT fidelity (UTRL): Spearman's rho with average ranks, the candidate pool, the report."""

from __future__ import annotations

import math
import random

import pytest

from codea1_env.evaluation.fidelity import (
    FidelityReport,
    average_ranks,
    candidate_pool,
    fidelity_report,
    pass_rates,
    spearman,
    ut_fidelity,
)
from codea1_env.sandbox.base import Job, Limits, Sandbox
from codea1_env.sandbox.worker import plain
from codea1_env.scoring.mutation import MutantCache, generate_mutants


def test_average_ranks() -> None:
    assert average_ranks([10, 20, 20, 30]) == [1.0, 2.5, 2.5, 4.0]
    assert average_ranks([3, 1, 2]) == [3.0, 1.0, 2.0]
    assert average_ranks([5, 5, 5]) == [2.0, 2.0, 2.0]
    assert average_ranks([]) == []


def test_spearman_known_values() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # no ties: 1 - 6 * sum(d^2) / (n (n^2 - 1)) = 1 - 6 * 4 / 120
    assert spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    # ties, by hand: ranks x (1, 2.5, 2.5, 4), y (1, 3, 2, 4): 4.5 / sqrt(4.5 * 5)
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(3 / math.sqrt(10))
    # monotone but not linear: ranks only
    assert spearman([0.1, 0.2, 0.9], [1, 100, 101]) == 1.0


def test_spearman_undefined_and_errors() -> None:
    assert spearman([], []) is None
    assert spearman([0.5], [1.0]) is None
    assert spearman([1, 1, 1], [0, 0.5, 1]) is None  # the generated tests rank nothing
    assert spearman([0, 0.5, 1], [1, 1, 1]) is None  # every candidate equally right
    with pytest.raises(ValueError):
        spearman([1, 2], [1, 2, 3])
    with pytest.raises(ValueError):
        spearman([1, float("nan")], [1, 2])


def test_spearman_matches_scipy_with_ties() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(0)
    for _ in range(50):
        n = rng.randint(2, 12)
        x = [rng.choice([0.0, 0.25, 0.5, 1.0]) for _ in range(n)]
        y = [rng.choice([0.0, 0.5, 1.0]) for _ in range(n)]
        ours = spearman(x, y)
        if ours is None:
            assert len(set(x)) < 2 or len(set(y)) < 2
        else:
            assert ours == pytest.approx(float(stats.spearmanr(x, y).statistic), abs=1e-12)


def test_pass_rates_and_fidelity() -> None:
    assert pass_rates([[True, True], [True, False], [], [False, False]]) == [1.0, 0.5, 0.0, 0.0]
    assert ut_fidelity([1.0, 0.5, 0.0], [1.0, 0.75, 0.1]) == 1.0


def test_report_averages_only_defined_problems() -> None:
    report = fidelity_report(
        {
            "a": ([1.0, 0.5, 0.0], [1.0, 0.5, 0.0]),  # 1.0
            "b": ([0.0, 0.5, 1.0], [1.0, 0.5, 0.0]),  # -1.0
            "c": ([1.0, 1.0, 1.0], [1.0, 0.5, 0.0]),  # undefined
            "d": ([1.0, 0.0, 0.5, 0.5], [1.0, 0.0, 0.0, 1.0]),
        }
    )
    assert isinstance(report, FidelityReport)
    d = report.per_problem["d"]
    assert d is not None and d == pytest.approx(spearman([1, 0, 0.5, 0.5], [1, 0, 0, 1]) or 0)
    assert report.per_problem["a"] == 1.0 and report.per_problem["b"] == -1.0
    assert report.per_problem["c"] is None and report.n_defined == 3
    assert report.mean == pytest.approx((1.0 - 1.0 + d) / 3)
    assert fidelity_report({}).mean is None
    assert fidelity_report({"x": ([1.0], [1.0])}) == FidelityReport({"x": None}, None, 0)


GT = "def clip(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n"


def test_candidate_pool_order_and_cache() -> None:
    mutants = [m.source for m in generate_mutants(GT, max_mutants=5)]
    pool = candidate_pool(GT, samples=["def clip(x, lo, hi):\n    return x\n"], max_mutants=5)
    assert pool[0] == GT and pool[1:6] == mutants and pool[6].endswith("return x\n")
    cache = MutantCache()
    assert candidate_pool(GT, max_mutants=5, mutant_cache=cache) == [GT, *mutants]
    assert candidate_pool(GT, max_mutants=5, mutant_cache=cache) == [GT, *mutants]
    assert cache.hits == 1 and cache.misses == 1
    assert len(candidate_pool(GT, max_mutants=None)) == 1 + len(generate_mutants(GT))


def test_fidelity_end_to_end_in_the_sandbox(sandbox: Sandbox) -> None:
    """A suite that tests the boundaries ranks the pool like the GT tests; a weak one cannot."""
    gt_tests = [("clip(-5, 0, 10)", 0), ("clip(15, 0, 10)", 10), ("clip(5, 0, 10)", 5)]
    strong = [("clip(-1, 0, 3)", 0), ("clip(9, 0, 3)", 3), ("clip(2, 0, 3)", 2)]
    weak = [("clip(2, 0, 3)", 2), ("clip(1, 0, 3)", 1)]
    pool = candidate_pool(GT, max_mutants=None)
    calls = [call for call, _ in gt_tests + strong + weak]
    limits = Limits(call_timeout_s=2.0, setup_timeout_s=3.0)
    results = sandbox.run([Job(code, calls=tuple(calls), limits=limits) for code in pool])

    def rates(tests: list[tuple[str, int]]) -> list[float]:
        rows = []
        for result in results:
            by_call = dict(zip(calls, result.calls))
            rows.append(
                [
                    by_call[call].ok and plain.values_equal(by_call[call].value, expected)
                    for call, expected in tests
                ]
            )
        return pass_rates(rows)

    gt_rates = rates(gt_tests)
    assert gt_rates[0] == 1.0 and len(set(gt_rates)) > 1
    strong_fidelity = ut_fidelity(rates(strong), gt_rates)
    weak_fidelity = ut_fidelity(rates(weak), gt_rates)
    assert strong_fidelity is not None and strong_fidelity > 0.5
    assert weak_fidelity is None or weak_fidelity < strong_fidelity
