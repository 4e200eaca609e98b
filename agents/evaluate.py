"""Kept as a documented import path; the code lives in :mod:`agents.evaluation.evaluate`."""

from agents.evaluation.evaluate import (
    EvalSettings,
    LoadedPolicy,
    RecordingSandbox,
    evaluate_policies,
    load_policy,
    markdown_table,
    select_problems,
    summarize_seeds,
)

__all__ = [
    "markdown_table",
    "summarize_seeds",
    "EvalSettings",
    "LoadedPolicy",
    "RecordingSandbox",
    "evaluate_policies",
    "load_policy",
    "select_problems",
]
