"""Code-A1's reward formulas for both players, as pure functions (no I/O, no sandbox).

The referee counts passes and failures; this module turns the counts into rewards. The rules are
the authors' (rules 3-7 of docs/deviations.md, checked against ZJU-REAL/Code-A1
``code/rl/reward.py``); every formula is stated in the docstring of the function that computes it.

Counts of one suite after GT correction (see :func:`codea1_env.scoring.testcases.grade_suite`):
``n_kept`` tests are kept (those the GT ran, without duplicates, including those whose expectation
the GT corrected), ``n_invalid`` tests are invalid (raised on the GT, duplicates, wrong
expectations).

Code LLM (per code):

- per (code, suite) pair: ``(mb_pass_rate + gen_pass_rate) / 2`` when the code faced both the
  replayed mistake-book tests and kept tests, the one rate that exists otherwise, and ``0`` when it
  faced no test at all (:func:`coder_pair_reward`); ``gen_pass_rate = passed / n_kept`` over ALL
  kept tests (no cap at K);
- the code's reward is the mean of its pair rewards over its suites (:func:`coder_reward`);
- in ``"golden"`` mode it is the pass rate on the problem's GT tests (:func:`golden_reward`), 0 for
  a code that does not run.

Test LLM (per suite): ``R = alpha * R_val + (1 - alpha) * R_adv - penalty`` with

- ``R_val = clip(min(n_kept / K, 1 - n_invalid / K), 0, 1)`` (:func:`validity_reward`);
- ``gen_fail_rate`` = failures among the FIRST K kept tests / K; ``R_adv = gen_fail_rate`` with
  kept tests only, ``(gen_fail_rate - mb_fail_rate + 1) / 2`` with kept and replayed tests, ``0``
  with replayed tests only or none (:func:`adversarial_reward`);
- ``penalty`` = share of the characters of the tester's whole response that are not in
  :data:`string.printable` (:func:`nonprintable_penalty`);
- the ``alpha`` part is ``0`` when the candidate code is not valid (it does not parse or its top
  level raises); the penalty is subtracted in both cases (:func:`tester_reward`).

The total is *not* clipped at 0 after the penalty is subtracted (the authors subtract it as is),
so a tester reward can be slightly negative.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from codea1_env.scoring.candidate_context import CANDIDATE_CONTEXTS

__all__ = [
    "INLINE_POLICIES",
    "MODES",
    "InlinePolicy",
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

InlinePolicy = Literal["arguments", "anywhere"]
"""How a tester's remembered assignments are substituted (see :mod:`.testcases`)."""

INLINE_POLICIES: tuple[str, ...] = get_args(InlinePolicy)
"""How a tester's remembered assignments are substituted (:attr:`RewardConfig.inline`)."""

MODES = ("code-a1", "golden", "self-play")
"""Training modes: Code-A1 (two models), golden tests (no tester), self-play (one model)."""

_PRINTABLE = frozenset(string.printable)
_NONPRINTABLE_ASCII = re.compile("[^" + re.escape(string.printable) + "]")
"""An ASCII character outside :data:`string.printable` (the control characters but whitespace)."""


@dataclass(frozen=True)
class RewardConfig:
    """Reward settings shared by the referee, the env and the trainer.

    Attributes:
        alpha: Weight of the validity reward in the tester's reward (Code-A1: 0.5).
        k: K (Code-A1: 8), the divisor of ``R_val`` and of the tester's fail rate, which counts
            failures among the first K kept tests. The coder's pass rate uses every kept test,
            and the mistake book always replays its top 8 entries
            (:data:`codea1_env.mistake_book.REPLAY_SIZE`), whatever K is.
        mode: ``"code-a1"`` (coder vs. a separate tester), ``"golden"`` (the coder is rewarded
            by its GT test pass rate and no tester plays) or ``"self-play"`` (one model plays
            both roles; same formulas as ``"code-a1"``, the trainer shares the weights).
        inline: How the tester's remembered assignments enter its asserts: ``"arguments"``
            (the authors' rule 1: a bare remembered name passed as an argument is replaced by
            its expression) or ``"anywhere"`` (codea1's option: names are substituted anywhere
            in the call and the expected side); see :mod:`codea1_env.scoring.testcases`.
        equality: How a returned value is compared with the GT's (for a candidate's pass and a
            tester's expectation): ``"python"`` (the authors' ``==``: ``1 == 1.0 == True``,
            floats exact) or ``"strict"`` (codea1's option: types must match at every level,
            floats within ``math.isclose`` tolerances, NaN equals NaN); see
            :mod:`codea1_env.sandbox.worker.plain`.
        coverage_bonus: Weight of an optional tester bonus, LCov@K of the GT by the suite's
            first K kept tests (traced in the sandbox). 0 (off, the paper) by default.
        mutation_bonus: Weight of an optional tester bonus, the share of the GT's mutants
            (at most 8, cached per problem) killed by the suite's first K kept tests, each
            credited to the first test that kills it. 0 (off, the paper) by default.
        candidate_context: What a candidate runs with: ``"alone"`` (codea1's default: its
            program as written) or ``"authors"`` (as the authors' harness runs it: after the GT,
            with both programs' imports hoisted to the top and the GT's functions deleted, so a
            missing import the GT has, or a GT constant, works); function problems only; see
            :mod:`codea1_env.scoring.candidate_context` (docs/deviations.md, row 12).

    Raises:
        ValueError: a field is out of range; the message names the field.

    """

    alpha: float = 0.5
    k: int = 8
    mode: str = "code-a1"
    inline: InlinePolicy = "arguments"
    equality: Literal["python", "strict"] = "python"
    coverage_bonus: float = 0.0
    mutation_bonus: float = 0.0
    candidate_context: Literal["alone", "authors"] = "alone"

    def __post_init__(self) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)):
            raise ValueError(f"RewardConfig.alpha must be a number in [0, 1], got {self.alpha!r}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"RewardConfig.alpha must be in [0, 1], got {self.alpha!r}")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"RewardConfig.k must be an int >= 1, got {self.k!r}")
        if self.mode not in MODES:
            raise ValueError(f"RewardConfig.mode must be one of {MODES}, got {self.mode!r}")
        for name in ("coverage_bonus", "mutation_bonus"):
            weight = getattr(self, name)
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
                raise ValueError(f"RewardConfig.{name} must be a number >= 0, got {weight!r}")
        if self.equality not in ("python", "strict"):
            raise ValueError(
                f"RewardConfig.equality must be 'python' or 'strict', got {self.equality!r}"
            )
        if self.candidate_context not in CANDIDATE_CONTEXTS:
            raise ValueError(
                f"RewardConfig.candidate_context must be one of {CANDIDATE_CONTEXTS}, "
                f"got {self.candidate_context!r}"
            )
        if self.inline not in INLINE_POLICIES:
            raise ValueError(
                f"RewardConfig.inline must be one of {INLINE_POLICIES}, got {self.inline!r}"
            )


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
        total: ``alpha * r_val + (1 - alpha) * r_adv - penalty``, or ``-penalty`` when the
            candidate did not run.
        r_val: Validity reward (reported even when the candidate did not run).
        r_adv: Adversarial reward (0 when the candidate did not run).
        penalty: Non-printable-character penalty (reported even when the candidate did not run).
        reason: ``""`` normally; ``"candidate_did_not_run"`` when the total is forced to 0.
        coverage: Line coverage of the GT by the first K kept tests (LCov@K), when the
            optional coverage bonus is on (``RewardConfig.coverage_bonus > 0``); else 0.
        mutation: Share of the GT's mutants killed by the first K kept tests, when the
            optional mutation-kill bonus is on (``RewardConfig.mutation_bonus > 0``); else 0.

    """

    __test__ = False  # not a pytest test class

    total: float
    r_val: float
    r_adv: float
    penalty: float
    reason: str = ""
    coverage: float = 0.0
    mutation: float = 0.0


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


def validity_reward(n_kept: int, n_invalid: int, k: int) -> float:
    """``R_val = clip(min(n_kept / k, 1 - n_invalid / k), 0, 1)`` (rule 3).

    ``n_kept`` counts every kept test, including those kept with a corrected expectation;
    ``n_invalid`` counts the tests that raised on the GT, the duplicates and the wrong
    expectations (a test kept with a corrected expectation is counted in both).

    Raises:
        ValueError: a count is negative or ``k < 1``.

    """
    _check_count("n_kept", n_kept)
    _check_count("n_invalid", n_invalid)
    if _check_count("k", k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return min(max(min(n_kept / k, 1.0 - n_invalid / k), 0.0), 1.0)


def adversarial_reward(
    gen_failures: int,
    k: int,
    mb_failures: int | None = None,
    mb_total: int | None = None,
    *,
    n_kept: int,
) -> float:
    """How well a suite broke the candidate (rule 7).

    ``gen_fail_rate = gen_failures / k``, where ``gen_failures`` counts the candidate's failures
    among the FIRST ``k`` kept tests. Kept tests only: ``R_adv = gen_fail_rate``; kept and
    replayed mistake-book tests: ``R_adv = (gen_fail_rate - mb_failures / mb_total + 1) / 2``, in
    ``[0, 1]``; replayed tests only, or no test at all: ``R_adv = 0``.

    Args:
        gen_failures: Failures of the candidate among the first ``k`` kept tests.
        k: K.
        mb_failures: Failures of the candidate among the replayed mistake-book tests.
        mb_total: Number of replayed mistake-book tests.
        n_kept: Number of kept tests of the suite (``R_adv`` is 0 without kept tests).

    Raises:
        ValueError: negative counts, ``gen_failures > min(k, n_kept)``,
            ``mb_failures > mb_total``, or ``mb_failures`` missing while ``mb_total > 0``.

    """
    if _check_count("k", k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if _check_count("gen_failures", gen_failures) > k:
        raise ValueError(f"gen_failures must be <= k={k}, got {gen_failures}")
    if gen_failures > _check_count("n_kept", n_kept):
        raise ValueError(f"gen_failures must be <= n_kept={n_kept}, got {gen_failures}")
    if mb_total:
        _check_count("mb_total", mb_total)
        if mb_failures is None:
            raise ValueError("mb_failures is required when mb_total > 0")
        if _check_count("mb_failures", mb_failures) > mb_total:
            raise ValueError(f"mb_failures must be <= mb_total={mb_total}, got {mb_failures}")
    if n_kept == 0:
        return 0.0
    gen_rate = gen_failures / k
    if not mb_total:
        return gen_rate
    assert mb_failures is not None
    return (gen_rate - mb_failures / mb_total + 1.0) / 2.0


def nonprintable_penalty(text: str) -> float:
    r"""Share of the characters of ``text`` that are not in :data:`string.printable` (rule 7).

    ``string.printable`` is ASCII digits, letters, punctuation and whitespace (space, ``\t``,
    ``\n``, ``\r``, ``\x0b``, ``\x0c``): any other character, non-ASCII letters included,
    counts. 0 for empty text.
    """
    if not text:
        return 0.0
    if text.isascii() and not _NONPRINTABLE_ASCII.search(text):
        return 0.0  # the common case, without a Python-level loop over the characters
    bad = sum(1 for ch in text if ch not in _PRINTABLE)
    return bad / len(text)


def tester_reward(
    *,
    n_kept: int,
    n_invalid: int,
    gen_failures: int,
    mb_failures: int | None,
    mb_total: int | None,
    candidate_ran: bool,
    text: str,
    config: RewardConfig | None = None,
    coverage: float | None = None,
    mutation: float | None = None,
) -> TesterReward:
    """The Test LLM's reward for one suite written against one candidate code (rule 7).

    ``total = alpha * validity_reward(n_kept, n_invalid, K)
    + (1 - alpha) * adversarial_reward(gen_failures, K, mb_failures, mb_total, n_kept=n_kept)
    - nonprintable_penalty(text)`` when ``candidate_ran``; ``total = -nonprintable_penalty(text)``
    when the candidate is not valid (it did not parse or its top level raised), whatever the
    suite. Not clipped.

    Args:
        n_kept: Kept tests of the suite (see :func:`validity_reward`).
        n_invalid: Invalid tests of the suite.
        gen_failures: Candidate failures among the first K kept tests.
        mb_failures: Candidate failures among the replayed mistake-book tests (None if none).
        mb_total: Number of replayed mistake-book tests (None or 0 if none).
        candidate_ran: Whether the candidate program compiled and its top level ran.
        text: The tester's whole raw response (for the penalty).
        config: Reward settings; defaults to :class:`RewardConfig`.
        coverage: LCov@K of the GT by the suite (optional bonus; counted with weight
            ``config.coverage_bonus``, only when the candidate ran).
        mutation: Share of the GT's mutants the suite kills (optional bonus; weight
            ``config.mutation_bonus``, only when the candidate ran).

    The optional bonuses are codea1's, off by default (the paper's scoring):
    ``total += coverage_bonus * coverage + mutation_bonus * mutation``.

    """
    config = config or RewardConfig()
    r_val = validity_reward(n_kept, n_invalid, config.k)
    penalty = nonprintable_penalty(text)
    cov = _check_rate("coverage", coverage) if coverage is not None else 0.0
    mut = _check_rate("mutation", mutation) if mutation is not None else 0.0
    if not candidate_ran:
        # 0.0 - penalty, not -penalty: a zero penalty gives 0.0, not -0.0 (which logs as "-0.0")
        return TesterReward(0.0 - penalty, r_val, 0.0, penalty, "candidate_did_not_run", cov, mut)
    r_adv = adversarial_reward(gen_failures, config.k, mb_failures, mb_total, n_kept=n_kept)
    total = config.alpha * r_val + (1.0 - config.alpha) * r_adv - penalty
    total += config.coverage_bonus * cov + config.mutation_bonus * mut
    return TesterReward(total, r_val, r_adv, penalty, "", cov, mut)
