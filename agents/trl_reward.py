"""Kept as a documented import path; the code lives in :mod:`agents.integrations.trl`."""

from agents.integrations.trl import (
    GoldenTestReward,
    completion_text,
    make_trl_reward,
)

__all__ = [
    "GoldenTestReward",
    "completion_text",
    "make_trl_reward",
]
