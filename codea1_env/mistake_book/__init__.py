"""The mistake book: per problem, the GT-corrected tests that broke candidates, with frequencies.

Code-A1's semantics (rules 5 and 8 of docs/deviations.md, as the authors' ``MistakeBook.update``
does it): one update per problem per step, over the step's valid codes of that problem, in two
phases: first ``frequency - 1`` for every (code, replayed test) that passed, an entry at 0 or below
being removed; then ``frequency + 1`` for every (code, suite, kept test) that failed, a new entry
starting at 1 after the existing ones. The top 8 entries by frequency are replayed against every
candidate the next time the problem comes up; entries of equal frequency rank oldest first, or,
with ``tie_order="authors"``, in the order the authors' in-place sort at each replay leaves
(:class:`MistakeBook`; docs/deviations.md, 22). Entries are keyed by
``(problem_id, call)``; the stored expectation is the GT's plain value for the call (the first one
recorded; GT values are deterministic, so this is the authors' key ``assert CALL == repr(GT)``).

Two implementations share the :class:`MistakeBook` interface:

- :class:`InMemoryMistakeBook`: a dict, for quick use and tests (lost when the process ends).
- :class:`SqliteMistakeBook`: a SQLite file in WAL mode, safe to share between processes and env
  instances on one machine, and crash-safe: every :meth:`~MistakeBook.apply` is one transaction.

:func:`open_mistake_book` picks one from a spec string. Both export and import the same JSON
format (:meth:`~MistakeBook.export_json`, :meth:`~MistakeBook.import_json`; :mod:`.json_format`)::

    {"format": "codea1.mistake_book", "version": 1,
     "problems": {"<problem_id>": [{"call": "f(1)", "expected": <tagged JSON>, "frequency": 2,
                                    "order": 0}, ...]}}

where ``expected`` is the :func:`codea1_env.sandbox.worker.plain.encode` form of the value, each
problem's list is in ranking order, and ``order`` is the entry's place in the problem's insertion
order (0 the oldest; it ranks later ties, so a book loaded from its export goes on as the
original would).

Modules: :mod:`.book` (the semantics: :class:`MistakeBook`, :class:`BookEntry`),
:mod:`.json_format` (the export format and its validation), :mod:`.memory` and :mod:`.sqlite`
(the backends).
"""

from __future__ import annotations

import os

from codea1_env.mistake_book.book import REPLAY_SIZE, TIE_ORDERS, BookEntry, MistakeBook
from codea1_env.mistake_book.json_format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MistakeBookFormatError,
)
from codea1_env.mistake_book.memory import InMemoryMistakeBook
from codea1_env.mistake_book.sqlite import SqliteMistakeBook, _reopen_sqlite  # noqa: F401

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "REPLAY_SIZE",
    "BookEntry",
    "InMemoryMistakeBook",
    "MistakeBook",
    "MistakeBookFormatError",
    "SqliteMistakeBook",
    "TIE_ORDERS",
    "open_mistake_book",
]


def open_mistake_book(
    spec: str | os.PathLike[str] | None = None, *, tie_order: str = "oldest"
) -> MistakeBook:
    """Open a mistake book from a spec.

    Args:
        spec: None, ``"memory"`` or ``":memory:"`` for an :class:`InMemoryMistakeBook`;
            anything else is a file path for a :class:`SqliteMistakeBook` (an optional
            ``"sqlite:"`` prefix is accepted, as in ``"sqlite:runs/book.db"``).
        tie_order: ``"oldest"`` or ``"authors"`` (see :class:`MistakeBook`).

    Raises:
        ValueError: ``spec`` is an empty string, or ``tie_order`` is not one of
            :data:`TIE_ORDERS`.

    """
    if spec is None:
        return InMemoryMistakeBook(tie_order=tie_order)
    text = os.fspath(spec)
    if text in ("memory", ":memory:"):
        return InMemoryMistakeBook(tie_order=tie_order)
    if not text.strip():
        raise ValueError("open_mistake_book: empty spec (use None or 'memory' for in-memory)")
    if text.startswith("sqlite:"):
        text = text[len("sqlite:") :]
    return SqliteMistakeBook(text, tie_order=tie_order)
