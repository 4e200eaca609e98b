"""Parsing Python source that a data file wrote.

:func:`ast.parse` raises :class:`RecursionError` or :class:`MemoryError` on deeply nested code
(``- - - ... 1`` a few thousand times), which slip past every ``except SyntaxError``.
:func:`parse_python` turns them into a :class:`SyntaxError`, so that a loader's one handler for
code that does not parse covers them too, and the record is refused naming its field.
"""

from __future__ import annotations

import ast
import warnings
from typing import Literal, overload

__all__ = ["parse_python", "quiet_parse"]


@overload
def quiet_parse(source: str, mode: Literal["exec"] = "exec") -> ast.Module: ...


@overload
def quiet_parse(source: str, mode: Literal["eval"]) -> ast.Expression: ...


def quiet_parse(source: str, mode: Literal["exec", "eval"] = "exec") -> ast.Module | ast.Expression:
    r""":func:`ast.parse` without the compiler's warnings (invalid escapes, ``is`` literals).

    Whether a model's text parses, and into what, must not depend on the host's warning
    filters: under ``-W error`` (or pytest's ``filterwarnings = error``) the compiler's
    ``DeprecationWarning`` or ``SyntaxWarning`` for an invalid escape such as ``"\V"`` would
    otherwise become a :class:`SyntaxError`, and a program the sandbox runs would be scored as
    one that does not parse. The referee's parses of model text and :func:`parse_python` (data
    files' code) go through it.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "eval":
            return ast.parse(source, mode="eval")
        return ast.parse(source)


def parse_python(source: str) -> ast.Module:
    """:func:`ast.parse`, where nesting too deep to parse is a syntax error like any other.

    Raises:
        SyntaxError: ``source`` does not parse, or nests too deeply to parse.
    """
    try:
        return quiet_parse(source)  # a data file's code parses the same under any warning filter
    except (RecursionError, MemoryError):
        raise SyntaxError("nested too deeply to parse") from None
