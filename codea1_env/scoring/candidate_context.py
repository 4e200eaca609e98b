"""What a candidate program runs with: alone (codea1's default) or in the authors' context.

``RewardConfig.candidate_context`` (docs/deviations.md, row 12):

* ``"alone"``: the candidate's program is run as written, in a process of its own; a name it
  uses and does not define or import (``math`` without ``import math``) is its own error.
* ``"authors"``: the program the Code-A1 authors' harness runs the candidate in
  (``evaluate`` in their ``reward.py``), rebuilt as text here and run in the same sandbox:

  1. the import statements of both the GT and the candidate, as :func:`hoist_imports` takes them
     out, one of each, sorted, at the top;
  2. the GT's program without its imports, indented in ``try:`` / ``except Exception: pass``;
  3. ``del NAME`` (in its own ``try``) of every function :func:`hoist_imports` found in the GT,
     in sorted order;
  4. the candidate's program without its imports, indented under ``if True:`` (their harness
     indents it under a ``try:`` whose ``except`` hides the error; here an exception on its top
     level is still a setup failure, which is what their harness makes of it: the code is
     invalid and none of its tests pass).

  So a candidate that forgot an import the GT has works, and it sees the GT's classes and global
  constants, as in their runs. Both programs go through ``ast.unparse`` and are indented line by
  line, as theirs are (an indented multi-line string literal gains the indentation there too).
  Stdio problems, which their harness does not have, always run alone.

Everything here only parses and rewrites text in the trusted process; nothing is executed
outside the sandbox.
"""

from __future__ import annotations

import ast
import functools
import textwrap

from codea1_env.problems.pysource import quiet_parse

__all__ = ["CANDIDATE_CONTEXTS", "authors_program", "hoist_imports"]

CANDIDATE_CONTEXTS = ("alone", "authors")
"""The values of ``RewardConfig.candidate_context``."""


class _Hoister(ast.NodeTransformer):
    """Takes out every import the walk reaches and notes every function definition it reaches.

    Function bodies are not entered (so their imports stay and nested functions are not noted);
    class bodies and compound statements are, as in the authors' ``extract_imps_fns``.
    """

    def __init__(self) -> None:
        self.imports: set[str] = set()
        self.functions: set[str] = set()

    def visit_Import(self, node: ast.Import) -> None:
        self.imports.add(ast.unparse(node))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.imports.add(ast.unparse(node))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.functions.add(node.name)
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AsyncFunctionDef:
        self.functions.add(node.name)
        return node


def hoist_imports(code: str) -> tuple[str, set[str], set[str]]:
    """``code`` without its imports, the imports taken out, and the functions defined.

    A block left empty by a removed import unparses as a block with no body, which does not
    parse again (the authors' harness then finds the code invalid; so does the sandbox). Code
    that does not parse (or is too deep for ``ast``) is returned as it is, with no imports and
    no functions.
    """
    hoister = _Hoister()
    try:
        tree = hoister.visit(quiet_parse(code))
        ast.fix_missing_locations(tree)
        return ast.unparse(tree), hoister.imports, hoister.functions
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code, set(), set()


@functools.lru_cache(maxsize=1024)
def _hoisted(code: str) -> tuple[str, frozenset[str], frozenset[str]]:
    """:func:`hoist_imports`, memoized: a step's candidates share their problem's GT."""
    rest, imports, functions = hoist_imports(code)
    return rest, frozenset(imports), frozenset(functions)


def authors_program(gt_program: str, candidate: str) -> str:
    """The candidate as the authors' harness runs it: after the GT, imports hoisted.

    Args:
        gt_program: The problem's GT program.
        candidate: The candidate's program (already extracted from the coder's answer).

    Returns:
        The program text to run in the candidate's sandbox job (see the module docstring).
    """
    candidate_code, candidate_imports, _ = hoist_imports(candidate)
    gt_code, gt_imports, gt_functions = _hoisted(gt_program)
    lines = ["\n".join(sorted(candidate_imports | gt_imports)), "try:"]
    lines.append(textwrap.indent(gt_code, "    ") if gt_code.strip() else "    pass")
    lines += ["except Exception:", "    pass"]
    for name in sorted(gt_functions):
        lines += ["try:", f"    del {name}", "except Exception:", "    pass"]
    lines.append("if True:")
    lines.append(textwrap.indent(candidate_code, "    ") if candidate_code.strip() else "    pass")
    return "\n".join(lines) + "\n"
