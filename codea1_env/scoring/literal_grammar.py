r"""Canonical literal source: Python literals written exactly as :func:`ast.unparse` writes them.

A small grammar read with regular expressions, for the referee's fast reading of canonical
suites (:mod:`codea1_env.scoring.canonical`), which must never guess: a text in this grammar is
valid Python, its :func:`ast.unparse` text is itself, and compiling it can neither fail nor warn.

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

import re

__all__ = ["MARK", "MAX_DEPTH", "plain_text", "reduce_literals"]

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
