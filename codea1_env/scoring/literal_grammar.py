r"""Canonical literal source: Python literals written exactly as :func:`ast.unparse` writes them.

A small grammar read with regular expressions, for the referee's fast paths that must never
guess: a text in this grammar is valid Python, its :func:`ast.unparse` text is itself, and
compiling it can neither fail nor warn. Used to read canonical suites
(:mod:`codea1_env.scoring.canonical`), to tell calls on literal arguments
(:func:`is_literal_call`, :func:`codea1_env.scoring.arguments.arguments_expression`) and
expressions already in normal form (:func:`is_canonical_expression`, the monitor) and the
values of the simplest literals (:func:`simple_value`, expected sides) without building a
syntax tree.

The grammar (:func:`reduce_literals` replaces each literal by :data:`MARK`, innermost first):

- an integer without leading zeros, or a float written as ``repr`` writes it in fixed notation
  (no trailing zero but in ``.0``, between 1e-4 and 1e16; with at most 15 significant digits
  that is the only way to write it, and a float token of 17 characters or more must equal its
  own ``repr``, see :func:`plain_text`), each optionally preceded by ``-`` (a unary minus, as
  :mod:`ast` reads it);
- a string in single quotes made of printable ASCII other than ``'`` and ``\``, or in double
  quotes when it holds a ``'`` and no ``"`` or ``\`` (both exactly as ``repr`` quotes);
- ``True``, ``False``, ``None``;
- a list, tuple (``()``, ``(A,)``, ``(A, B)``), non-empty set or dict of such literals,
  separated by ``", "`` and ``": "`` exactly, nested at most :data:`MAX_DEPTH` deep.

A text is read only when :func:`plain_text` accepts it: printable ASCII (and line breaks), no
digit run an interpreter's integer-string limit could refuse, every long float canonical.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

__all__ = [
    "MARK",
    "MAX_DEPTH",
    "is_canonical_expression",
    "is_literal_call",
    "plain_text",
    "reduce_literals",
    "simple_value",
]

MAX_DEPTH = 32
"""Most container levels a canonical literal may nest (deeper: not read)."""

MARK = "\u00a7"
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
"""One canonical scalar literal; :meth:`re.Pattern.sub` replaces each by :data:`MARK`."""

_M = MARK
_GROUPS = re.compile(
    rf"\[(?:{_M}(?:, {_M})*)?\]"  # list
    rf"|\((?:{_M},|{_M}(?:, {_M})+)?\)"  # tuple: (), (a,), (a, b...)
    rf"|\{{{_M}(?:, {_M})*\}}"  # non-empty set
    rf"|\{{(?:{_M}: {_M}(?:, {_M}: {_M})*)?\}}"  # dict
)
"""One container whose items are all reduced; replaced by :data:`MARK` in turn."""

_FLOAT_RUNS = re.compile(r"[0-9.]{17,}")
"""Runs that may be float tokens of 16 digits or more: canonical only if ``repr`` writes them."""
_FLOAT_TOKEN = re.compile(r"(?:0|[1-9][0-9]*)\.[0-9]+")
_LONG_DIGITS = re.compile(r"[0-9]{600}")
"""A digit run the interpreter might refuse to convert (``sys.set_int_max_str_digits``)."""
_PRINTABLE = re.compile(r"[ -~\n]*")


def reduce_literals(text: str) -> str | None:
    """``text`` with every canonical literal reduced to :data:`MARK`; None if too deep."""
    text = _ATOMS.sub(MARK, text)
    for _ in range(MAX_DEPTH + 1):
        reduced = _GROUPS.sub(MARK, text)
        if reduced == text:
            return text
        text = reduced
    return None


def plain_text(text: str) -> bool:
    """Whether :func:`reduce_literals` may read ``text`` at all (see the module docstring)."""
    return bool(
        text.isascii()
        and _PRINTABLE.fullmatch(text)
        and not _LONG_DIGITS.search(text)
        and not any(
            _FLOAT_TOKEN.fullmatch(run) and repr(float(run)) != run
            for run in _FLOAT_RUNS.findall(text)
        )
    )


_UNHASHABLE_MARK = "\u00a4"
"""Stands for a reduced list, dict, set, or tuple holding one: a value with no hash."""
_H, _U = MARK, _UNHASHABLE_MARK
_ANY = f"[{_H}{_U}]"
_HASHABLE_TUPLES = re.compile(rf"\((?:{_H},|{_H}(?:, {_H})+)?\)")
_UNHASHABLE_GROUPS = re.compile(
    rf"\[(?:{_ANY}(?:, {_ANY})*)?\]"  # list
    rf"|\((?:{_U},|(?:{_ANY}, )+{_U}(?:, {_ANY})*|{_U}(?:, {_ANY})+)\)"  # tuple holding one
    rf"|\{{{_H}(?:, {_H})*\}}"  # set of hashable items
    rf"|\{{(?:{_H}: {_ANY}(?:, {_H}: {_ANY})*)?\}}"  # dict with hashable keys
)
_CALL_ARGUMENTS = re.compile(rf"(?:{_ANY}(?:, {_ANY})*)?")


def _reduce_values(text: str) -> str | None:
    """Like :func:`reduce_literals`, marking what has a hash apart from what has none.

    A set item or dict key without a hash stays unreduced (``ast.literal_eval`` raises on it).
    """
    text = _ATOMS.sub(_H, text)
    for _ in range(MAX_DEPTH + 1):
        reduced = _UNHASHABLE_GROUPS.sub(_U, _HASHABLE_TUPLES.sub(_H, text))
        if reduced == text:
            return text
        text = reduced
    return None


def is_literal_call(text: str) -> bool:
    """Whether ``text`` is ``NAME(A, ...)`` whose every argument ``ast.literal_eval`` accepts.

    ``NAME`` is an ASCII identifier that is not a keyword, each ``A`` a canonical literal (see
    the module docstring) whose set items and dict keys all have a hash. False means "not
    known": the caller decides with :mod:`ast`.
    """
    head, paren, rest = text.partition("(")
    if (
        not paren
        or not rest.endswith(")")
        or not head.isascii()
        or not head.isidentifier()
        or keyword.iskeyword(head)
        or "\n" in rest
        or not plain_text(rest)
    ):
        return False
    inner = _reduce_values(rest[:-1])
    return inner is not None and bool(_CALL_ARGUMENTS.fullmatch(inner))


def is_canonical_expression(text: str) -> bool:
    """Whether ``text`` is a canonical literal or ``NAME(A, ...)`` of canonical literals.

    Such a text is its own :func:`ast.unparse` form. False means "not known".
    """
    if "\n" in text or not plain_text(text):
        return False
    reduced = reduce_literals(text)
    if reduced == MARK:
        return True
    head, paren, _ = text.partition("(")
    if not paren or not head.isidentifier() or keyword.iskeyword(head):
        return False
    inner = reduce_literals(text[len(head) + 1 : -1]) if text.endswith(")") else None
    return inner is not None and bool(_CALL_ARGUMENTS.fullmatch(inner))


_INT_TEXT = re.compile(rf"-?{_INT}")
_FLOAT_TEXT = re.compile(rf"-?{_FLOAT}")
_STRING_TEXT = re.compile(_STRING)
_NUMBERS = re.compile(rf"\[(?:-?(?:{_FLOAT}|{_INT})(?:, -?(?:{_FLOAT}|{_INT}))*)?\]")
_CONSTANTS = {"True": True, "False": False, "None": None}


def simple_value(text: str) -> tuple[bool, Any]:
    """``(True, value)`` for the simplest canonical literals, read without a syntax tree.

    A number, a string, ``True``/``False``/``None``, or a flat list of numbers: the value
    :func:`ast.literal_eval` gives. ``(False, None)`` for anything else (the caller uses
    :mod:`ast`).
    """
    if text in _CONSTANTS:
        return True, _CONSTANTS[text]
    if not plain_text(text) or "\n" in text:
        return False, None
    if _INT_TEXT.fullmatch(text):
        return True, int(text)
    if _FLOAT_TEXT.fullmatch(text):
        return True, float(text)
    if _STRING_TEXT.fullmatch(text):
        return True, text[1:-1]
    if _NUMBERS.fullmatch(text):
        items = text[1:-1]
        return True, [float(x) if "." in x else int(x) for x in items.split(", ")] if items else []
    return False, None
