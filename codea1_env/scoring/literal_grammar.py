r"""Canonical literal source: Python literals written exactly as :func:`ast.unparse` writes them.

A small grammar read with regular expressions, for the referee's fast paths that must never
guess: a text in this grammar is valid Python, its :func:`ast.unparse` text is itself, and
compiling it can neither fail nor warn. Used to read canonical suites
(:mod:`codea1_env.scoring.canonical`), to tell calls on literal arguments
(:func:`is_literal_call`, :func:`codea1_env.scoring.arguments.arguments_expression`) and
expressions already in normal form (:func:`is_canonical_expression`, the monitor) and the
values of the simplest literals (:func:`simple_value`, expected sides) without building a
syntax tree.

The grammar (:func:`reduce_literals` replaces each literal by a mark, innermost first):

- an integer without leading zeros, or a float written as ``repr`` writes it in fixed notation
  (no trailing zero but in ``.0``, between 1e-4 and 1e16; with at most 15 significant digits
  that is the only way to write it, and a float token of 17 characters or more must equal its
  own ``repr``, see :func:`plain_text`), each optionally preceded by ``-`` (a unary minus, as
  :mod:`ast` reads it);
- a string in single quotes made of printable ASCII other than ``'`` and ``\``, or in double
  quotes when it holds a ``'`` and no ``"`` or ``\`` (both exactly as ``repr`` quotes);
- ``True``, ``False``, ``None``;
- a list, tuple (``()``, ``(A,)``, ``(A, B)``), non-empty set or dict of such literals,
  separated by ``", "`` and ``": "`` exactly, nested at most :data:`MAX_DEPTH` deep, whose set
  items and dict keys have a hash (so that ``ast.literal_eval`` gives its value).

A text is read only when :func:`plain_text` accepts it: printable ASCII (and line breaks), no
digit run an interpreter's integer-string limit could refuse, every long float canonical.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

__all__ = [
    "ANY_MARK",
    "MARK",
    "MAX_DEPTH",
    "UNHASHABLE_MARK",
    "is_canonical_expression",
    "is_literal_call",
    "is_name",
    "plain_text",
    "reduce_literals",
    "simple_value",
]

MAX_DEPTH = 32
"""Most container levels a canonical literal may nest (deeper: not read)."""

MARK = "\u00a7"
"""Stands for a reduced literal that has a hash (a scalar, or a tuple of such)."""
UNHASHABLE_MARK = "\u00a4"
"""Stands for a reduced list, dict or set, or a tuple holding one: a value with no hash."""
ANY_MARK = f"[{MARK}{UNHASHABLE_MARK}]"
"""A regular expression for either mark: one reduced literal. Neither is ever in (ASCII) text."""

_INT = r"(?:0|[1-9][0-9]*)"
_FLOAT = (  # fixed notation, not below 1e-4; tokens of 17 characters or more: _FLOAT_RUNS
    r"(?:0\.(?!0000)(?:[0-9]*[1-9]|0)|[1-9][0-9]*\.(?:[0-9]*[1-9]|0))"
)
_SIGNED = rf"-?(?:{_FLOAT}|{_INT})"
"""A number's text, its sign included (one token only with the boundary of :data:`_NUMBER`)."""
_NUMBER = rf"{_SIGNED}(?![0-9A-Za-z_.])"
_STRING = r"'[ -&(-\[\]-~]*'|\"(?=[^\"]*')[ !#-\[\]-~]*\""
_ATOMS = re.compile(
    r"(?=[-0-9'\"TFN])"  # the first character, checked first: half the scanning time
    rf"(?:{_STRING}|{_NUMBER}|(?:True|False|None)(?![0-9A-Za-z_]))"
)
"""One canonical scalar literal; :meth:`re.Pattern.sub` replaces each by :data:`MARK`."""

_H, _U, _A = MARK, UNHASHABLE_MARK, ANY_MARK
_HASHABLE_TUPLES = re.compile(rf"\((?:{_H},|{_H}(?:, {_H})+)?\)")
_UNHASHABLE_GROUPS = re.compile(
    rf"\[(?:{_A}(?:, {_A})*)?\]"  # list
    rf"|\((?:{_U},|(?:{_A}, )+{_U}(?:, {_A})*|{_U}(?:, {_A})+)\)"  # tuple holding one
    rf"|\{{{_H}(?:, {_H})*\}}"  # non-empty set of hashable items
    rf"|\{{(?:{_H}: {_A}(?:, {_H}: {_A})*)?\}}"  # dict with hashable keys
)
"""One container whose items are all reduced; replaced by a mark in turn."""
_ARGUMENTS = re.compile(rf"(?:{_A}(?:, {_A})*)?")

_FLOAT_RUNS = re.compile(r"[0-9.]{17,}")
"""Runs that may be float tokens of 16 digits or more: canonical only if ``repr`` writes them."""
_FLOAT_TOKEN = re.compile(r"(?:0|[1-9][0-9]*)\.[0-9]+")
_LONG_DIGITS = re.compile(r"[0-9]{600}")
"""A digit run the interpreter might refuse to convert (``sys.set_int_max_str_digits``)."""
_PRINTABLE = re.compile(r"[ -~\n]*")


def reduce_literals(text: str) -> str | None:
    """``text`` with every canonical literal reduced to a mark, innermost first.

    :data:`MARK` where the value has a hash, :data:`UNHASHABLE_MARK` where it has none. A set
    item or dict key without a hash stays unreduced (``ast.literal_eval`` would raise on it), so
    every mark stands for a value ``ast.literal_eval`` gives. None if nested too deep.
    """
    text = _ATOMS.sub(_H, text)
    for _ in range(MAX_DEPTH + 1):
        reduced = _UNHASHABLE_GROUPS.sub(_U, _HASHABLE_TUPLES.sub(_H, text))
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


def is_name(text: str) -> bool:
    """Whether ``text`` is an ASCII identifier that is not a keyword (a name a call can use)."""
    return text.isascii() and text.isidentifier() and not keyword.iskeyword(text)


def is_literal_call(text: str) -> bool:
    """Whether ``text`` is ``NAME(A, ...)`` of canonical literals ``ast.literal_eval`` accepts.

    Such a text is also its own :func:`ast.unparse` form. False means "not known": the caller
    decides with :mod:`ast`.
    """
    head, paren, rest = text.partition("(")
    if not paren or not rest.endswith(")") or not is_name(head) or not _one_line(rest):
        return False
    inner = reduce_literals(rest[:-1])
    return inner is not None and bool(_ARGUMENTS.fullmatch(inner))


def is_canonical_expression(text: str) -> bool:
    """Whether ``text`` is a canonical literal or a :func:`is_literal_call` call.

    Such a text is its own :func:`ast.unparse` form. False means "not known".
    """
    if is_literal_call(text):
        return True
    if not _one_line(text):
        return False
    reduced = reduce_literals(text)
    return reduced is not None and len(reduced) == 1 and reduced in (_H, _U)


def _one_line(text: str) -> bool:
    return "\n" not in text and plain_text(text)


_INT_TEXT = re.compile(rf"-?{_INT}")
_FLOAT_TEXT = re.compile(rf"-?{_FLOAT}")
_STRING_TEXT = re.compile(_STRING)
_NUMBERS = re.compile(rf"\[(?:{_SIGNED}(?:, {_SIGNED})*)?\]")
_CONSTANTS = {"True": True, "False": False, "None": None}


def simple_value(text: str) -> tuple[bool, Any]:
    """``(True, value)`` for the simplest canonical literals, read without a syntax tree.

    A number, a string, ``True``/``False``/``None``, or a flat list of numbers: the value
    :func:`ast.literal_eval` gives. ``(False, None)`` for anything else (the caller uses
    :mod:`ast`).
    """
    if text in _CONSTANTS:
        return True, _CONSTANTS[text]
    if not _one_line(text):
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
