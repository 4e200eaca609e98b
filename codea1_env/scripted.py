"""Kept as a documented import path; the code lives in :mod:`codea1_env.baselines.scripted`."""

from codea1_env.baselines.scripted import (
    BoundaryTester,
    GroundTruthCoder,
    MutantCoder,
    Policy,
    RandomTester,
    RoleRouter,
    TrivialTester,
)

__all__ = [
    "BoundaryTester",
    "GroundTruthCoder",
    "MutantCoder",
    "Policy",
    "RandomTester",
    "RoleRouter",
    "TrivialTester",
]
