"""Code-A1's reward formulas for both players, as pure functions (no I/O, no sandbox).

The referee counts passes and failures; this module turns the counts into rewards. Every formula
is stated in the docstring of the function that computes it.

Code LLM (per code):

- per (code, suite) pair: ``mean(mb_pass_rate, gen_pass_rate)`` when the code faced both the
  mistake-book tests and the suite's generated tests, the one rate that exists otherwise, and
  ``0`` when it faced no test at all (:func:`coder_pair_reward`);
- the code's reward is the mean of its pair rewards over its suites (:func:`coder_reward`);
- in ``"golden"`` mode it is the pass rate on the problem's GT tests (:func:`golden_reward`).

Test LLM (per suite): ``R = alpha * R_val + (1 - alpha) * R_adv - penalty`` with

- ``R_val = clip(min(n_valid / K, 1 - n_invalid / K), 0, 1)`` (:func:`validity_reward`);
- ``R_adv = gen_failures / K`` with generated tests only, and
  ``R_adv = (gen_failures / K - mb_failures / mb_total + 1) / 2`` when mistake-book tests were
  replayed too (:func:`adversarial_reward`);
- ``penalty`` = share of non-printable characters in the tester's text
  (:func:`nonprintable_penalty`);
- ``R = 0`` when the candidate code did not compile or run (:func:`tester_reward`).

The total is *not* clipped at 0 after the penalty is subtracted (the authors subtract it as is),
so a tester reward can be slightly negative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MODES",
    "CoderReward",
    "RewardConfig",
    "TesterReward",
    "adversarial_reward",
    "coder_pair_reward",
    "coder_reward",
    "golden_reward",
    "nonprintable_penalty",
    "score_coder",
    "tester_reward",
    "validity_reward",
]

MODES = ("code-a1", "golden", "self-play")
"""Training modes: Code-A1 (two models), golden tests (no tester), self-play (one model)."""

_ALLOWED_CONTROL = frozenset("\n\t\r")


@dataclass(frozen=True)
class RewardConfig:
    """Reward settings shared by the referee, the env and the trainer.

    Attributes:
        alpha: Weight of the validity reward in the tester's reward (Code-A1: 0.5).
        k: Most generated tests counted per suite, K (Code-A1: 8).
        mode: ``"code-a1"`` (coder vs. a separate tester), ``"golden"`` (the coder is rewarded
            by its GT test pass rate and no tester plays) or ``"self-play"`` (one model plays
            both roles; same formulas as ``"code-a1"``, the trainer shares the weights).

    Raises:
        ValueError: a field is out of range; the message names the field.

    """

    alpha: float = 0.5
    k: int = 8
    mode: str = "code-a1"

    def __post_init__(self) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)):
            raise ValueError(f"RewardConfig.alpha must be a number in [0, 1], got {self.alpha!r}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"RewardConfig.alpha must be in [0, 1], got {self.alpha!r}")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"RewardConfig.k must be an int >= 1, got {self.k!r}")
        if self.mode not in MODES:
            raise ValueError(f"RewardConfig.mode must be one of {MODES}, got {self.mode!r}")


@dataclass(frozen=True)
class CoderReward:
    """A code's reward and what it came from.

    Attributes:
        total: The reward used for training.
        gen_pass_rate: Mean pass rate on the generated (GT-corrected) tests over the suites that
            had tests; None when no suite had any.
        mb_pass_rate: Pass rate on the replayed mistake-book tests; None when none were replayed.
        reason: ``""`` normally; ``"no_tests"`` when the code faced no test (reward 0);
            ``"golden"`` in golden mode (reward = GT pass rate).

    """

    total: float
    gen_pass_rate: float | None
    mb_pass_rate: float | None
    reason: str = ""


@dataclass(frozen=True)
class TesterReward:
    """A test suite's reward and its parts.

    Attributes:
        total: ``alpha * r_val + (1 - alpha) * r_adv - penalty``, or 0 when the candidate did not
            run.
        r_val: Validity reward (reported even when the candidate did not run).
        r_adv: Adversarial reward (0 when the candidate did not run).
        penalty: Non-printable-character penalty (reported even when the candidate did not run).
        reason: ``""`` normally; ``"candidate_did_not_run"`` when the total is forced to 0.

    """

    __test__ = False  # not a pytest test class

    total: float
    r_val: float
    r_adv: float
    penalty: float
    reason: str = ""


def _check_rate(name: str, value: float) -> float:
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a rate in [0, 1], got {value!r}")
    return float(value)


def _check_count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return value


def coder_pair_reward(gen_pass_rate: float | None, mb_pass_rate: float | None) -> float:
    """Reward of one code against one suite.

    ``(gen_pass_rate + mb_pass_rate) / 2`` when both kinds of tests exist; the one that exists
    otherwise; ``0`` when neither does (None means "no tests of this kind").

    Raises:
        ValueError: a rate is outside ``[0, 1]``.

    """
    rates = [
        _check_rate(name, rate)
        for name, rate in (("gen_pass_rate", gen_pass_rate), ("mb_pass_rate", mb_pass_rate))
        if rate is not None
    ]
    return sum(rates) / len(rates) if rates else 0.0


def coder_reward(pair_rewards: Sequence[float]) -> float:
    """Return a code's reward: the mean of its pair rewards over its suites (0 with none)."""
    return sum(pair_rewards) / len(pair_rewards) if pair_rewards else 0.0


def golden_reward(gt_pass_rate: float) -> float:
    """Return the "Golden Tests" baseline reward: the code's pass rate on the GT tests."""
    return _check_rate("gt_pass_rate", gt_pass_rate)


def score_coder(
    gen_pass_rates: Sequence[float | None],
    mb_pass_rate: float | None,
    *,
    gt_pass_rate: float | None = None,
    config: RewardConfig | None = None,
) -> CoderReward:
    """Score one code under ``config.mode``.

    ``"golden"``: ``total = gt_pass_rate`` (required). Otherwise: ``total =
    coder_reward([coder_pair_reward(g, mb_pass_rate) for g in gen_pass_rates])``; with no suite
    at all, the single pair ``coder_pair_reward(None, mb_pass_rate)`` is used, so a code that
    faced only mistake-book tests is rewarded by them.

    Args:
        gen_pass_rates: Per suite, the code's pass rate on that suite's kept tests (None when the
            suite kept no test).
        mb_pass_rate: The code's pass rate on the replayed mistake-book tests (None when the book
            had none for this problem). The same replay counts in every pair.
        gt_pass_rate: Pass rate on the problem's GT tests (required in golden mode).
        config: Reward settings; defaults to :class:`RewardConfig`.

    Raises:
        ValueError: golden mode without ``gt_pass_rate``, or a rate outside ``[0, 1]``.

    """
    config = config or RewardConfig()
    if config.mode == "golden":
        if gt_pass_rate is None:
            raise ValueError("score_coder: gt_pass_rate is required in golden mode")
        return CoderReward(golden_reward(gt_pass_rate), None, None, "golden")
    suites = list(gen_pass_rates) or [None]
    pairs = [coder_pair_reward(rate, mb_pass_rate) for rate in suites]
    rated = [rate for rate in suites if rate is not None]
    gen_mean = sum(rated) / len(rated) if rated else None
    reason = "no_tests" if gen_mean is None and mb_pass_rate is None else ""
    return CoderReward(coder_reward(pairs), gen_mean, mb_pass_rate, reason)


def validity_reward(n_valid: int, n_invalid: int, k: int) -> float:
    """``R_val = clip(min(n_valid / k, 1 - n_invalid / k), 0, 1)``.

    ``n_valid`` counts kept tests whose expectation matched the GT; ``n_invalid`` counts every
    other test considered (dropped because the GT failed or because of a duplicate, or kept with
    a corrected expectation).

    Raises:
        ValueError: a count is negative or ``k < 1``.

    """
    _check_count("n_valid", n_valid)
    _check_count("n_invalid", n_invalid)
    if _check_count("k", k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return min(max(min(n_valid / k, 1.0 - n_invalid / k), 0.0), 1.0)


def adversarial_reward(
    gen_failures: int, k: int, mb_failures: int | None = None, mb_total: int | None = None
) -> float:
    """How well a suite broke the candidate.

    Generated tests only (``mb_total`` None or 0): ``R_adv = gen_failures / k``. With replayed
    mistake-book tests: ``R_adv = (gen_failures / k - mb_failures / mb_total + 1) / 2``, in
    ``[0, 1]``: a suite earns more when it breaks a candidate that the book's old tests do not.

    Args:
        gen_failures: Failures of the candidate among the first ``k`` *valid* generated tests.
        k: K.
        mb_failures: Failures of the candidate among the replayed mistake-book tests.
        mb_total: Number of replayed mistake-book tests.

    Raises:
        ValueError: negative counts, ``gen_failures > k``, ``mb_failures > mb_total``, or
            ``mb_failures`` missing while ``mb_total > 0``.

    """
    if _check_count("k", k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if _check_count("gen_failures", gen_failures) > k:
        raise ValueError(f"gen_failures must be <= k={k}, got {gen_failures}")
    gen_rate = gen_failures / k
    if not mb_total:
        return gen_rate
    _check_count("mb_total", mb_total)
    if mb_failures is None:
        raise ValueError("mb_failures is required when mb_total > 0")
    if _check_count("mb_failures", mb_failures) > mb_total:
        raise ValueError(f"mb_failures must be <= mb_total={mb_total}, got {mb_failures}")
    return (gen_rate - mb_failures / mb_total + 1.0) / 2.0


def nonprintable_penalty(text: str) -> float:
    r"""Share of non-printable characters in ``text`` (0 for empty text).

    A character is printable when ``str.isprintable()`` holds for it or it is one of ``"\n"``,
    ``"\t"``, ``"\r"``.
    """
    if not text:
        return 0.0
    bad = sum(1 for ch in text if not ch.isprintable() and ch not in _ALLOWED_CONTROL)
    return bad / len(text)


def tester_reward(
    *,
    n_valid: int,
    n_invalid: int,
    gen_failures: int,
    mb_failures: int | None,
    mb_total: int | None,
    candidate_ran: bool,
    text: str,
    config: RewardConfig | None = None,
) -> TesterReward:
    """The Test LLM's reward for one suite written against one candidate code.

    ``total = alpha * validity_reward(n_valid, n_invalid, K)
    + (1 - alpha) * adversarial_reward(gen_failures, K, mb_failures, mb_total)
    - nonprintable_penalty(text)``, not clipped; ``total = 0`` when ``candidate_ran`` is False
    (the candidate did not compile or its top level failed), whatever the suite.

    Args:
        n_valid: Valid tests among those considered (see :func:`validity_reward`).
        n_invalid: Invalid tests among those considered.
        gen_failures: Candidate failures among the first K valid tests.
        mb_failures: Candidate failures among the replayed mistake-book tests (None if none).
        mb_total: Number of replayed mistake-book tests (None or 0 if none).
        candidate_ran: Whether the candidate program compiled and its top level ran.
        text: The tester's raw output (for the penalty).
        config: Reward settings; defaults to :class:`RewardConfig`.

    """
    config = config or RewardConfig()
    r_val = validity_reward(n_valid, n_invalid, config.k)
    penalty = nonprintable_penalty(text)
    if not candidate_ran:
        return TesterReward(0.0, r_val, 0.0, penalty, "candidate_did_not_run")
    r_adv = adversarial_reward(gen_failures, config.k, mb_failures, mb_total)
    total = config.alpha * r_val + (1.0 - config.alpha) * r_adv - penalty
    return TesterReward(total, r_val, r_adv, penalty)
