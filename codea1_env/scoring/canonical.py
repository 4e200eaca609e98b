r"""Suites already written in canonical form, read without building a syntax tree.

Most suites a referee sees are lines like ``assert f([1, 2, 3], 'ab') == 6``: one call of the
entry point on literals, compared with a literal, written exactly as :func:`ast.unparse` writes
them (scripted testers, the mistake book's normalized tests and many model answers use
``repr``). For such a line the text already *is* what :func:`~.testcases.parse_tests` would
compute from the syntax tree (the canonical call and expectation), so parsing it with :mod:`ast`
and writing it back only costs time: 0.15-0.25 ms per suite of HumanEval inputs, the largest part
of the referee's own CPU per duel.

:func:`canonical_cases` recognises such suites with regular expressions and returns their cases
directly. It answers only when it is sure; for anything else it returns None and the caller
parses with :mod:`ast` as before. "Sure" means: the code is printable ASCII, every line is blank
(spaces only), a comment starting in column 0, or an assert of exactly the form
``assert ENTRY(A, A, ...) == A`` where each ``A`` is a canonical literal:

- an integer without leading zeros, or a float written as ``repr`` writes it in fixed notation
  (no trailing zero but in ``.0``, between 1e-4 and 1e16; with at most 15 significant digits
  that is the only way to write it, and a float token of 17 characters or more is checked
  against ``repr`` itself), each optionally preceded by ``-`` (a unary minus, as :mod:`ast`
  reads it);
- a string in single quotes made of printable ASCII other than ``'`` and ``\``, or in double
  quotes when it holds a ``'`` and no ``"`` or ``\`` (both exactly as ``repr`` quotes);
- ``True``, ``False``, ``None``;
- a list, tuple (``()``, ``(A,)``, ``(A, B)``), non-empty set or dict of such literals,
  separated by ``", "`` and ``": "`` exactly, nested at most :data:`MAX_DEPTH` deep.

Such a line is valid Python whose :func:`ast.unparse` text equals its own, so its call and
expectation are the line's own slices; a call's node count is at most its length plus one, so
a call shorter than :data:`~.testcases.MAX_EXPRESSION_NODES` characters cannot be too large.
Longer calls, statements over :data:`~.testcases.MAX_STATEMENT_CHARS`, digit runs that the
interpreter's integer-string limit could refuse, keywords, names, assignments, an assert message
or a comment after the statement all send the whole suite to :mod:`ast`.
``tests/test_canonical.py`` checks the two paths agree, case for case and rejection for
rejection, on the normalized asserts of every bank and HumanEval problem's tests and on generated
lines, canonical and perturbed.
"""

from __future__ import annotations

import keyword
import re

__all__ = ["MAX_DEPTH", "canonical_cases"]

MAX_DEPTH = 32
"""Most container levels a canonical literal may nest (deeper: the :mod:`ast` path)."""

_MARK = "\u00a7"
"""Stands for a reduced literal; never in the (ASCII) text being read."""

_INT = r"(?:0|[1-9][0-9]*)"
_FLOAT = (  # fixed notation, not below 1e-4; tokens of 17 characters or more: _FLOAT_RUNS
    r"(?:0\.(?!0000)(?:[0-9]*[1-9]|0)|[1-9][0-9]*\.(?:[0-9]*[1-9]|0))"
)
_NUMBER = rf"-?(?:{_FLOAT}|{_INT})(?![0-9A-Za-z_.])"
_STRING = r"'[ -&(-\[\]-~]*'|\"(?=[^\"]*')[ !#-\[\]-~]*\""
_ATOMS = re.compile(
    r"(?=[-0-9'\"TFN])"  # the first character, checked first: half the scanning time
    rf"(?:{_STRING}|{_NUMBER}|(?:True|False|None)(?![0-9A-Za-z_]))"
)
"""One canonical scalar literal; :meth:`re.Pattern.sub` replaces each by :data:`_MARK`."""

_M = _MARK
_GROUPS = re.compile(
    rf"\[(?:{_M}(?:, {_M})*)?\]"  # list
    rf"|\((?:{_M},|{_M}(?:, {_M})+)?\)"  # tuple: (), (a,), (a, b...)
    rf"|\{{{_M}(?:, {_M})*\}}"  # non-empty set
    rf"|\{{(?:{_M}: {_M}(?:, {_M}: {_M})*)?\}}"  # dict
)
"""One container whose items are all reduced; replaced by :data:`_MARK` in turn."""

_FLOAT_RUNS = re.compile(r"[0-9.]{17,}")
"""Runs that may be float tokens of 16 digits or more: canonical only if ``repr`` writes them."""
_FLOAT_TOKEN = re.compile(r"(?:0|[1-9][0-9]*)\.[0-9]+")
_STATEMENT = re.compile(rf"(?:{_M}(?:, {_M})*)?\) == {_M}")
"""What is left of ``A, A...) == A`` after :func:`_reduced`."""
_SPLIT = ") == "
_LONG_DIGITS = re.compile(r"[0-9]{600}")
"""A digit run the interpreter might refuse to convert (``sys.set_int_max_str_digits``)."""
_PRINTABLE = re.compile(r"[ -~\n]*")


def _reduced(text: str) -> str | None:
    """``text`` with every canonical literal reduced to :data:`_MARK`; None if too deep."""
    text = _ATOMS.sub(_MARK, text)
    for _ in range(MAX_DEPTH + 1):
        reduced = _GROUPS.sub(_MARK, text)
        if reduced == text:
            return text
        text = reduced
    return None


def canonical_cases(
    code: str,
    entry_point: str,
    max_cases: int,
    max_call_nodes: int,
    max_statement_chars: int,
) -> tuple[list[tuple[str, str, int, str]], list[tuple[int, str, str]]] | None:
    """The cases of ``code`` when it is a canonical suite (see the module docstring), else None.

    Args:
        code: The extracted test code.
        entry_point: Name of the function under test.
        max_cases: Most cases kept; later asserts are returned as ``"too_many"`` rejections.
        max_call_nodes: The largest call (in :mod:`ast` nodes) the caller accepts.
        max_statement_chars: The longest statement the caller accepts.

    Returns:
        ``(cases, rejected)``: cases as ``(call, expected, line, source)`` and rejections as
        ``(line, source, "too_many")``, in line order; or None when the suite is not canonical
        (or holds no assert), so that :mod:`ast` must read it.

    """
    if (
        not entry_point.isascii()
        or not entry_point.isidentifier()
        or keyword.iskeyword(entry_point)
        or not code.isascii()
        or not _PRINTABLE.fullmatch(code)
        or _LONG_DIGITS.search(code)
        or any(
            _FLOAT_TOKEN.fullmatch(run) and repr(float(run)) != run
            for run in _FLOAT_RUNS.findall(code)
        )
    ):
        return None
    prefix = f"assert {entry_point}("
    start = len(prefix)
    call_at = len("assert ")
    cases: list[tuple[str, str, int, str]] = []
    rejected: list[tuple[int, str, str]] = []
    for number, line in enumerate(code.split("\n"), 1):
        if not line or line[0] == "#":
            continue
        source = line.rstrip(" ")
        if not source:
            continue
        if len(source) > max_statement_chars or not source.startswith(prefix):
            return None
        reduced = _reduced(source[start:])
        if reduced is None or not _STATEMENT.fullmatch(reduced) or source.count(_SPLIT) != 1:
            return None  # (a second ") == " is inside a string: rare, left to ast)
        split = source.index(_SPLIT) + 1  # the call is source[call_at:split]
        if split - call_at + 1 > max_call_nodes:  # its node count is at most its length + 1
            return None
        expected = source[split + len(_SPLIT) - 1 :]
        if len(cases) >= max_cases:
            rejected.append((number, source, "too_many"))
        else:
            cases.append((source[call_at:split], expected, number, source))
    return (cases, rejected) if cases else None
