"""Turn a Test LLM's raw text into test cases with Code-A1 semantics.

A Test LLM answers with prose, code fences and lines such as ``assert add(1, 2) == 3``. This
module extracts the code, parses it with :mod:`ast`, keeps only the shape Code-A1 accepts, and
returns every outcome as a value with a reason: :func:`parse_tests` never raises for any ``str``.
Code extraction (:func:`extract_code`, :func:`extract_fenced_blocks`) and stdio pairs
(:func:`parse_io_pairs`) live in :mod:`codea1_env.scoring.extraction` and are re-exported here.

Accepted shape (the authors' rule 1, docs/deviations.md): ``assert ENTRY(args...) == EXPECTED`` (an
optional assert message is ignored). The outer call must call ``entry_point`` by plain name (the
authors accept any call; a call that is not the entry point, ``assert len([1]) == 1``, is a listed
hole that codea1 closes); other calls inside the arguments are fine (they run in the sandbox), and
so are ``*args``/``**kwargs``. The mirrored form ``assert EXPECTED == ENTRY(args)`` is **not**
accepted: it is rejected as ``"wrong_shape"`` (the authors ignore it too).

Remembered names, two policies (``inline``):

- ``"arguments"`` (default, the authors' rule): top-level ``name = expr`` assignments (one plain
  name target) are remembered as written; in each assert, an argument (positional or keyword
  value) that is a bare remembered name is replaced by its expression. Nothing else is
  substituted: ``assert f(x + 1) == y`` keeps ``x`` and ``y`` as they are, so its call fails on
  the GT (invalid, not kept) and an expected side that does not evaluate is a wrong expectation
  (kept, invalid), as in the authors' harness.
- ``"anywhere"`` (codea1's option): assignments are inlined by AST substitution anywhere in the
  call and the expected side, transitively: after ``x = [1, 2]``, ``assert f(x) == len(x) + 1``
  becomes ``f([1, 2]) == len([1, 2]) + 1``. Simple targets (``x = e``, ``x: T = e``,
  ``a = b = e``, ``x += e`` after ``x = e``, and ``a, b = e1, e2`` with a literal tuple/list of
  the same length) are inlined; any other assignment (``a, b = g()``, ``obj.attr = e``,
  ``d[k] = e``) makes the names it binds unresolved, and an assert that uses one is rejected as
  ``"unresolved_name"``.

Duplicates are not decided here: a repeated call is a case like any other, and
:func:`grade_suite` counts it invalid once the GT has run it (rule 2).

Rejection reasons (closed set, :data:`REJECT_REASONS`):

- ``"syntax_error"``: the statement does not parse (prose lines land here too).
- ``"not_assert"``: a statement that is neither an assert nor an inlinable assignment.
- ``"not_equality"``: an assert whose test is not a single ``==`` comparison.
- ``"wrong_shape"``: ``==`` with the entry-point call on the right only (the mirrored form).
- ``"wrong_function"``: the left side calls something other than ``entry_point`` by plain name.
- ``"no_call"``: the left side of ``==`` is not a call.
- ``"unresolved_name"``: the assert uses a name bound by an assignment that cannot be inlined.
- ``"shadows_entry_point"``: an assignment rebinds ``entry_point`` (ignored, never inlined).
- ``"too_long"``: the statement, or the expression after inlining, exceeds the size limits.
- ``"too_many"``: more than ``max_cases`` cases were found; the extra ones are dropped.
- ``"cut_off"``: the code is longer than ``max_chars`` and is read up to the last line break
  before the limit; the entry (always last) is the first line left out.
- ``"missing_output"`` / ``"missing_input"``: stdio only (:func:`parse_io_pairs`), an input block
  with no output block after it, or an output block with no input before it.

Why no case was found (:attr:`ParsedTests.reason`, :data:`EMPTY_REASONS`): ``"empty"`` (blank
text), ``"syntax_error"`` (nothing parsed), ``"no_asserts"`` (code parsed but held no assert),
``"no_valid_asserts"`` (asserts were found, all rejected).

Ground-truth (GT) correction happens in the referee; its pure bookkeeping (rules 2 and 3,
:func:`grade_suite`) lives in :mod:`codea1_env.scoring.grading` and the ``"anywhere"`` policy's
AST substitution in :mod:`codea1_env.scoring.inliner`; both are re-exported here.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, replace
from typing import Any

from codea1_env.problems.pysource import quiet_parse
from codea1_env.scoring.canonical import canonical_cases
from codea1_env.scoring.extraction import (
    PYTHON_TAGS,
    ParsedIOPairs,
    Rejected,
    clip_source,
    cut_at_line,
    extract_code,
    extract_fenced_blocks,
    parse_io_pairs,
)
from codea1_env.scoring.grading import GradedTest, GradeStatus, SuiteGrading, case_key, grade_suite
from codea1_env.scoring.inliner import TOO_LARGE, UNRESOLVED, Inliner, bound_names
from codea1_env.scoring.reasons import EMPTY_REASONS, REJECT_REASONS
from codea1_env.scoring.rewards import INLINE_POLICIES, InlinePolicy
from codea1_env.scoring.unparse import node_count, unparse, unparse_counted

__all__ = [
    "EMPTY_REASONS",
    "MAX_EXPRESSION_NODES",
    "MAX_STATEMENT_CHARS",
    "REJECT_REASONS",
    "GradedTest",
    "GradeStatus",
    "INLINE_POLICIES",
    "InlinePolicy",
    "ParsedIOPairs",
    "case_key",
    "ParsedTests",
    "Rejected",
    "SuiteGrading",
    "TestCase",
    "extract_code",
    "extract_fenced_blocks",
    "grade_suite",
    "parse_io_pairs",
    "parse_tests",
]

MAX_STATEMENT_CHARS = 4000
"""Longest source of one statement considered; longer ones are rejected as ``"too_long"``."""

MAX_EXPRESSION_NODES = 2000
"""Largest AST (in nodes) of an inlined call or expected expression; larger is ``"too_long"``."""

_MAX_MERGED_LINES = 30
"""How many lines the statement-by-statement fallback joins to complete one statement."""

_MERGE_BUDGET_FACTOR = 8
"""The fallback re-parses at most this many times the code's length while joining chunks."""

_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)
"""What :func:`ast.parse`/:func:`ast.unparse` raise on hostile input (NUL bytes, deep nesting)."""


@dataclass(frozen=True)
class TestCase:
    """One accepted test: ``assert {call} == {expected}``.

    Attributes:
        call: Source of the entry-point call that runs: ``ast.unparse`` after inlining, and after
            the referee's argument materialization a call on literal arguments.
        expected: Source of the expected expression after inlining.
        line: 1-based line of the assert in the extracted code.
        source: The original assert statement as written.
        written: The call as the tester wrote it after inlining (``ast.unparse``), kept when the
            referee replaces :attr:`call` by its literal form; ``""`` means :attr:`call`.

    """

    __test__ = False  # not a pytest test class

    call: str
    expected: str
    line: int
    source: str
    written: str = ""

    @property
    def key(self) -> str:
        """The normalized call text, as the authors compare duplicates (``ast.unparse``)."""
        return self.written or self.call

    @property
    def assert_source(self) -> str:
        """The normalized assert statement."""
        return f"assert {self.call} == {self.expected}"


@dataclass(frozen=True)
class ParsedTests:
    """The result of :func:`parse_tests`.

    Attributes:
        cases: Accepted test cases, in order (repeats included: duplicates are graded), at most
            ``max_cases``.
        rejected: Everything that did not become a case, in order, with reasons.
        code: The code that was analysed (extracted from the text, truncated to ``max_chars``).
        reason: ``""`` when at least one case was found, else one of :data:`EMPTY_REASONS`.
        truncated: True when the extracted code was longer than ``max_chars`` and was cut
            (``rejected`` then ends with a ``"cut_off"`` entry).

    """

    cases: tuple[TestCase, ...]
    rejected: tuple[Rejected, ...]
    code: str
    reason: str
    truncated: bool = False

    @property
    def n_asserts(self) -> int:
        """Number of assert-like statements seen (accepted plus rejected asserts)."""
        return len(self.cases) + sum(
            r.reason not in ("syntax_error", "cut_off") for r in self.rejected
        )


def parse_tests(
    text: str,
    entry_point: str,
    *,
    max_chars: int = 20000,
    max_cases: int = 64,
    inline: InlinePolicy = "arguments",
) -> ParsedTests:
    """Parse a Test LLM's raw answer into test cases.

    Code is taken from the fenced Python blocks of ``text`` (see :func:`extract_fenced_blocks`),
    or from the whole text when it has none. Code longer than ``max_chars`` is cut at the last
    line break before the limit. When the code does not parse as a whole it is parsed statement
    by statement, so that one bad line (or a line of prose) does not lose the good asserts.

    Args:
        text: The Test LLM's whole answer. Any string is accepted.
        entry_point: Name of the function under test.
        max_chars: Most characters of extracted code analysed.
        max_cases: Most cases returned; later valid asserts are rejected as ``"too_many"``.
        inline: ``"arguments"`` (the authors' rule) or ``"anywhere"``; see the module docstring.

    Returns:
        The accepted cases, the rejected statements and, when no case was found, the reason.

    """
    if not isinstance(text, str) or not text.strip():
        return ParsedTests((), (), "", "empty")
    blocks = extract_fenced_blocks(text, PYTHON_TAGS) or extract_fenced_blocks(text, ("",))
    code, cut_off = cut_at_line("\n".join(blocks) if blocks else text, max_chars)
    parsed = _parse_code(code, entry_point, max_cases, inline)
    if cut_off is None:
        return parsed
    return replace(parsed, rejected=(*parsed.rejected, cut_off), truncated=True)


def _parse_code(code: str, entry_point: str, max_cases: int, inline: InlinePolicy) -> ParsedTests:
    """:func:`parse_tests` on the code already extracted and cut to ``max_chars``."""
    if not code.strip():
        return ParsedTests((), (), code, "no_code")
    if inline not in INLINE_POLICIES:
        raise ValueError(f"parse_tests: inline must be one of {INLINE_POLICIES}, got {inline!r}")
    if inline == "arguments":  # a canonical suite needs no syntax tree (see canonical.py)
        found = canonical_cases(
            code, entry_point, max_cases, MAX_EXPRESSION_NODES, MAX_STATEMENT_CHARS
        )
        if found is not None:
            cases_found, dropped = found
            return ParsedTests(
                tuple(TestCase(*case) for case in cases_found),
                tuple(
                    Rejected(line, clip_source(source), reason) for line, source, reason in dropped
                ),
                code,
                "",
            )
    return _parse_statements(code, entry_point, max_cases, inline)


def _parse_statements(
    code: str, entry_point: str, max_cases: int, inline: InlinePolicy
) -> ParsedTests:
    """:func:`parse_tests` with :mod:`ast`, statement by statement (every suite can take it)."""
    statements, syntax_rejects = _split_statements(code)
    parser = _SuiteParser(entry_point, max_cases, anywhere=inline == "anywhere")
    for stmt, line, source in statements:
        parser.feed(stmt, line, source)
    rejected = sorted(syntax_rejects + parser.rejected, key=lambda r: r.line)
    cases = tuple(parser.cases)
    reason = ""
    if not cases:
        if not statements:
            reason = "syntax_error"
        elif parser.n_asserts == 0:
            reason = "no_asserts"
        else:
            reason = "no_valid_asserts"
    return ParsedTests(cases, tuple(rejected), code, reason)


def _split_statements(code: str) -> tuple[list[tuple[ast.stmt, int, str]], list[Rejected]]:
    """Parse ``code`` into top-level statements, falling back to chunk-by-chunk parsing.

    Returns:
        ``(statement, line, source)`` triples and the chunks rejected as ``"syntax_error"``.

    """
    tree = _try_parse(code)
    lines = code.split("\n")
    if tree is not None:
        return [(s, s.lineno, _segment(lines, s)) for s in tree.body], []
    statements: list[tuple[ast.stmt, int, str]] = []
    rejects: list[Rejected] = []
    chunks = _top_level_chunks(lines)
    budget = _MERGE_BUDGET_FACTOR * len(code)  # characters the merging may re-parse in all
    i = 0
    while i < len(chunks):
        start = chunks[i][0]
        parsed, incomplete = _parse_chunk("\n".join(lines[start : chunks[i][1]]))
        j = i
        while parsed is None and incomplete and j + 1 < len(chunks) and budget > 0:
            j += 1
            if chunks[j][1] - start > _MAX_MERGED_LINES:
                break
            merged = "\n".join(lines[start : chunks[j][1]])
            budget -= len(merged)
            parsed, incomplete = _parse_chunk(merged)
        if parsed is None:
            bad = "\n".join(lines[start : chunks[i][1]]).strip()
            rejects.append(Rejected(start + 1, clip_source(bad), "syntax_error"))
            i += 1
            continue
        sub_lines = lines[start : chunks[j][1]]
        for s in parsed.body:
            statements.append((s, s.lineno + start, _segment(sub_lines, s)))
        i = j + 1
    return statements, rejects


def _top_level_chunks(lines: list[str]) -> list[tuple[int, int]]:
    """Group lines into chunks ``[start, end)``: a non-indented line and its indented followers."""
    chunks: list[tuple[int, int]] = []
    for idx, line in enumerate(lines):
        if not line.strip():
            continue
        if line[:1] in (" ", "\t") and chunks:
            chunks[-1] = (chunks[-1][0], idx + 1)
        else:
            chunks.append((idx, idx + 1))
    return chunks


_INCOMPLETE_MARKERS = ("was never closed", "unexpected EOF", "unterminated triple-quoted")
"""Syntax errors that more lines could fix; only those make the fallback join the next chunk."""


def _parse_chunk(source: str) -> tuple[ast.Module | None, bool]:
    """Parse one chunk; return ``(tree or None, whether the error looks like missing lines)``."""
    try:
        return quiet_parse(source), False
    except SyntaxError as exc:
        return None, any(marker in str(exc.msg) for marker in _INCOMPLETE_MARKERS)
    except _PARSE_ERRORS:
        return None, False


def _try_parse(source: str) -> ast.Module | None:
    try:
        return quiet_parse(source)
    except _PARSE_ERRORS:
        return None


def _segment(lines: list[str], node: ast.stmt) -> str:
    end = node.end_lineno or node.lineno
    first = lines[node.lineno - 1 : end]
    if not first:
        return ""
    if len(first) == 1:
        text = first[0][node.col_offset : node.end_col_offset]
    else:
        text = "\n".join(
            [first[0][node.col_offset :], *first[1:-1], first[-1][: node.end_col_offset]]
        )
    return text


class _SuiteParser:
    """Walks top-level statements in order, inlining assignments and collecting cases."""

    def __init__(self, entry_point: str, max_cases: int, *, anywhere: bool) -> None:
        self.entry_point = entry_point
        self.max_cases = max_cases
        self.anywhere = anywhere
        self.env: dict[str, Any] = {}  # name -> (expr, node count), or a marker
        self.cases: list[TestCase] = []
        self.rejected: list[Rejected] = []
        self.n_asserts = 0

    def reject(self, line: int, source: str, reason: str) -> None:
        self.rejected.append(Rejected(line, clip_source(source), reason))

    def feed(self, stmt: ast.stmt, line: int, source: str) -> None:
        if len(source) > MAX_STATEMENT_CHARS:
            self.n_asserts += isinstance(stmt, ast.Assert)
            self.reject(line, source, "too_long")
            return
        try:
            if isinstance(stmt, ast.Assert):
                self.n_asserts += 1
                self.feed_assert(stmt, line, source)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                self.feed_assignment(stmt, line, source)
            else:
                self.reject(line, source, "not_assert")
        except (RecursionError, MemoryError, ValueError):
            self.reject(line, source, "too_long")

    def feed_assignment(self, stmt: ast.stmt, line: int, source: str) -> None:
        if not self.anywhere:
            # The authors' rule: only ``name = expr`` with one plain-name target is remembered,
            # as written (no substitution into it); every other assignment is ignored.
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
            ):
                self.env[stmt.targets[0].id] = (stmt.value, Inliner({}).cost(stmt.value))
            return
        bindings: list[tuple[str, Any]] = []
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                bindings.extend(self.bind(target, stmt.value))
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is None:
                return  # a bare annotation binds nothing
            bindings.extend(self.bind(stmt.target, stmt.value))
        elif isinstance(stmt, ast.AugAssign):
            name = stmt.target.id if isinstance(stmt.target, ast.Name) else None
            if name is not None and isinstance(self.env.get(name), tuple):
                combined = ast.BinOp(left=ast.Name(name, ast.Load()), op=stmt.op, right=stmt.value)
                bindings.append((name, self.inline(combined)))
            else:
                bindings.extend((n, UNRESOLVED) for n in bound_names(stmt.target))
        if any(name == self.entry_point for name, _ in bindings):
            self.reject(line, source, "shadows_entry_point")
        for name, value in bindings:
            if name != self.entry_point:
                self.env[name] = value

    def bind(self, target: ast.expr, value: ast.expr) -> list[tuple[str, Any]]:
        """Return ``(name, inlined value or UNRESOLVED)`` for each name ``target`` binds."""
        if isinstance(target, ast.Name):
            return [(target.id, self.inline(value))]
        if (
            isinstance(target, (ast.Tuple, ast.List))
            and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
            and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
        ):
            out: list[tuple[str, Any]] = []
            for sub_target, sub_value in zip(target.elts, value.elts, strict=True):
                out.extend(self.bind(sub_target, sub_value))
            return out
        return [(name, UNRESOLVED) for name in bound_names(target)]

    def inline(self, expr: ast.expr) -> Any:
        """Substitute known names into ``expr``; return ``(expr, nodes)`` or a marker string.

        The marker is :data:`TOO_LARGE` when the result would exceed
        :data:`MAX_EXPRESSION_NODES` (or a name used holds that marker), else :data:`UNRESOLVED`
        when a name used was bound by an assignment that could not be inlined. The returned
        expression may be ``expr`` itself (when no name in it is remembered) and is kept in the
        parser's memory of assignments: it is read and written out, never changed.
        """
        inliner = Inliner(self.env)
        cost, remembered = inliner.measure(expr)
        if cost > MAX_EXPRESSION_NODES:
            return TOO_LARGE
        if not remembered:  # nothing to substitute: the expression as parsed, not copied
            return (expr, cost)
        result = inliner.visit(copy.deepcopy(expr))
        if inliner.failure:
            return inliner.failure
        return (result, inliner.cost(result))

    def feed_assert(self, stmt: ast.Assert, line: int, source: str) -> None:
        test = stmt.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            self.reject(line, source, "not_equality")
            return
        if not isinstance(test.ops[0], ast.Eq):
            self.reject(line, source, "not_equality")
            return
        left, right = test.left, test.comparators[0]
        if not self.is_entry_call(left):
            if self.is_entry_call(right):
                reason = "wrong_shape"
            else:
                reason = "wrong_function" if isinstance(left, ast.Call) else "no_call"
            self.reject(line, source, reason)
            return
        if self.anywhere or not isinstance(left, ast.Call):
            call, expected = self.inline(left), self.inline(right)
        else:
            call, expected = self.substitute_arguments(left), (right, 0)
        if isinstance(call, str) or isinstance(expected, str):
            failures = {f for f in (call, expected) if isinstance(f, str)}
            self.reject(line, source, TOO_LARGE if TOO_LARGE in failures else UNRESOLVED)
            return
        call_text = call[2] if len(call) > 2 else unparse(call[0])
        case = TestCase(call_text, unparse(expected[0]), line, source)
        if len(self.cases) >= self.max_cases:
            self.reject(line, source, "too_many")
        else:
            self.cases.append(case)

    def substitute_arguments(self, call: ast.Call) -> Any:
        """The authors' substitution: bare remembered names among the call's arguments only."""

        def value(node: ast.expr) -> ast.expr:
            if isinstance(node, ast.Name) and node.id in self.env:
                return self.env[node.id][0]  # only unparsed below, never changed: not copied
            return node

        resolved = ast.Call(
            func=call.func,
            args=[value(arg) for arg in call.args],
            keywords=[ast.keyword(arg=kw.arg, value=value(kw.value)) for kw in call.keywords],
        )
        try:  # the text and the node count in one pass (see unparse.py)
            text, count = unparse_counted(resolved)
        except ValueError:  # an integer too long to write: too large first, as ast would say
            text, count = "", node_count(resolved)
        if count > MAX_EXPRESSION_NODES:
            return TOO_LARGE
        return (resolved, 0, text or ast.unparse(resolved))

    def is_entry_call(self, node: ast.expr) -> bool:
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == self.entry_point
        )
