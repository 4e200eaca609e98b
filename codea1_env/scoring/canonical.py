"""Suites already written in canonical form, read without building a syntax tree.

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
``assert ENTRY(A, A, ...) == A`` where each ``A`` is a canonical literal, as
:mod:`codea1_env.scoring.literal_grammar` defines them (numbers, strings, ``True``/``False``/
``None`` and containers of them, each written exactly as ``repr`` and :func:`ast.unparse`
write it).

Such a line is valid Python whose :func:`ast.unparse` text equals its own, so its call and
expectation are the line's own slices; a call's node count is at most its length plus one, so
a call shorter than :data:`~.testcases.MAX_EXPRESSION_NODES` characters cannot be too large.
A statement over :data:`~.testcases.MAX_STATEMENT_CHARS` is rejected as ``"too_long"``, as the
:mod:`ast` path rejects it. Longer calls, text the grammar will not read (see
:func:`~codea1_env.scoring.literal_grammar.plain_text`), keywords, names, assignments, an assert
message or a comment after the statement all send the whole suite to :mod:`ast`.
``tests/test_canonical.py`` checks the two paths agree, case for case and rejection for
rejection, on the normalized asserts of every bank and HumanEval problem's tests and on generated
lines, canonical and perturbed.
"""

from __future__ import annotations

import re

from codea1_env.scoring.literal_grammar import ANY_MARK, is_name, plain_text, reduce_literals

__all__ = ["canonical_cases"]

_STATEMENT = re.compile(rf"(?:{ANY_MARK}(?:, {ANY_MARK})*)?\) == {ANY_MARK}")
"""What is left of ``A, A...) == A`` after :func:`reduce_literals`."""
_SPLIT = ") == "


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
        ``(line, source, reason)`` (``"too_long"``: a statement over ``max_statement_chars``;
        ``"too_many"``), in line order; or None when the suite is not canonical (or holds no
        case), so that :mod:`ast` must read it.

    """
    if not is_name(entry_point) or not plain_text(code):
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
        if not source.startswith(prefix):
            return None
        reduced = reduce_literals(source[start:])
        if reduced is None or not _STATEMENT.fullmatch(reduced):
            return None
        if len(source) > max_statement_chars:  # a valid assert, too long: as ast rejects it
            rejected.append((number, source, "too_long"))
            continue
        if source.count(_SPLIT) != 1:
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
