"""The referee's verdict types: what one judgement reports about tests, suites and codes.

A :class:`Judgement` covers one problem; it holds a :class:`SuiteVerdict` per (code, suite) pair
and a :class:`TestVerdict` per kept test run against a candidate. The referee
(:mod:`codea1_env.scoring.referee`) builds them; views, trainers and evaluators read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from codea1_env.scoring.grading import SuiteGrading
from codea1_env.scoring.rewards import CoderReward, TesterReward

__all__ = ["Judgement", "SuiteVerdict", "TestVerdict"]


@dataclass(frozen=True)
class TestVerdict:
    """One kept test run against one candidate.

    Attributes:
        test: The assert as scored: ``assert call == <GT value>`` (stdio: the input text).
        valid: True when the tester's own expectation matched the GT.
        passed: True when the candidate's value equals the GT value.
        status: How the candidate's call ended (``"ok"``, ``"exception"``, ``"timeout"``, ...).
        error: The candidate's error, if any (truncated).
        source: ``"generated"``, ``"mistake_book"`` or ``"gt"``.
        agrees_with_tester: The candidate's value equals the value the TESTER claimed (its own
            expected expression, before GT correction): what a test "passes" means when the GT
            is not known, as in best-of-N selection or CURE's p00. Equals ``passed`` for a valid
            test; False when the claim did not evaluate.
        duration_s: How long the candidate's call took (the sandbox's measure, on the limits'
            ``timeout_clock``: CPU seconds by default; 0 if not run).
        wall_s: The same call's wall-clock seconds (0 if not run); with the CPU clock, the
            difference is the time the call waited (for a core, or in a sleep).

    """

    __test__ = False

    test: str
    valid: bool
    passed: bool
    status: str
    error: str = ""
    source: str = "generated"
    agrees_with_tester: bool = False
    duration_s: float = 0.0
    wall_s: float = 0.0


@dataclass(frozen=True)
class SuiteVerdict:
    """One (code, suite) pair: what the suite became after GT correction and how the code did.

    Attributes:
        grading: The GT-corrected suite.
        verdicts: One :class:`TestVerdict` per kept generated test.
        rejected: ``(line, reason, source)`` for every assert that was not kept (parse
            rejections and GT drops), so a user can see why a test did not count.
        parse_reason: Why nothing was parsed (``""`` when something was).
        coder_pair_reward: The code's reward against this suite.
        tester: The tester's reward for this suite.
        n_invalid: Invalid tests (rule 3): the grading's, plus those whose arguments did not
            evaluate or that the optional quality filter removed.

    """

    grading: SuiteGrading | None
    verdicts: tuple[TestVerdict, ...]
    rejected: tuple[tuple[int, str, str], ...]
    parse_reason: str
    coder_pair_reward: float
    tester: TesterReward
    n_invalid: int = 0

    @property
    def n_kept(self) -> int:
        """Kept tests (rule 3)."""
        return self.grading.n_kept if self.grading is not None else 0


@dataclass(frozen=True)
class Judgement:
    """Everything the referee decided about one problem.

    Attributes:
        coder_rewards: Per code: mean pair reward over its suites (golden mode: GT pass rate).
        tester_rewards: ``[code][suite]`` tester rewards.
        gt_pass_rates: Per code, pass rate on the problem's GT tests.
        coder_details: Per code, the reward and its parts.
        tester_details: ``[code][suite]`` tester rewards and their parts.
        suites: ``[code][suite]`` per-suite verdicts.
        mistake_book: Per code, verdicts on the replayed mistake-book tests.
        gt_tests: Per code, verdicts on the problem's GT tests that the GT itself passes.
        compiled: Per code, whether the program's top level ran.
        code_errors: Per code, why it did not compile/run (``""`` when it did).
        metrics: Aggregates for logging.

    """

    coder_rewards: tuple[float, ...]
    tester_rewards: tuple[tuple[float, ...], ...]
    gt_pass_rates: tuple[float, ...]
    coder_details: tuple[CoderReward, ...]
    tester_details: tuple[tuple[TesterReward, ...], ...]
    suites: tuple[tuple[SuiteVerdict, ...], ...] = ()
    mistake_book: tuple[tuple[TestVerdict, ...], ...] = ()
    gt_tests: tuple[tuple[TestVerdict, ...], ...] = ()
    compiled: tuple[bool, ...] = ()
    code_errors: tuple[str, ...] = ()
    metrics: dict[str, float] = field(default_factory=dict)
