"""Evaluation: pure metrics for code and test generation, and the sandboxed suite evaluator.

See :mod:`codea1_env.evaluation.metrics` for every metric's definition and source.
"""

from codea1_env.evaluation.metrics import (
    MutantOutcome,
    all_valid_at_k,
    avg_at_k,
    best_of_n,
    classify_mutant,
    discrimination,
    mean_pass_at_k,
    mut_at_k,
    mutation_score,
    p01_p00,
    pass_at_k,
    unit_test_accuracy,
    validity_at_k,
)
from codea1_env.evaluation.suite_eval import EvaluatedSuite, ProblemEvaluation, SuiteEvaluator

__all__ = [
    "EvaluatedSuite",
    "MutantOutcome",
    "ProblemEvaluation",
    "SuiteEvaluator",
    "all_valid_at_k",
    "avg_at_k",
    "best_of_n",
    "classify_mutant",
    "discrimination",
    "mean_pass_at_k",
    "mut_at_k",
    "mutation_score",
    "p01_p00",
    "pass_at_k",
    "unit_test_accuracy",
    "validity_at_k",
]
