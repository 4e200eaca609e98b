"""Evaluation: pure metrics for code and test generation, and the sandboxed suite evaluator.

See :mod:`codea1_env.evaluation.metrics` for every metric's definition and source.

* :mod:`.metrics`: pass@k, mut@k, validity, discrimination and the other pure metrics;
* :mod:`.suite_eval`: suites run against the GT, candidate codes and the GT's mutants, batched;
* :mod:`.fidelity`: UT fidelity (UTRL), whether a suite ranks candidate codes as the GT does;
* :mod:`.coverage`: LCov@k and BCov@k, the static model of a program and its figures;
* :mod:`.coverage_arcs`: the possible arcs of a program (the AST walk behind the model).
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
    pooled_p01_p00,
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
    "pooled_p01_p00",
    "pass_at_k",
    "unit_test_accuracy",
    "validity_at_k",
]
