"""The :class:`Problem` type: one programming task with its ground truth (GT)."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from codea1_env.problems.pysource import parse_python

__all__ = ["IOPair", "Problem", "own_copies"]


@dataclass(frozen=True)
class IOPair:
    """One stdin/stdout example of a stdio problem (CodeContests/CURE style)."""

    input: str
    output: str


@dataclass(frozen=True)
class Problem:
    """A programming problem.

    Function problems (``kind == "function"``) ask for a function ``entry_point``; their GT tests
    are ``assert`` lines. Stdio problems (``kind == "stdio"``) ask for a program that reads stdin
    and writes stdout; their GT tests are :class:`IOPair` values.

    Attributes:
        task_id: Unique id within its source, e.g. ``"bank/clamp"`` or ``"HumanEval/0"``.
        prompt: What the coder sees: for function problems usually the signature and docstring.
        entry_point: Name of the function under test (empty for stdio problems).
        canonical_solution: The GT code. Either a complete program that defines ``entry_point``,
            or (HumanEval style) the body that completes ``prompt``; see :attr:`gt_program`.
        tests: GT tests, one ``assert`` statement per entry (function problems).
        io_pairs: GT input/output pairs (stdio problems).
        difficulty: Optional difficulty score in ``[0, 1]`` (0 easy).
        tags: Optional free-form tags, e.g. ``("strings", "boundary")``.
        metadata: Anything else the source carried, kept for the user.
    """

    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    tests: tuple[str, ...] = ()
    io_pairs: tuple[IOPair, ...] = ()
    difficulty: float | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def kind(self) -> str:
        """``"stdio"`` for input/output problems, else ``"function"``."""
        return "stdio" if self.io_pairs and not self.tests else "function"

    @property
    def gt_program(self) -> str:
        """The complete GT program.

        ``canonical_solution`` itself when it defines ``entry_point`` at top level (or for stdio
        problems); otherwise ``prompt + canonical_solution`` (HumanEval's convention).
        """
        if self.kind == "stdio" or _defines(self.canonical_solution, self.entry_point):
            return self.canonical_solution
        return self.prompt + self.canonical_solution


def _defines(source: str, name: str) -> bool:
    try:
        tree = parse_python(source)
    except SyntaxError:
        return False
    return name in top_level_names(tree)


def top_level_names(tree: ast.Module) -> set[str]:
    """The names a module binds at top level: defs, classes, (annotated) assignments, imports.

    The one rule for "the solution defines the entry point", for the schema's check of a record
    and for :attr:`Problem.gt_program` alike.
    """
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def own_copies(problems: Iterable[Problem]) -> list[Problem]:
    """Equal copies of ``problems``, each with a metadata dict of its own.

    ``metadata`` is the only mutable part of a :class:`Problem`; a source that reuses problems it
    converted once (the bank, HumanEval) hands each caller these, so that one caller's writes
    cannot reach another's problems.
    """
    return [dataclasses.replace(problem, metadata=dict(problem.metadata)) for problem in problems]
