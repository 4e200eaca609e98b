"""Problems and problem sources.

A :class:`Problem` is one task with its ground truth; a :class:`ProblemSource` is where problems
come from (the built-in bank, HumanEval, JSONL files in the package schema or a dataset layout,
Hugging Face datasets, a Python list, or the procedural threshold family). The JSONL schema is
documented in :mod:`codea1_env.problems.schema`; :func:`load_source` takes spec strings such as
``"bank"``, ``"humaneval"``, ``"procedural:0"`` or ``"kodcode:data/kodcode.jsonl"``.
"""

from codea1_env.problems.adapters import LAYOUTS, adapt_record
from codea1_env.problems.jsonl import read_problems, write_problems
from codea1_env.problems.problem import IOPair, Problem
from codea1_env.problems.procedural import EDGE_TESTS, FAMILIES, OPT_IN_FAMILIES, ProceduralSource
from codea1_env.problems.schema import ProblemFormatError, problem_from_dict, problem_to_dict
from codea1_env.problems.sources import (
    BankSource,
    DatasetUnreachable,
    HFSource,
    HumanEvalSource,
    JsonlSource,
    ListSource,
    ProblemSource,
    load_source,
)

__all__ = [
    "EDGE_TESTS",
    "FAMILIES",
    "LAYOUTS",
    "OPT_IN_FAMILIES",
    "BankSource",
    "DatasetUnreachable",
    "HFSource",
    "HumanEvalSource",
    "IOPair",
    "JsonlSource",
    "ListSource",
    "Problem",
    "ProblemFormatError",
    "ProblemSource",
    "ProceduralSource",
    "adapt_record",
    "load_source",
    "problem_from_dict",
    "problem_to_dict",
    "read_problems",
    "write_problems",
]
