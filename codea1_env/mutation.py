"""Kept as a documented import path; the code lives in :mod:`codea1_env.scoring.mutation`."""

from codea1_env.scoring.mutation import (
    OPERATORS,
    Mutant,
    MutantCache,
    MutationOperator,
    MutationSite,
    generate_mutants,
)

__all__ = [
    "OPERATORS",
    "Mutant",
    "MutantCache",
    "MutationOperator",
    "MutationSite",
    "generate_mutants",
]
