"""Code-A1 reward formulas (codea1_env.scoring.rewards), checked against hand-computed tables."""

from __future__ import annotations

import math

import pytest

from codea1_env.scoring import rewards
from codea1_env.scoring.rewards import (
    CoderReward,
    RewardConfig,
    adversarial_reward,
    coder_pair_reward,
    coder_reward,
    golden_reward,
    nonprintable_penalty,
    score_coder,
    validity_reward,
)
from codea1_env.scoring.testcases import TestCase, grade_suite

# --- RewardConfig --------------------------------------------------------------------------


def test_config_defaults() -> None:
    config = RewardConfig()
    assert (config.alpha, config.k, config.mode) == (0.5, 8, "code-a1")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"alpha": -0.1}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"alpha": math.nan}, "alpha"),
        ({"alpha": "0.5"}, "alpha"),
        ({"k": 0}, "k"),
        ({"k": 2.0}, "k"),
        ({"k": True}, "k"),
        ({"mode": "selfplay"}, "mode"),
    ],
)
def test_config_validation_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=f"RewardConfig.{field}"):
        RewardConfig(**kwargs)  # type: ignore[arg-type]


# --- Code LLM ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gen", "mb", "expected"),
    [
        (0.75, 0.5, 0.625),  # both kinds: (0.75 + 0.5) / 2
        (1.0, 0.0, 0.5),  # (1 + 0) / 2
        (0.25, None, 0.25),  # only generated tests: that rate
        (None, 0.4, 0.4),  # only mistake-book tests: that rate
        (None, None, 0.0),  # no tests at all: 0
        (0.0, 0.0, 0.0),
    ],
)
def test_coder_pair_reward(gen: float | None, mb: float | None, expected: float) -> None:
    assert coder_pair_reward(gen, mb) == pytest.approx(expected)


@pytest.mark.parametrize("bad", [-0.1, 1.1, math.nan])
def test_coder_pair_reward_rejects_bad_rates(bad: float) -> None:
    with pytest.raises(ValueError, match="gen_pass_rate"):
        coder_pair_reward(bad, None)


def test_coder_reward_is_mean_over_suites() -> None:
    # (0.625 + 0.5 + 0.25) / 3 = 1.375 / 3
    assert coder_reward([0.625, 0.5, 0.25]) == pytest.approx(1.375 / 3)
    assert coder_reward([]) == 0.0


@pytest.mark.parametrize(
    ("gens", "mb", "total", "gen_mean", "reason"),
    [
        # pairs: (1 + 0.5)/2 = 0.75, (0.5 + 0.5)/2 = 0.5 -> mean 0.625; gen mean (1 + 0.5)/2
        ([1.0, 0.5], 0.5, 0.625, 0.75, ""),
        # a suite with no kept test pairs with the book alone: (0.5 + (0.25+0.5)/2) / 2
        ([None, 0.25], 0.5, (0.5 + 0.375) / 2, 0.25, ""),
        # only generated tests: mean of the rates (0.25 + 0.75) / 2
        ([0.25, 0.75], None, 0.5, 0.5, ""),
        # only the mistake book (no suites at all, e.g. the tester's turn has not come)
        ([], 0.8, 0.8, None, ""),
        # nothing to be tested against
        ([None, None], None, 0.0, None, "no_tests"),
        ([], None, 0.0, None, "no_tests"),
    ],
)
def test_score_coder(
    gens: list[float | None], mb: float | None, total: float, gen_mean: float | None, reason: str
) -> None:
    result = score_coder(gens, mb)
    assert result.total == pytest.approx(total)
    assert result.gen_pass_rate == (None if gen_mean is None else pytest.approx(gen_mean))
    assert result.mb_pass_rate == mb
    assert result.reason == reason


def test_golden_mode_uses_the_gt_pass_rate_only() -> None:
    golden = RewardConfig(mode="golden")
    assert score_coder([0.0], 0.0, gt_pass_rate=0.75, config=golden) == CoderReward(
        0.75, None, None, "golden"
    )
    assert golden_reward(0.3) == 0.3
    with pytest.raises(ValueError, match="gt_pass_rate"):
        score_coder([], None, config=golden)
    # self-play uses the same formulas as code-a1
    assert score_coder([1.0], 0.0, config=RewardConfig(mode="self-play")).total == 0.5


# --- Test LLM: validity --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_kept", "n_invalid", "k", "expected"),
    [
        (8, 0, 8, 1.0),  # min(8/8, 1 - 0/8) = 1
        (6, 2, 8, 0.75),  # min(6/8, 1 - 2/8) = min(0.75, 0.75)
        (4, 0, 8, 0.5),  # min(4/8, 1) = 0.5
        (7, 3, 8, 0.625),  # min(7/8, 1 - 3/8 = 0.625)
        (0, 0, 8, 0.0),  # no kept tests: min(0, 1) = 0
        (0, 5, 8, 0.0),  # min(0, 3/8) = 0
        (2, 12, 8, 0.0),  # 1 - 12/8 < 0 -> clipped to 0
        (2, 1, 4, 0.5),  # K = 4: min(2/4, 1 - 1/4) = 0.5
        (10, 0, 8, 1.0),  # more kept than K is clipped at 1
        (3, 1, 8, 0.375),  # the worked example: 3 kept, one of them with a wrong expectation
    ],
)
def test_validity_reward(n_kept: int, n_invalid: int, k: int, expected: float) -> None:
    assert validity_reward(n_kept, n_invalid, k) == pytest.approx(expected)


def test_validity_reward_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match="n_kept"):
        validity_reward(-1, 0, 8)
    with pytest.raises(ValueError, match="k must be"):
        validity_reward(1, 0, 0)


# --- Test LLM: adversarial -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("gen_failures", "k", "mb_failures", "mb_total", "n_kept", "expected"),
    [
        (3, 8, None, None, 5, 0.375),  # kept tests only: 3/8
        (0, 8, None, None, 4, 0.0),
        (8, 8, None, 0, 8, 1.0),  # an empty replay counts as "kept tests only": 8/8
        (2, 4, None, None, 3, 0.5),  # K = 4: 2/4
        # relative to the mistake book: (gen rate - mb rate + 1) / 2
        (4, 8, 1, 4, 8, 0.625),  # (0.5 - 0.25 + 1) / 2 = 1.25 / 2
        (0, 8, 3, 3, 2, 0.0),  # the book breaks it, the suite does not: (0 - 1 + 1) / 2
        (8, 8, 0, 5, 9, 1.0),  # the suite breaks it, the book does not: (1 - 0 + 1) / 2
        (2, 8, 1, 4, 6, 0.5),  # same failure rate as the book: (0.25 - 0.25 + 1) / 2
        (0, 8, 0, 4, 3, 0.5),  # both pass everything: (0 - 0 + 1) / 2
        # replayed tests only, or nothing: 0 (not (0 - mb + 1) / 2)
        (0, 8, 0, 4, 0, 0.0),
        (0, 8, 4, 4, 0, 0.0),
        (0, 8, None, None, 0, 0.0),
    ],
)
def test_adversarial_reward(
    gen_failures: int,
    k: int,
    mb_failures: int | None,
    mb_total: int | None,
    n_kept: int,
    expected: float,
) -> None:
    got = adversarial_reward(gen_failures, k, mb_failures, mb_total, n_kept=n_kept)
    assert got == pytest.approx(expected)


@pytest.mark.parametrize(
    ("args", "n_kept", "match"),
    [
        ((9, 8, None, None), 9, "gen_failures must be <= k"),
        ((1, 8, 5, 4), 2, "mb_failures must be <= mb_total"),
        ((1, 8, None, 4), 2, "mb_failures is required"),
        ((-1, 8, None, None), 2, "gen_failures"),
        ((1, 0, None, None), 2, "k must be"),
        ((3, 8, None, None), 2, "gen_failures must be <= n_kept"),
    ],
)
def test_adversarial_reward_rejects_bad_counts(
    args: tuple[int, ...], n_kept: int, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        adversarial_reward(*args, n_kept=n_kept)  # type: ignore[arg-type]


# --- Test LLM: penalty ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0.0),
        ("assert f(1) == 2\n\tx\r\n", 0.0),  # newline, tab and CR are in string.printable
        ("a\x0b\x0c ", 0.0),  # so are vertical tab and form feed
        ("ab\x00\x01", 0.5),  # 2 of 4 characters are control characters
        ("\x1b[31m", 0.2),  # 1 ESC of 5 characters
        ("é ü 中文", 4 / 6),  # non-ASCII letters are not in string.printable (the authors' rule)
        ("\u200b" * 3 + "a", 0.75),  # zero-width spaces are not printable
    ],
)
def test_nonprintable_penalty(text: str, expected: float) -> None:
    assert nonprintable_penalty(text) == pytest.approx(expected)


# --- Test LLM: total -----------------------------------------------------------------------

CLEAN = "assert f(1) == 1\n"


@pytest.mark.parametrize(
    ("kwargs", "config", "expected"),
    [
        # 8 kept, all expectations right, candidate fails 2: 0.5 * 1 + 0.5 * 2/8 = 0.625
        (dict(n_kept=8, n_invalid=0, gen_failures=2), RewardConfig(), (0.625, 1.0, 0.25, 0.0)),
        # 8 kept of which 3 with wrong expectations (GT-corrected): R_val = min(8/8, 1 - 3/8)
        # = 0.625; R_adv = 1/8; total 0.5 * 0.625 + 0.5 * 0.125 = 0.375
        (dict(n_kept=8, n_invalid=3, gen_failures=1), RewardConfig(), (0.375, 0.625, 0.125, 0.0)),
        # nothing kept (every call raised on the GT): 0.5 * 0 + 0.5 * 0 = 0
        (dict(n_kept=0, n_invalid=6, gen_failures=0), RewardConfig(), (0.0, 0.0, 0.0, 0.0)),
        # relative to the book: fails 4 of the first 8 kept, 1 of 4 book tests:
        # R_adv = (0.5 - 0.25 + 1) / 2 = 0.625; total = 0.5 * 1 + 0.5 * 0.625 = 0.8125
        (
            dict(n_kept=8, n_invalid=0, gen_failures=4, mb_failures=1, mb_total=4),
            RewardConfig(),
            (0.8125, 1.0, 0.625, 0.0),
        ),
        # book only (no kept test): R_adv = 0; R_val = 0
        (
            dict(n_kept=0, n_invalid=2, gen_failures=0, mb_failures=1, mb_total=4),
            RewardConfig(),
            (0.0, 0.0, 0.0, 0.0),
        ),
        # alpha = 0.2: 0.2 * 0.75 + 0.8 * 3/8 = 0.15 + 0.3 = 0.45
        (
            dict(n_kept=6, n_invalid=2, gen_failures=3),
            RewardConfig(alpha=0.2),
            (0.45, 0.75, 0.375, 0),
        ),
        # alpha = 1: validity only: min(3/4, 1 - 1/4) = 0.75 with K = 4
        (
            dict(n_kept=3, n_invalid=1, gen_failures=3),
            RewardConfig(alpha=1.0, k=4),
            (0.75, 0.75, 0.75, 0),
        ),
        # alpha = 0, K = 4: adversarial only: 3/4
        (
            dict(n_kept=4, n_invalid=0, gen_failures=3),
            RewardConfig(alpha=0.0, k=4),
            (0.75, 1.0, 0.75, 0),
        ),
    ],
)
def test_tester_reward_table(
    kwargs: dict[str, int], config: RewardConfig, expected: tuple[float, float, float, float]
) -> None:
    result = rewards.tester_reward(
        n_kept=kwargs["n_kept"],
        n_invalid=kwargs["n_invalid"],
        gen_failures=kwargs["gen_failures"],
        mb_failures=kwargs.get("mb_failures"),
        mb_total=kwargs.get("mb_total"),
        candidate_ran=True,
        text=CLEAN,
        config=config,
    )
    total, r_val, r_adv, penalty = expected
    assert result.total == pytest.approx(total)
    assert result.r_val == pytest.approx(r_val)
    assert result.r_adv == pytest.approx(r_adv)
    assert result.penalty == pytest.approx(penalty)
    assert result.reason == ""


def test_tester_reward_is_minus_the_penalty_when_the_candidate_did_not_run() -> None:
    # Even a perfect suite (8 kept, 8 failures) earns 0 against code that does not compile, and
    # the penalty is still subtracted (the authors subtract it before the validity check).
    result = rewards.tester_reward(
        n_kept=8,
        n_invalid=0,
        gen_failures=8,
        mb_failures=None,
        mb_total=None,
        candidate_ran=False,
        text="\x00" + CLEAN,
    )
    assert result.total == pytest.approx(-1 / 18)
    assert result.r_adv == 0.0
    assert result.r_val == 1.0  # reported for diagnostics
    assert result.penalty == pytest.approx(1 / 18)
    assert result.reason == "candidate_did_not_run"
    clean = rewards.tester_reward(
        n_kept=8,
        n_invalid=0,
        gen_failures=8,
        mb_failures=None,
        mb_total=None,
        candidate_ran=False,
        text=CLEAN,
    )
    assert clean.total == 0.0


def test_tester_penalty_is_subtracted_without_clipping() -> None:
    # 1 kept of K=8, no failures: R = 0.5 * 1/8 + 0 = 0.0625; text is 1/2 non-printable:
    # total = 0.0625 - 0.5 = -0.4375 (not clipped at 0)
    result = rewards.tester_reward(
        n_kept=1,
        n_invalid=0,
        gen_failures=0,
        mb_failures=None,
        mb_total=None,
        candidate_ran=True,
        text="a\x00",
    )
    assert result == rewards.TesterReward(-0.4375, 0.125, 0.0, 0.5, "")


def test_rewards_from_a_graded_suite_with_duplicates() -> None:
    # Eight parsed tests; the GT raises on #2, #4 duplicates #1, #5's expectation is wrong
    # (kept with the GT value, and invalid). No cap at K: every other test is kept.
    cases = [TestCase(f"f({i})", "0", i, "") for i in (1, 2, 3, 1, 5, 6, 7, 8)]
    grading = grade_suite(
        cases,
        gt_call_ok=[True, False, True, True, True, True, True, True],
        gt_values=[1, None, 3, 1, 5, 6, 7, 8],
        expected_ok=[True] * 8,
        expected_values=[1, 2, 3, 1, 50, 6, 7, 8],
    )
    # kept: #1, #3, #5 (corrected), #6, #7, #8 = 6; invalid: #2 raised, #4 duplicate, #5 wrong
    assert (grading.n_kept, grading.n_invalid, grading.n_valid) == (6, 3, 5)
    assert grading.valid_mask == (True, True, False, True, True, True)
    # The candidate fails kept tests #3 and #5 (#5 counts although its expectation was wrong)
    # and #8; with K = 4 the tester's fail rate looks at the first 4 kept only (#1 #3 #5 #6).
    candidate_passes = (True, False, False, True, True, False)
    config = RewardConfig(k=4)
    gen_failures = sum(not p for p in candidate_passes[: config.k])
    assert gen_failures == 2
    # R_val = min(6/4, 1 - 3/4) = 0.25; R_adv = 2/4; total = 0.5 * 0.25 + 0.5 * 0.5 = 0.375
    tester = rewards.tester_reward(
        n_kept=grading.n_kept,
        n_invalid=grading.n_invalid,
        gen_failures=gen_failures,
        mb_failures=None,
        mb_total=None,
        candidate_ran=True,
        text=CLEAN,
        config=config,
    )
    assert tester.total == pytest.approx(0.375)
    # Coder: pass rate over ALL 6 kept tests (3/6) and book 1/2 -> (0.5 + 0.5) / 2 = 0.5
    gen_rate = sum(candidate_passes) / grading.n_kept
    assert score_coder([gen_rate], 0.5, config=config).total == pytest.approx(0.5)


def test_nonprintable_penalty_is_the_share_outside_string_printable():
    import random
    import string

    from codea1_env.scoring.rewards import nonprintable_penalty

    rng = random.Random(0)
    alphabet = [chr(i) for i in range(128)] + ["é", "\u200b", "😀", "\x85", "\u3000"]
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        bad = sum(ch not in string.printable for ch in text)
        assert nonprintable_penalty(text) == (bad / len(text) if text else 0.0), repr(text)
    assert nonprintable_penalty("assert f(1) == 2\n\t") == 0.0
