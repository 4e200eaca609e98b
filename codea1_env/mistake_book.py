"""The mistake book: per problem, the GT-corrected tests that broke candidates, with frequencies.

Code-A1's semantics (DESIGN.md rules 5 and 8, as the authors' ``MistakeBook.update`` does it): one
update per problem per step, over the step's valid codes of that problem, in two phases: first
``frequency - 1`` for every (code, replayed test) that passed, an entry at 0 or below being
removed; then ``frequency + 1`` for every (code, suite, kept test) that failed, a new entry
starting at 1 after the existing ones. The top 8 entries by frequency (ties: oldest first) are
replayed against every candidate the next time the problem comes up. Entries are keyed by
``(problem_id, call)``; the stored expectation is the GT's plain value for the call (the first one
recorded; GT values are deterministic, so this is the authors' key ``assert CALL == repr(GT)``).

Two implementations share the :class:`MistakeBook` interface:

- :class:`InMemoryMistakeBook`: a dict, for quick use and tests (lost when the process ends).
- :class:`SqliteMistakeBook`: a SQLite file in WAL mode, safe to share between processes and env
  instances on one machine, and crash-safe: every :meth:`~MistakeBook.apply` is one transaction.

:func:`open_mistake_book` picks one from a spec string. Both export and import the same JSON
format (:meth:`~MistakeBook.export_json`, :meth:`~MistakeBook.import_json`)::

    {"format": "codea1.mistake_book", "version": 1,
     "problems": {"<problem_id>": [{"call": "f(1)", "expected": <tagged JSON>, "frequency": 2},
                                    ...]}}

where ``expected`` is the :func:`codea1_env.sandbox.worker.plain.encode` form of the value and each
problem's list is in ranking order (frequency descending, then insertion order).
"""

from __future__ import annotations

import abc
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from codea1_env.atomic import write_text_atomic
from codea1_env.sandbox.worker import plain

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "REPLAY_SIZE",
    "BookEntry",
    "InMemoryMistakeBook",
    "MistakeBook",
    "MistakeBookFormatError",
    "SqliteMistakeBook",
    "open_mistake_book",
]

FORMAT_NAME = "codea1.mistake_book"
"""Value of the ``"format"`` key of an exported book."""

FORMAT_VERSION = 1
"""Version of the JSON format and of the SQLite schema (``PRAGMA user_version``)."""

REPLAY_SIZE = 8
"""How many entries Code-A1 replays per problem (the default of :meth:`MistakeBook.top`)."""

_Book = TypeVar("_Book", bound="MistakeBook")


class MistakeBookFormatError(ValueError):
    """An imported book (file or dict) is malformed; the message names the file and the field."""


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


class MistakeBook(abc.ABC):
    """Per-problem store of tests that broke candidates (see the module docstring)."""

    # -- storage primitives implemented by each backend ----------------------------------

    @abc.abstractmethod
    def _ranked(self, problem_id: str, limit: int | None) -> list[tuple[str, str, int]]:
        """``(call, encoded expected, frequency)`` in ranking order, at most ``limit``."""

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
    def close(self) -> None:
        """Release resources. Idempotent."""

    # -- the public interface -------------------------------------------------------------

    def top(self, problem_id: str, n: int = REPLAY_SIZE) -> list[BookEntry]:
        """Return the ``n`` entries to replay: highest frequency first, ties by insertion order."""
        if n <= 0:
            return []
        return [BookEntry(c, plain.loads(e), f) for c, e, f in self._ranked(problem_id, n)]

    def entries(self, problem_id: str) -> list[BookEntry]:
        """Return every entry of ``problem_id`` in ranking order."""
        return [BookEntry(c, plain.loads(e), f) for c, e, f in self._ranked(problem_id, None)]

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
        if updates:
            self._apply_updates(str(problem_id), updates)

    def remove(self, problem_id: str, calls: Iterable[str]) -> int:
        """Delete the given calls of ``problem_id`` in one transaction; return how many existed."""
        wanted = set(calls)
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
        """Return the whole book in the JSON export format (see the module docstring)."""
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "problems": {
                pid: [
                    {"call": c, "expected": json.loads(e), "frequency": f}
                    for c, e, f in self._ranked(pid, None)
                ]
                for pid in self.problems()
            },
        }

    def load_dict(self, data: Any, *, source: str = "<dict>") -> None:
        """Insert or overwrite the entries of ``data`` (export format) in one transaction.

        Each ``(problem, call)`` in ``data`` takes the file's expected value and frequency;
        entries not in ``data`` are kept (call :meth:`clear` first to replace the whole book).
        New entries are inserted in the file's order, so its ranking is kept.

        Raises:
            MistakeBookFormatError: ``data`` is malformed; the message names ``source`` and the
                offending field. Nothing is changed.

        """
        self._upsert(_validate(data, source))

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
        write_text_atomic(path, json.dumps(self.to_dict(), indent=1, ensure_ascii=False))

    def import_json(self, path: str | os.PathLike[str]) -> None:
        """Load a file written by :meth:`export_json` (see :meth:`load_dict`).

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
        self.load_dict(data, source=name)

    def __enter__(self: _Book) -> _Book:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _validate(data: Any, source: str) -> list[tuple[str, str, str, int]]:
    """Check an exported book and return ``(problem_id, call, encoded expected, frequency)``."""

    def fail(field: str, why: str) -> MistakeBookFormatError:
        return MistakeBookFormatError(f"{source}: {field}: {why}")

    if not isinstance(data, Mapping):
        raise fail("<top level>", f"expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT_NAME:
        raise fail("format", f"expected {FORMAT_NAME!r}, got {data.get('format')!r}")
    if data.get("version") != FORMAT_VERSION:
        raise fail("version", f"expected {FORMAT_VERSION}, got {data.get('version')!r}")
    problems = data.get("problems")
    if not isinstance(problems, Mapping):
        raise fail("problems", "expected an object mapping problem ids to entry lists")
    rows: list[tuple[str, str, str, int]] = []
    for pid, entries in problems.items():
        if not isinstance(entries, list):
            raise fail(f"problems[{pid!r}]", "expected a list of entries")
        seen: set[str] = set()
        for index, entry in enumerate(entries):
            where = f"problems[{pid!r}][{index}]"
            if not isinstance(entry, Mapping):
                raise fail(where, "expected an object")
            call, frequency = entry.get("call"), entry.get("frequency")
            if not isinstance(call, str) or not call:
                raise fail(f"{where}.call", f"expected a non-empty string, got {call!r}")
            if call in seen:
                raise fail(f"{where}.call", f"duplicate call {call!r}")
            seen.add(call)
            if isinstance(frequency, bool) or not isinstance(frequency, int) or frequency < 1:
                raise fail(f"{where}.frequency", f"expected an int >= 1, got {frequency!r}")
            if "expected" not in entry:
                raise fail(f"{where}.expected", "missing")
            try:
                encoded = plain.dumps(plain.decode(entry["expected"]))
            except (plain.PlainDataError, RecursionError) as exc:
                raise fail(f"{where}.expected", f"not tagged plain data: {exc}") from None
            rows.append((str(pid), call, encoded, frequency))
    return rows


class InMemoryMistakeBook(MistakeBook):
    """A mistake book held in a dict; thread-safe; lost when the process ends.

    Pickling (for example into a subprocess env) copies the contents: the copies then evolve
    separately. Use :class:`SqliteMistakeBook` to share one book between processes.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # problem_id -> call -> [encoded expected, frequency, insertion number]
        self._data: dict[str, dict[str, list[Any]]] = {}
        self._counter = 0

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {"data": self._data, "counter": self._counter}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._lock = threading.Lock()
        self._data = state["data"]
        self._counter = state["counter"]

    def _ranked(self, problem_id: str, limit: int | None) -> list[tuple[str, str, int]]:
        with self._lock:
            rows = sorted(
                self._data.get(problem_id, {}).items(), key=lambda kv: (-kv[1][1], kv[1][2])
            )
            return [(call, enc, freq) for call, (enc, freq, _) in rows[:limit]]

    def _apply_updates(self, problem_id: str, updates: list[Update]) -> None:
        with self._lock:
            book = self._data.setdefault(problem_id, {})
            for call, encoded, minus, plus in updates:
                entry = book.get(call)
                if entry is not None and minus:
                    entry[1] -= minus
                    if entry[1] <= 0:
                        del book[call]
                        entry = None
                if not plus:
                    continue
                if entry is not None:
                    entry[1] += plus
                elif encoded is not None:
                    self._counter += 1
                    book[call] = [encoded, plus, self._counter]
            if not book:
                del self._data[problem_id]

    def _upsert(self, rows: list[tuple[str, str, str, int]]) -> None:
        with self._lock:
            for pid, call, encoded, frequency in rows:
                book = self._data.setdefault(pid, {})
                if call in book:
                    book[call][0], book[call][1] = encoded, frequency
                else:
                    self._counter += 1
                    book[call] = [encoded, frequency, self._counter]

    def _remove(self, rows: list[tuple[str, str]]) -> None:
        with self._lock:
            for pid, call in rows:
                book = self._data.get(pid)
                if book is not None:
                    book.pop(call, None)
                    if not book:
                        del self._data[pid]

    def size(self, problem_id: str | None = None) -> int:
        """Return the number of entries for ``problem_id``, or in the whole book when None."""
        with self._lock:
            if problem_id is not None:
                return len(self._data.get(problem_id, {}))
            return sum(len(book) for book in self._data.values())

    def problems(self) -> list[str]:
        """Return the ids of the problems that have entries, sorted."""
        with self._lock:
            return sorted(pid for pid, book in self._data.items() if book)

    def clear(self) -> None:
        """Remove every entry."""
        with self._lock:
            self._data.clear()

    def close(self) -> None:
        """Nothing to release; the contents stay readable."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    problem_id TEXT NOT NULL,
    call TEXT NOT NULL,
    expected TEXT NOT NULL,
    frequency INTEGER NOT NULL,
    UNIQUE (problem_id, call)
);
CREATE INDEX IF NOT EXISTS entries_rank ON entries (problem_id, frequency DESC, id);
"""


class SqliteMistakeBook(MistakeBook):
    """A mistake book in a SQLite file, shared safely by processes and threads on one machine.

    Durability: the database runs in WAL mode and every :meth:`apply` is one ``BEGIN
    IMMEDIATE`` transaction. With ``synchronous="FULL"`` (the default) a commit is fsynced
    before :meth:`apply` returns, so committed updates survive a ``kill -9`` of the writer and
    also an OS crash or power loss. ``synchronous="NORMAL"`` is faster and still loses nothing
    committed when only the process dies (WAL pages are in the OS cache), but the last commits
    may be lost on power loss. An interrupted transaction is rolled back on the next open.

    Concurrency: writers queue on SQLite's lock; ``busy_timeout_s`` is how long one waits
    before :class:`sqlite3.OperationalError` is raised. Readers never block writers (WAL). The
    file must be on a local filesystem (WAL needs shared memory).

    Values are stored as :func:`codea1_env.sandbox.worker.plain.dumps` text; the schema version is
    kept in ``PRAGMA user_version`` (a file with another version is refused).

    Args:
        path: Database file (created with its directory when missing).
        synchronous: ``"FULL"`` or ``"NORMAL"``.
        busy_timeout_s: Seconds to wait for another process's write lock.

    Raises:
        ValueError: bad ``synchronous``, or the file holds an unknown schema version.
        sqlite3.DatabaseError: the file is not a SQLite database.

    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "FULL",
        busy_timeout_s: float = 60.0,
    ) -> None:
        self.path = Path(path)
        self.synchronous = synchronous.upper()
        if self.synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self.busy_timeout_s = float(busy_timeout_s)
        self._lock = threading.RLock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"{self.path}: cannot enable WAL (mode {mode})")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            self._conn: sqlite3.Connection | None = conn
            with self._transaction() as cur:
                version = cur.execute("PRAGMA user_version").fetchone()[0]
                if version == 0:
                    _create_schema(cur)
                    cur.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
                elif version != FORMAT_VERSION:
                    raise ValueError(
                        f"{self.path}: mistake book schema version {version} is not supported "
                        f"(this codea1 reads version {FORMAT_VERSION})"
                    )
        except BaseException:
            conn.close()
            self._conn = None
            raise

    def __reduce__(self) -> tuple[Any, ...]:
        return (_reopen_sqlite, (str(self.path), self.synchronous, self.busy_timeout_s))

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ValueError(f"mistake book {self.path} is closed")
        return self._conn

    def _transaction(self) -> _Transaction:
        return _Transaction(self._connection(), self._lock)

    def _ranked(self, problem_id: str, limit: int | None) -> list[tuple[str, str, int]]:
        with self._lock:
            rows = self._connection().execute(
                "SELECT call, expected, frequency FROM entries WHERE problem_id = ? "
                "ORDER BY frequency DESC, id LIMIT ?",
                (problem_id, -1 if limit is None else limit),
            )
            return [(str(c), str(e), int(f)) for c, e, f in rows.fetchall()]

    def _apply_updates(self, problem_id: str, updates: list[Update]) -> None:
        with self._transaction() as cur:
            for call, encoded, minus, plus in updates:
                if minus:
                    cur.execute(
                        "UPDATE entries SET frequency = frequency - ? "
                        "WHERE problem_id = ? AND call = ?",
                        (minus, problem_id, call),
                    )
                    cur.execute(
                        "DELETE FROM entries WHERE problem_id = ? AND call = ? AND frequency <= 0",
                        (problem_id, call),
                    )
                if plus and encoded is not None:
                    cur.execute(
                        "INSERT INTO entries (problem_id, call, expected, frequency) "
                        "VALUES (?, ?, ?, ?) ON CONFLICT (problem_id, call) "
                        "DO UPDATE SET frequency = frequency + excluded.frequency",
                        (problem_id, call, encoded, plus),
                    )

    def _upsert(self, rows: list[tuple[str, str, str, int]]) -> None:
        with self._transaction() as cur:
            cur.executemany(
                "INSERT INTO entries (problem_id, call, expected, frequency) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (problem_id, call) "
                "DO UPDATE SET expected = excluded.expected, frequency = excluded.frequency",
                rows,
            )

    def _remove(self, rows: list[tuple[str, str]]) -> None:
        with self._transaction() as cur:
            cur.executemany("DELETE FROM entries WHERE problem_id = ? AND call = ?", rows)

    def size(self, problem_id: str | None = None) -> int:
        """Return the number of entries for ``problem_id``, or in the whole book when None."""
        with self._lock:
            conn = self._connection()
            if problem_id is None:
                row = conn.execute("SELECT COUNT(*) FROM entries").fetchone()
            else:
                row = conn.execute(
                    "SELECT COUNT(*) FROM entries WHERE problem_id = ?", (problem_id,)
                ).fetchone()
            return int(row[0])

    def problems(self) -> list[str]:
        """Return the ids of the problems that have entries, sorted."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT DISTINCT problem_id FROM entries ORDER BY problem_id"
            )
            return [str(r[0]) for r in rows.fetchall()]

    def clear(self) -> None:
        """Remove every entry (one transaction)."""
        with self._transaction() as cur:
            cur.execute("DELETE FROM entries")

    def integrity_check(self) -> str:
        """Return SQLite's ``PRAGMA integrity_check`` verdict (``"ok"`` when healthy)."""
        with self._lock:
            rows = self._connection().execute("PRAGMA integrity_check").fetchall()
            return "\n".join(str(r[0]) for r in rows)

    def close(self) -> None:
        """Close the connection. Idempotent; the file stays (reopen it to read it)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _create_schema(cur: sqlite3.Cursor) -> None:
    # executescript() would COMMIT the open transaction; run the statements one by one.
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            cur.execute(statement)


def _reopen_sqlite(path: str, synchronous: str, busy_timeout_s: float) -> SqliteMistakeBook:
    return SqliteMistakeBook(path, synchronous=synchronous, busy_timeout_s=busy_timeout_s)


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK`` on error) under a thread lock."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self.conn = conn
        self.lock = lock

    def __enter__(self) -> sqlite3.Cursor:
        self.lock.acquire()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.lock.release()
            raise
        return self.conn.cursor()

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            if exc_type is None:
                try:
                    self.conn.execute("COMMIT")
                    return
                except BaseException:
                    self._rollback()
                    raise
            self._rollback()
        finally:
            self.lock.release()

    def _rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


def open_mistake_book(spec: str | os.PathLike[str] | None = None) -> MistakeBook:
    """Open a mistake book from a spec.

    Args:
        spec: None, ``"memory"`` or ``":memory:"`` for an :class:`InMemoryMistakeBook`;
            anything else is a file path for a :class:`SqliteMistakeBook` (an optional
            ``"sqlite:"`` prefix is accepted, as in ``"sqlite:runs/book.db"``).

    Raises:
        ValueError: ``spec`` is an empty string.

    """
    if spec is None:
        return InMemoryMistakeBook()
    text = os.fspath(spec)
    if text in ("memory", ":memory:"):
        return InMemoryMistakeBook()
    if not text.strip():
        raise ValueError("open_mistake_book: empty spec (use None or 'memory' for in-memory)")
    if text.startswith("sqlite:"):
        text = text[len("sqlite:") :]
    return SqliteMistakeBook(text)
