"""Kept as a documented import path; the code lives in :mod:`codea1_env.envs.duel_env`."""

from codea1_env.envs.duel_env import (
    CodeTestDuelEnv,
)

__all__ = [
    "CodeTestDuelEnv",
]
