"""Kept as a documented import path; the code lives in :mod:`codea1_env.envs.vector`."""

from codea1_env.envs.vector import (
    CodeTestDuelVectorEnv,
)

__all__ = [
    "CodeTestDuelVectorEnv",
]
