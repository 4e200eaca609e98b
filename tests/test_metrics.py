"""Hand-built cases with known answers for every metric of codea1_env.evaluation.metrics."""

from __future__ import annotations

import math
from itertools import combinations

import pytest

from codea1_env.evaluation import metrics as m


def _pass_at_k_by_counting(n: int, c: int, k: int) -> float:
    """Brute force: the share of k-subsets of the n samples that contain a correct one."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 0, 1), (5, 1, 1), (5, 2, 3), (6, 3, 2), (4, 4, 4)])
def test_pass_at_k_matches_counting(n: int, c: int, k: int) -> None:
    assert m.pass_at_k(n, c, k) == pytest.approx(_pass_at_k_by_counting(n, c, k))


def test_pass_at_k_known_values_and_stability() -> None:
    assert m.pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert m.pass_at_k(2, 1, 2) == 1.0
    # 1 - C(190, 10) / C(200, 10) without overflow
    expected = 1 - math.comb(190, 10) / math.comb(200, 10)
    assert m.pass_at_k(200, 10, 10) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 1, 4), (0, 0, 1), (3, 4, 1), (3, -1, 1), (3, 1, 0)])
def test_pass_at_k_rejects_bad_counts(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        m.pass_at_k(n, c, k)


def test_mean_pass_at_k_and_avg_at_k() -> None:
    assert m.mean_pass_at_k([(4, 0), (4, 4)], 1) == pytest.approx(0.5)
    assert m.mean_pass_at_k([], 1) is None
    correct = [[True, False, True, False], [False, False, False, True]]
    assert m.avg_at_k(correct, 4) == pytest.approx((0.5 + 0.25) / 2)
    assert m.avg_at_k(correct, 2) == pytest.approx((0.5 + 0.0) / 2)
    with pytest.raises(ValueError):
        m.avg_at_k([[True]], 2)


def test_validity() -> None:
    assert m.validity_at_k([True, False, True, True], 4) == 0.75
    assert m.validity_at_k([True, True], 4) == 0.5  # missing tests count as not valid
    assert m.all_valid_at_k([True, True, True, False], 3)
    assert not m.all_valid_at_k([True, True], 3)
    assert not m.all_valid_at_k([True, False, True], 3)


def test_mutation_score_and_mut_at_k() -> None:
    kills = [[False, True, False], [False, False, False], [False, False, True], [True, True, True]]
    assert m.mutation_score(kills, 1) == 0.25
    assert m.mutation_score(kills, 2) == 0.5
    assert m.mutation_score(kills, 3) == 0.75
    assert m.mutation_score([], 3) is None
    problems = [
        ([True, True], [[True, False], [False, False]]),  # 0.5
        ([True, False], [[True, True]]),  # not all valid: excluded
        ([True, True, True], [[False, False, True]]),  # k=2: 0.0
        ([True, True], []),  # no scored mutant: excluded
    ]
    assert m.mut_at_k(problems, 2) == pytest.approx(0.25)
    assert m.mut_at_k([([False], [[True]])], 1) is None


def test_discrimination_ignores_invalid_tests() -> None:
    valid = [True, False, True]
    passes = [
        [True, False, True],  # fails only the invalid test: not caught
        [False, True, True],  # fails a valid test: caught
        [True, True, True],
        [True, True, False],  # caught
    ]
    assert m.discrimination(passes, valid) == 0.5
    assert m.discrimination([], valid) is None
    with pytest.raises(ValueError):
        m.discrimination([[True]], valid)


def test_cure_accuracy_p01_p00() -> None:
    assert m.unit_test_accuracy([True, True, False, True]) == 0.75
    assert m.unit_test_accuracy([]) is None
    valid = [True, True, False]
    passes = [[True, False, True], [False, False, False]]
    p01, p00 = m.p01_p00(passes, valid)
    assert p01 == pytest.approx(1 / 4)  # wrong codes pass correct tests 1 time in 4
    assert p00 == pytest.approx(1 / 2)  # and incorrect tests 1 time in 2
    assert m.p01_p00(passes, [True, True, True])[1] is None
    # pooled over suites, each (wrong code, test) pair counts once, not each suite's mean
    other = ([[True]], [True])  # one pair: a wrong code passing a correct test
    assert m.pooled_p01_p00([(passes, valid), other]) == (pytest.approx(2 / 5), 0.5)
    with pytest.raises(ValueError, match="a row has 2 tests, valid has 1"):
        m.pooled_p01_p00([other, ([[True, False]], [True])])


def test_best_of_n_picks_most_passing_and_averages_ties() -> None:
    assert m.best_of_n([3, 5, 1], [0.0, 1.0, 0.0]) == 1.0
    assert m.best_of_n([5, 5, 1], [0.0, 1.0, 1.0]) == 0.5
    assert m.best_of_n([], []) is None
    with pytest.raises(ValueError):
        m.best_of_n([1], [])


def test_classify_mutant() -> None:
    crashing = m.classify_mutant([True, False], [True, False], [True])
    assert crashing.kind == "crashing" and crashing.kills == ()
    equivalent = m.classify_mutant([True, True], [True, True], [True, True])
    assert equivalent.kind == "equivalent"
    killed = m.classify_mutant([True], [True], [True, False])
    assert killed.kind == "scored" and killed.kills == (False, True)
    survivor = m.classify_mutant([True], [False], [True, True])
    assert survivor.kind == "scored" and survivor.kills == (False, False)
