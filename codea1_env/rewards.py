"""Kept as a documented import path; the code lives in :mod:`codea1_env.scoring.rewards`."""

from codea1_env.scoring.rewards import (
    INLINE_POLICIES,
    MODES,
    CoderReward,
    InlinePolicy,
    RewardConfig,
    TesterReward,
    adversarial_reward,
    coder_pair_reward,
    coder_reward,
    golden_reward,
    nonprintable_penalty,
    score_coder,
    tester_reward,
    validity_reward,
)

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
