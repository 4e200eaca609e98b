"""Kept as a documented import path; the code lives in :mod:`codea1_env.scoring.referee`."""

from codea1_env.scoring.referee import (
    Judgement,
    Referee,
    SuiteVerdict,
    TestVerdict,
)

__all__ = [
    "Judgement",
    "Referee",
    "SuiteVerdict",
    "TestVerdict",
]
