"""Line and branch coverage of a program by tests: LCov@k and BCov@k (UnLeakedTestBench).

Two halves, both trusted-side and pure (no execution of the program):

* :func:`analyze_program` reads a program's source with :mod:`tokenize`, :mod:`ast` and
  ``compile`` (compiling never runs code) and returns its :class:`ProgramModel`: the executable
  statements and the possible arcs (the AST walk is :mod:`.coverage_arcs`'), with the
  definitions of coverage.py (7.13.5 and later, with branch measurement on and no exclusion
  pragmas).
* :func:`coverage_figures`, :func:`coverage_at_k`, :func:`lcov_at_k` and :func:`bcov_at_k` turn
  the raw arcs a coverage job recorded (``CallResult.coverage``, see
  :mod:`codea1_env.sandbox.worker.tracer`) into figures.

Definitions (those of coverage.py; ``L`` is a line number, ``-F`` the exit of the code object
whose first line is ``F``):

statements
    The lines where a statement starts: every line the compiled program's code objects (the
    module and everything nested in it) have bytecode for, mapped to the first line of its
    (possibly multi-line) statement, docstrings left out.
raw arcs (what the tracer records)
    ``(from, to)`` pairs of consecutive line events in one frame; a frame starts at ``-F`` and a
    real return (or an exception leaving it) ends at ``-F``. Executed lines are the positive
    ends.
possible arcs
    From the AST, per code object (module, each function, each class body): ``(a, b)`` when
    statement ``b`` can run right after statement ``a``, and ``(a, -F)`` when the code object can
    be left after ``a``. Loops go back to their header (``for`` line: the line of the iterable;
    ``while``: the line of the test); ``if``/``while`` tests that are compile-time constants have
    only their possible side; ``break``/``continue``/``return``/``raise`` jump to the loop's exit,
    its header, the function's exit, the first ``except`` handler (a ``raise`` inside a ``try``
    without handlers, or at module level, has no arc); ``finally`` blocks are entered from the
    try body's, handlers' and ``else``'s normal exits only; a ``with`` body's exits go through
    the ``with`` line and on to the next statement as one arc (coverage.py's "with jump
    fixers"); decorators chain to the ``def`` line. Lambdas, comprehensions and generator
    expressions contribute statements (their lines) but no arcs of their own. Lines of one
    multi-line statement are one line; arcs between two lines of the same statement vanish.
branch lines and branches
    A line with more than one possible arc out of it is a branch line; each of those arcs is a
    branch. A branch is covered when its arc was executed (after the same first-line mapping; an
    executed ``(a, a)`` counts as ``a``'s only possible arc when it has just one).
LCov
    covered statements / statements (a statement is covered when it is an executed line).
BCov
    covered branches / branches; **None** (undefined) for a program without a branch.

LCov@k / BCov@k: coverage of the GT solution by the **first k kept tests** (a kept test: the GT
runs its call without error; Code-A1's rule 2). A coverage job's calls each report what running
the program's top level *and* that call executed, so the union over the first ``k`` calls is the
coverage of "import the program, run these k calls" (the measurement coverage.py makes of a test
file). No kept test: LCov 0 (and BCov 0 when the program has branches).

Where this departs from coverage.py, by design: exclusion pragmas (``# pragma: no cover``,
``# pragma: no branch`` and coverage.py's default exclusion regexes) are not honoured: programs
and tests are untrusted, and a program must not exclude its own lines.

Equality with coverage.py (``tests/test_coverage.py``): every figure (statements, executed lines,
raw arcs, possible arcs, executed arcs, branch lines, missing branches, LCov, BCov) equals what
coverage.py >= 7.13.5 reports with ``branch=True``, its default C tracer and its exclusions
cleared, on 39 programs covering: if/elif/else, ``if`` on constants, for and while loops with
break/continue/else (nested), ``while True``, try/except/else/finally (nested, re-raised,
returning or breaking from inside, ``except*``), with (one item, several items, nested, a context
manager that swallows an exception, returning from inside), list/dict/set comprehensions,
generator expressions, generators (``yield``, ``yield from``, closed early), lambdas (also
multi-line), nested functions and closures, recursion, early returns, decorators (stacked,
multi-line, on classes), classes with methods and nested classes, dataclasses, multi-line
statements, module and function docstrings, ``match``, walrus and conditional expressions,
``assert``, ``global``, exceptions leaving a function. Checked in the sandbox on Python 3.11 and,
for the tracer and the static model in-process, on 3.10, 3.12 and 3.13 too.

Where the two do differ (none of it is in the equality test):

* coverage.py's pure-Python tracer (``COVERAGE_CORE=pytrace``, or ``timid=True``) skips a line
  event at an exception handler's first instruction (a fix for PyPy), so where an exception is
  swallowed by a ``with`` it records fewer raw arcs than its default C tracer; this module
  matches the C tracer.
* coverage.py's ``sys.monitoring`` core (``COVERAGE_CORE=sysmon``; the default from Python 3.14)
  derives arcs from branch events, not from consecutive line events: not matched.
* coverage.py before 7.13.5 defined possible arcs differently (entry arcs, lambdas, ``except*``,
  a module docstring counted as executed).
* Threads the program starts are not traced (coverage.py traces them).
* Python 3.12.6+ (a ``with`` exit reported on each context manager's line) and 3.14 (deferred
  annotations, a last line reported with ``return``) follow coverage.py's own version switches,
  but were not available here to check.
"""

from __future__ import annotations

import ast
import io
import token
import tokenize
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from codea1_env.evaluation.coverage_arcs import Arc, ArcFinder, statement_nodes
from codea1_env.problems.pysource import quiet_compile, quiet_parse
from codea1_env.sandbox.base import Job, Limits

__all__ = [
    "Arc",
    "CoverageFigures",
    "ProgramModel",
    "analyze_program",
    "bcov_at_k",
    "coverage_at_k",
    "coverage_figures",
    "coverage_job",
    "lcov_at_k",
    "mean_coverage",
    "union_arcs",
]

# --------------------------------------------------------------------------------------------
# The static model of a program
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProgramModel:
    """What a program's source says can be covered (see the module docstring).

    Build one with :func:`analyze_program`; the constructor also takes hand-made sets (tests,
    other languages' analyzers).

    Attributes:
        statements: First lines of the executable statements.
        arcs: Possible arcs, first-line mapped; ``(a, -F)`` leaves code object ``F``.
        multiline: Line -> first line of its statement, for lines of multi-line statements.
        with_fixers: Raw arcs that a ``with`` statement's exit replaces (None: drops).
        max_line: The program's last line number (0: unknown).
    """

    statements: frozenset[int]
    arcs: frozenset[Arc]
    multiline: Mapping[int, int] = field(default_factory=dict)
    with_fixers: Mapping[Arc, Arc | None] = field(default_factory=dict)
    max_line: int = 0

    @property
    def exit_counts(self) -> dict[int, int]:
        """Line -> number of possible arcs out of it."""
        counts: dict[int, int] = {}
        for start, _end in self.arcs:
            counts[start] = counts.get(start, 0) + 1
        return counts

    @property
    def branch_lines(self) -> frozenset[int]:
        """Lines with more than one possible arc out of them."""
        return frozenset(line for line, count in self.exit_counts.items() if count > 1)

    @property
    def branches(self) -> frozenset[Arc]:
        """The possible arcs out of branch lines."""
        lines = self.branch_lines
        return frozenset(arc for arc in self.arcs if arc[0] in lines)

    def first_line(self, line: int) -> int:
        """The first line of the statement ``line`` belongs to (negative lines likewise)."""
        if line < 0:
            return -self.multiline.get(-line, -line)
        return self.multiline.get(line, line)

    def translate_arcs(self, arcs: Iterable[Arc]) -> set[Arc]:
        """Raw arcs as coverage.py reports them: ``with`` exits fixed, first lines mapped."""
        fixers = self.with_fixers
        out: set[Arc] = set()
        for arc in arcs:
            fixed = fixers.get(arc, arc) if fixers else arc
            if fixed is not None:
                out.add((self.first_line(fixed[0]), self.first_line(fixed[1])))
        return out

    def executed_lines(self, raw_arcs: Iterable[Arc]) -> frozenset[int]:
        """The statements that executed: positive ends of the raw arcs, first-line mapped."""
        lines = {self.first_line(line) for arc in raw_arcs for line in arc if line > 0}
        return frozenset(lines & self.statements)

    def executed_arcs(self, raw_arcs: Iterable[Arc]) -> frozenset[Arc]:
        """Raw arcs as coverage.py counts them against :attr:`arcs` (see the module docstring)."""
        arcs = self.translate_arcs(raw_arcs)
        destinations: dict[int, set[int]] = {}
        for start, end in self.arcs:
            destinations.setdefault(start, set()).add(end)
        kept: set[Arc] = set()
        for start, end in arcs:
            if start != end:
                kept.add((start, end))
            else:
                only = destinations.get(start)
                if only is not None and len(only) == 1:
                    kept.add((start, next(iter(only))))
        return frozenset(self.translate_arcs(kept))


def _multiline_map(source: str) -> dict[int, int]:
    """Line -> first line, for every line of a statement spanning several lines."""
    mapping: dict[int, int] = {}
    first = 0
    readline = io.StringIO(source).readline
    for kind, text, (start_line, _), (end_line, _), _ in tokenize.generate_tokens(readline):
        if kind == token.NEWLINE:
            if first and end_line != first:
                for line in range(first, end_line + 1):
                    mapping[line] = first
            first = 0
        if text.strip() and kind != tokenize.COMMENT and not first:
            first = start_line
    return mapping


def _bytecode_lines(code: types.CodeType) -> set[int]:
    """Every line any code object of the program has an instruction on."""
    lines: set[int] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
        if current.co_name == "__annotate__":
            continue  # deferred annotations (3.14) are usually never run
        lines.update(line for _, _, line in current.co_lines() if line)
    return lines


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in statement_nodes(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                end = body[0].end_lineno or body[0].lineno
                lines.update(range(body[0].lineno, end + 1))
    return lines


def analyze_program(source: str, filename: str = "<solution>") -> ProgramModel:
    """The :class:`ProgramModel` of ``source`` (compiled, never run).

    Raises:
        SyntaxError, ValueError: ``source`` does not compile (ValueError: NUL bytes).
        tokenize.TokenError: it does not tokenize.
        RecursionError, MemoryError: it is too deeply nested to analyze.
    """
    tree = quiet_parse(source, filename=filename)  # the same under any host warning filter
    code = quiet_compile(tree, filename)
    multiline = _multiline_map(source)
    # A module with no statement has none to cover; Python 3.10 still puts its implicit
    # ``return None`` on line 1 (coverage.py, too, reads no bytecode for such a file).
    raw = _bytecode_lines(code) if tree.body else set()
    docstrings = _docstring_lines(tree)
    starts = raw - docstrings
    statements = {multiline.get(line, line) for line in starts} - docstrings
    finder = ArcFinder(multiline, {multiline.get(line, line) for line in raw})
    finder.analyze(tree)
    fixers = finder.with_fixers()
    arcs: set[Arc] = set()
    for arc in finder.arcs:
        fixed = fixers.get(arc, arc) if fixers else arc
        if fixed is None:
            continue
        start = multiline.get(fixed[0], fixed[0]) if fixed[0] > 0 else fixed[0]
        end = fixed[1]
        end = multiline.get(end, end) if end > 0 else -multiline.get(-end, -end)
        if start != end:
            arcs.add((start, end))
    max_line = source.count("\n") + 1
    return ProgramModel(
        statements=frozenset(statements),
        arcs=frozenset(arcs),
        multiline=multiline,
        with_fixers=fixers,
        max_line=max_line,
    )


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CoverageFigures:
    """Coverage of one program by one set of runs.

    Attributes:
        n_statements: Statements of the program.
        covered_lines: The statements that ran.
        n_branches: Branches of the program (possible arcs out of branch lines).
        covered_branches: The branches that ran.
    """

    n_statements: int
    covered_lines: frozenset[int]
    n_branches: int
    covered_branches: frozenset[Arc]

    @property
    def lcov(self) -> float | None:
        """Covered statements / statements (None: no statement)."""
        return len(self.covered_lines) / self.n_statements if self.n_statements else None

    @property
    def bcov(self) -> float | None:
        """Covered branches / branches (None: no branch)."""
        return len(self.covered_branches) / self.n_branches if self.n_branches else None


def union_arcs(runs: Iterable[Iterable[Arc] | None]) -> frozenset[Arc]:
    """The union of several runs' raw arcs (None, a run without coverage data, adds nothing)."""
    out: set[Arc] = set()
    for arcs in runs:
        if arcs is not None:
            out.update(arcs)
    return frozenset(out)


def coverage_figures(model: ProgramModel, raw_arcs: Iterable[Arc]) -> CoverageFigures:
    """LCov and BCov of ``model``'s program given everything its runs recorded.

    Arcs and lines the program cannot have (a forged or foreign record) count for nothing: only
    the model's statements and branches are counted.
    """
    raw = list(raw_arcs)
    branches = model.branches
    return CoverageFigures(
        n_statements=len(model.statements),
        covered_lines=model.executed_lines(raw),
        n_branches=len(branches),
        covered_branches=frozenset(model.executed_arcs(raw) & branches),
    )


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")


def coverage_at_k(
    model: ProgramModel, kept_runs: Sequence[Iterable[Arc] | None], k: int
) -> CoverageFigures:
    """Coverage of the program by its first ``k`` kept tests.

    Args:
        model: The GT program's :class:`ProgramModel`.
        kept_runs: Per kept test, in order, the raw arcs its call recorded
            (``CallResult.coverage`` of a coverage job: top level and call), None when its run
            reported none.
        k: Tests considered (fewer kept tests: all of them).
    """
    _check_k(k)
    return coverage_figures(model, union_arcs(kept_runs[:k]))


def lcov_at_k(
    model: ProgramModel, kept_runs: Sequence[Iterable[Arc] | None], k: int
) -> float | None:
    """LCov@k (UnLeakedTestBench): see :func:`coverage_at_k`; None: no statement."""
    return coverage_at_k(model, kept_runs, k).lcov


def bcov_at_k(
    model: ProgramModel, kept_runs: Sequence[Iterable[Arc] | None], k: int
) -> float | None:
    """BCov@k (UnLeakedTestBench): see :func:`coverage_at_k`; None: the program has no branch."""
    return coverage_at_k(model, kept_runs, k).bcov


def mean_coverage(values: Iterable[float | None]) -> float | None:
    """Mean over problems of LCov@k or BCov@k, leaving undefined (None) entries out."""
    defined = [value for value in values if value is not None]
    return sum(defined) / len(defined) if defined else None


def coverage_job(
    program: str, calls: Sequence[str], *, limits: Limits | None = None, tag: str = ""
) -> Job:
    """A sandbox job that runs ``program`` on ``calls`` and records coverage per call."""
    return Job(
        program=program,
        calls=tuple(calls),
        limits=limits or Limits(),
        tag=tag,
        coverage=True,
    )
