"""The mistake book's semantics: entries, the update rule, ranking, eviction, import/export.

:class:`MistakeBook` implements Code-A1's rules on top of a few storage primitives that each
backend provides (:mod:`.memory`, :mod:`.sqlite`); see :mod:`codea1_env.mistake_book` for the
rules themselves and :mod:`.json_format` for the export format.
"""

from __future__ import annotations

import abc
import contextlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from codea1_env.atomic import write_text_atomic
from codea1_env.mistake_book.json_format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MistakeBookFormatError,
    validate_rows,
)
from codea1_env.sandbox.worker import plain

__all__ = ["REPLAY_SIZE", "TIE_ORDERS", "BookEntry", "MistakeBook", "Update", "check_tie_order"]

REPLAY_SIZE = 8
"""How many entries Code-A1 replays per problem (the default of :meth:`MistakeBook.top`)."""

TIE_ORDERS = ("oldest", "authors")
"""How a book ranks entries of equal frequency (see :class:`MistakeBook`'s ``tie_order``)."""


def check_tie_order(tie_order: object) -> str:
    """Return ``tie_order`` if it is one of :data:`TIE_ORDERS`.

    Raises:
        ValueError: it is not; the message names the choices.

    """
    if not isinstance(tie_order, str) or tie_order not in TIE_ORDERS:
        raise ValueError(f"mistake book: tie_order must be one of {TIE_ORDERS}, got {tie_order!r}")
    return tie_order


_Book = TypeVar("_Book", bound="MistakeBook")


@dataclass(frozen=True)
class BookEntry:
    """One stored test.

    Attributes:
        call: Source of the entry-point call, e.g. ``"f([1, 2])"``.
        expected: The GT's plain value for the call.
        frequency: How many more candidates failed it than passed it (always >= 1).

    """

    call: str
    expected: Any
    frequency: int

    @property
    def assert_source(self) -> str:
        """The test as an assert statement: ``assert {call} == {expected as source}``."""
        return f"assert {self.call} == {plain.to_source(self.expected)}"


Update = tuple[str, str | None, int, int]
"""``(call, encoded expected or None, decrements, increments)`` for one call of one update."""


def _updates(failed: Iterable[tuple[str, Any]], passed: Iterable[str]) -> list[Update]:
    """Count the decrements and increments of one :meth:`MistakeBook.apply` per call.

    Returns:
        One :data:`Update` per call, failed calls first in order of first appearance (the order
        in which new entries are added), then calls that only passed. Raises ValueError for a
        non-plain expected value or a non-str call.

    """
    order: dict[str, list[Any]] = {}
    for item in failed:
        call, expected = item
        if not isinstance(call, str):
            raise ValueError(f"mistake book: call must be a str, got {type(call).__name__}")
        try:
            encoded = plain.dumps(expected)
        except plain.PlainDataError as exc:
            raise ValueError(
                f"mistake book: expected value of {call!r} is not plain: {exc}"
            ) from None
        slot = order.setdefault(call, [encoded, 0, 0])
        slot[2] += 1
    for call in passed:
        if not isinstance(call, str):
            raise ValueError(f"mistake book: call must be a str, got {type(call).__name__}")
        order.setdefault(call, [None, 0, 0])[1] += 1
    return [(call, enc, minus, plus) for call, (enc, minus, plus) in order.items()]


def _exported(encoded: str) -> Any:
    """The JSON export of a stored value, once it decodes as the plain data it must be."""
    plain.loads(encoded)
    return json.loads(encoded)


class MistakeBook(abc.ABC):
    """Per-problem store of tests that broke candidates (see the module docstring).

    Entries rank by frequency, highest first. Among entries of equal frequency, a problem's
    entries keep an *insertion order* (a new entry goes after every existing one), and
    ``tie_order`` says what it is:

    - ``"oldest"`` (the default, codea1's): the order entries entered the book, oldest first,
      whatever was read or replayed in between;
    - ``"authors"``: the order the authors' code leaves. Their ``get_attack_testcases`` sorts a
      problem's stored list by frequency in place (a stable sort) at every replay, and every
      update follows a replay of its problem, so before each :meth:`apply` the problem's entries
      are put in ranking order, which becomes their insertion order (docs/deviations.md, 22).

    Attributes:
        tie_order: One of :data:`TIE_ORDERS`; backends take it as a keyword argument.

    """

    tie_order: str = "oldest"

    # -- storage primitives implemented by each backend ----------------------------------

    @abc.abstractmethod
    def _ranked(self, problem_id: str, limit: int | None) -> list[tuple[str, str, int]]:
        """``(call, encoded expected, frequency)`` in ranking order, at most ``limit``."""

    @abc.abstractmethod
    def _oldest_first(self, problem_id: str) -> list[str]:
        """The problem's calls in insertion order, oldest first."""

    @abc.abstractmethod
    def _apply_updates(self, problem_id: str, updates: list[Update]) -> None:
        """Apply the updates atomically, per call: decrements, then increments.

        Decrements remove an entry at <= 0; increments re-add a removed entry, or add a new one,
        at the end of the insertion order.
        """

    @abc.abstractmethod
    def _upsert(self, rows: list[tuple[str, str, str, int]]) -> None:
        """Atomically set ``(problem_id, call) -> (encoded expected, frequency)``."""

    @abc.abstractmethod
    def _remove(self, rows: list[tuple[str, str]]) -> None:
        """Atomically delete the ``(problem_id, call)`` entries (missing ones are ignored)."""

    @abc.abstractmethod
    def size(self, problem_id: str | None = None) -> int:
        """Return the number of entries for ``problem_id``, or in the whole book when None."""

    @abc.abstractmethod
    def problems(self) -> list[str]:
        """Return the ids of the problems that have entries, sorted."""

    @abc.abstractmethod
    def clear(self) -> None:
        """Remove every entry."""

    @abc.abstractmethod
    def _atomically(self) -> contextlib.AbstractContextManager[None]:
        """A section in which reads and writes of this book see no other writer's change.

        In it the backend's own reads and writes run as one transaction (nested calls join it).
        """

    def _replace(self, rows: list[tuple[str, str, str, int]]) -> None:
        """Make ``rows`` the whole book (backends override this to do it in one transaction)."""
        self.clear()
        self._upsert(rows)

    @abc.abstractmethod
    def close(self) -> None:
        """Release resources. Idempotent."""

    def _storage(self) -> str:
        """Where the entries are kept, for error messages (a backend with a file names it)."""
        return "mistake book"

    def _read(
        self, problem_id: str, rows: list[tuple[str, str, int]], decode: Any
    ) -> list[tuple[str, Any, int]]:
        """Decode each stored row's expected value; a damaged one names the store and the row.

        Raises:
            MistakeBookFormatError: a stored value is not what :meth:`apply` writes (a book
                file edited or damaged outside codea1); the message names the file, the
                problem, the call and the field.

        """
        out = []
        for call, encoded, frequency in rows:
            if type(frequency) is not int or frequency < 1:
                raise MistakeBookFormatError(
                    f"{self._storage()}: problem {problem_id!r}, call {call!r}: field "
                    f"'frequency' is damaged ({frequency!r}; a stored frequency is an int >= 1)"
                )
            try:
                out.append((call, decode(encoded), frequency))
            except (ValueError, TypeError, RecursionError) as exc:
                raise MistakeBookFormatError(
                    f"{self._storage()}: problem {problem_id!r}, call {call!r}: field "
                    f"'expected' is damaged ({exc})"
                ) from None
        return out

    # -- the public interface -------------------------------------------------------------

    def top(self, problem_id: str, n: int = REPLAY_SIZE) -> list[BookEntry]:
        """Return the ``n`` entries to replay: highest frequency first, ties by insertion order.

        Raises:
            MistakeBookFormatError: a stored entry was damaged outside codea1 (named).

        """
        if n <= 0:
            return []
        pid = str(problem_id)  # ids are stored as text: apply() writes str()
        return [BookEntry(*row) for row in self._read(pid, self._ranked(pid, n), plain.loads)]

    def entries(self, problem_id: str) -> list[BookEntry]:
        """Return every entry of ``problem_id`` in ranking order."""
        pid = str(problem_id)
        return [BookEntry(*row) for row in self._read(pid, self._ranked(pid, None), plain.loads)]

    def apply(
        self, problem_id: str, failed: Iterable[tuple[str, Any]], passed: Iterable[str]
    ) -> None:
        """Record one step's outcomes for ``problem_id`` in one atomic transaction.

        The authors' order (rule 8): first ``frequency -= 1`` for each occurrence in ``passed``
        (calls not stored are ignored; an entry that reaches 0 or less is removed), then
        ``frequency += 1`` for each occurrence in ``failed`` (a call not stored, or just removed,
        is added with frequency 1 after every existing entry, in order of first appearance). So
        an entry at 1 that is passed twice and failed once ends at 1 *as a new entry*; an
        existing entry keeps its stored expected value.

        With ``tie_order="authors"`` the problem's entries are first put in ranking order (the
        authors' in-place sort at the replay that precedes each of their updates), in the same
        transaction.

        Args:
            problem_id: The problem.
            failed: ``(call, GT value)`` for each valid test a candidate failed (repeat a test
                once per candidate that failed it).
            passed: ``call`` for each stored test a candidate passed.

        Raises:
            ValueError: a call is not a ``str`` or an expected value is not plain data; nothing
                is changed.

        """
        updates = _updates(failed, passed)
        if not updates:
            return
        pid = str(problem_id)
        if self.tie_order != "authors":
            self._apply_updates(pid, updates)
            return
        with self._atomically():
            ranked = self._ranked(pid, None)
            if [call for call, _, _ in ranked] != self._oldest_first(pid):
                self._reorder(pid, ranked)
            self._apply_updates(pid, updates)

    def _reorder(self, problem_id: str, rows: list[tuple[str, str, int]]) -> None:
        """Make ``rows`` (all of the problem's, as :meth:`_ranked` gives them) its insertion order.

        This default removes and re-inserts the entries, which is atomic where
        :meth:`_atomically` is a transaction (SQLite); a backend without one overrides it.
        """
        self._remove([(problem_id, call) for call, _, _ in rows])
        self._upsert([(problem_id, call, encoded, freq) for call, encoded, freq in rows])

    def remove(self, problem_id: str, calls: Iterable[str]) -> int:
        """Delete the given calls of ``problem_id`` in one transaction; return how many existed."""
        wanted = set(calls)
        with self._atomically():
            present = [c for c, _, _ in self._ranked(str(problem_id), None) if c in wanted]
            if present:
                self._remove([(str(problem_id), c) for c in present])
        return len(present)

    def evict(self, *, per_problem: int | None = None, total: int | None = None) -> int:
        """Bound the book: drop the lowest-frequency entries beyond the capacities.

        Within a problem, and then across the whole book, entries are ranked by frequency
        (highest first, ties by insertion order, oldest first); everything past ``per_problem``
        entries of a problem, then past ``total`` entries overall, is removed in one transaction.

        Returns:
            The number of entries removed.
        """
        with self._atomically():  # no other writer between the ranking and the removal
            return self._evict(per_problem, total)

    def _evict(self, per_problem: int | None, total: int | None) -> int:
        doomed: list[tuple[str, str]] = []
        survivors: list[tuple[int, int, str, str]] = []  # (-frequency, order, problem, call)
        order = 0
        for pid in self.problems():
            ranked = self._ranked(pid, None)
            for rank, (call, _, freq) in enumerate(ranked):
                if per_problem is not None and rank >= per_problem:
                    doomed.append((pid, call))
                else:
                    survivors.append((-freq, order, pid, call))
                order += 1
        if total is not None and len(survivors) > total:
            survivors.sort()
            doomed.extend((pid, call) for _, _, pid, call in survivors[total:])
        if doomed:
            self._remove(doomed)
        return len(doomed)

    def to_dict(self) -> dict[str, Any]:
        """Return the whole book in the JSON export format (see the module docstring).

        Each problem's entries come in ranking order, each with its ``order``: its place in the
        problem's insertion order (0 the oldest), which decides later ties, so a book loaded
        from the export ranks every later update as this one would.
        """
        with self._atomically():  # the ranking and the insertion order of one state
            problems = {}
            for pid in self.problems():
                place = {call: index for index, call in enumerate(self._oldest_first(pid))}
                problems[pid] = [
                    {"call": c, "expected": e, "frequency": f, "order": place[c]}
                    for c, e, f in self._read(pid, self._ranked(pid, None), _exported)
                ]
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "problems": problems}

    def load_dict(self, data: Any, *, source: str = "<dict>", replace: bool = False) -> None:
        """Insert or overwrite the entries of ``data`` (export format) in one transaction.

        Each ``(problem, call)`` in ``data`` takes the file's expected value and frequency;
        entries not in ``data`` are kept unless ``replace``. New entries are inserted in the
        order their ``order`` fields give (an export's insertion order), or in the file's order
        when the entries have none (files written before the field existed), after the
        problem's existing entries.

        Args:
            data: The export format (see the module docstring).
            source: Where ``data`` came from, for error messages.
            replace: Make ``data`` the whole book: every other entry is removed, after ``data``
                was validated (in one transaction on SQLite).

        Raises:
            MistakeBookFormatError: ``data`` is malformed; the message names ``source`` and the
                offending field. Nothing is changed.

        """
        rows = validate_rows(data, source)
        if replace:
            self._replace(rows)
        else:
            self._upsert(rows)

    @classmethod
    def from_dict(cls: type[_Book], data: Any, *args: Any, **kwargs: Any) -> _Book:
        """Build a book with ``cls(*args, **kwargs)`` and load ``data`` into it."""
        book = cls(*args, **kwargs)
        try:
            book.load_dict(data)
        except BaseException:
            book.close()
            raise
        return book

    def export_json(self, path: str | os.PathLike[str]) -> None:
        """Write the book to ``path`` atomically (temporary file, fsync, rename)."""
        data = self.to_dict()
        text = json.dumps(data, indent=1, ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (a value a GT may return): escape it all
            text = json.dumps(data, indent=1, ensure_ascii=True)
        write_text_atomic(path, text)

    def import_json(self, path: str | os.PathLike[str], *, replace: bool = False) -> None:
        """Load a file written by :meth:`export_json` (see :meth:`load_dict`, and its ``replace``).

        Raises:
            MistakeBookFormatError: the file is unreadable, not JSON or malformed; the message
                names the file and the field. Nothing is changed.

        """
        name = os.fspath(path)
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise MistakeBookFormatError(
                f"{name}: cannot read a JSON mistake book: {exc}"
            ) from None
        self.load_dict(data, source=name, replace=replace)

    def __enter__(self: _Book) -> _Book:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
