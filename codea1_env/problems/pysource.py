"""Parsing Python source that a data file wrote.

:func:`ast.parse` raises :class:`RecursionError` or :class:`MemoryError` on deeply nested code
(``- - - ... 1`` a few thousand times), which slip past every ``except SyntaxError``.
:func:`parse_python` turns them into a :class:`SyntaxError`, so that a loader's one handler for
code that does not parse covers them too, and the record is refused naming its field.
"""

from __future__ import annotations

import ast

__all__ = ["parse_python"]


def parse_python(source: str) -> ast.Module:
    """:func:`ast.parse`, where nesting too deep to parse is a syntax error like any other.

    Raises:
        SyntaxError: ``source`` does not parse, or nests too deeply to parse.
    """
    try:
        return ast.parse(source)
    except (RecursionError, MemoryError):
        raise SyntaxError("nested too deeply to parse") from None
