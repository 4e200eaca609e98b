"""Kept as a documented import path; the code lives in :mod:`codea1_env.envs.tokens`."""

from codea1_env.envs.tokens import (
    DEFAULT_TESTER_VOCAB,
    END,
    SINGLE_ROLE_IDS,
    TokenEnv,
)

__all__ = [
    "DEFAULT_TESTER_VOCAB",
    "END",
    "SINGLE_ROLE_IDS",
    "TokenEnv",
]
