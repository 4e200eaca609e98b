"""Parsing Python source that a data file wrote.

:func:`ast.parse` raises :class:`RecursionError` or :class:`MemoryError` on deeply nested code
(``- - - ... 1`` a few thousand times), which slip past every ``except SyntaxError``.
:func:`parse_python` turns them into a :class:`SyntaxError`, so that a loader's one handler for
code that does not parse covers them too, and the record is refused naming its field.
"""

from __future__ import annotations

import ast
import threading
import types
import warnings
from typing import Literal, overload

__all__ = ["parse_python", "quiet_compile", "quiet_parse"]

_QUIET = threading.RLock()
"""``warnings.catch_warnings`` saves and restores the process's filters: two threads inside it
at once could restore each other's ``ignore`` and leave it in place for good, so one at a time."""


@overload
def quiet_parse(
    source: str, mode: Literal["exec"] = "exec", filename: str = "<unknown>"
) -> ast.Module: ...


@overload
def quiet_parse(
    source: str, mode: Literal["eval"], filename: str = "<unknown>"
) -> ast.Expression: ...


def quiet_parse(
    source: str, mode: Literal["exec", "eval"] = "exec", filename: str = "<unknown>"
) -> ast.Module | ast.Expression:
    r""":func:`ast.parse` without the compiler's warnings (invalid escapes, ``is`` literals).

    Whether a model's text parses, and into what, must not depend on the host's warning
    filters: under ``-W error`` (or pytest's ``filterwarnings = error``) the compiler's
    ``DeprecationWarning`` or ``SyntaxWarning`` for an invalid escape such as ``"\V"`` would
    otherwise become a :class:`SyntaxError`, and a program the sandbox runs would be scored as
    one that does not parse. The referee's parses of model text, the GT's mutants, the scripted
    testers' inputs, coverage analysis and :func:`parse_python` (data files' code) go through it
    (and :func:`quiet_compile`, where the compiler runs too).
    """
    with _QUIET, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "eval":
            return ast.parse(source, filename, mode="eval")
        return ast.parse(source, filename)


def quiet_compile(source: str | ast.Module, filename: str) -> types.CodeType:
    """:func:`compile` (``exec`` mode, no inherited future flags) without the compiler's warnings.

    The compiler warns on its own, past the parse (``x is 1``: a :class:`SyntaxWarning`), so
    whether a program compiles is decided under the same rule as :func:`quiet_parse`.

    Raises:
        SyntaxError, ValueError: ``source`` does not compile (ValueError: NUL bytes).
        RecursionError, MemoryError: it nests too deeply to compile.
    """
    with _QUIET, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile(source, filename, "exec", dont_inherit=True)


def parse_python(source: str) -> ast.Module:
    """:func:`ast.parse`, where nesting too deep to parse is a syntax error like any other.

    Raises:
        SyntaxError: ``source`` does not parse, or nests too deeply to parse.
    """
    try:
        return quiet_parse(source)  # a data file's code parses the same under any warning filter
    except (RecursionError, MemoryError):
        raise SyntaxError("nested too deeply to parse") from None
