"""The SQLite mistake book backend: one WAL-mode file shared by processes on one machine."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from codea1_env.mistake_book.book import MistakeBook, Update, check_tie_order
from codea1_env.mistake_book.json_format import FORMAT_VERSION

__all__ = ["SqliteMistakeBook"]

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
        tie_order: How entries of equal frequency rank: ``"oldest"`` (first in, first) or
            ``"authors"`` (the authors' in-place sort); see :class:`MistakeBook`. It belongs to
            this object, not to the file: processes sharing a file should give the same one.

    Raises:
        ValueError: bad ``synchronous`` or ``tie_order``, or the file is a database but not a
            mistake book (an unknown schema version, other tables, or an ``entries`` table of
            another shape).
        sqlite3.DatabaseError: the file is not a SQLite database, is damaged, or cannot be
            opened (a directory); the message names the file. A SQLite error of any later call
            (a damaged page found on reading, a lock timeout, a write to a read-only file,
            which SQLite reports at the first write) names the file too.
        OSError: the file's directory cannot be created (a parent is a file, no permission).

    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "FULL",
        busy_timeout_s: float = 60.0,
        tie_order: str = "oldest",
    ) -> None:
        self.tie_order = check_tie_order(tie_order)
        self.path = Path(path)
        self.synchronous = synchronous.upper()
        if self.synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        self.busy_timeout_s = float(busy_timeout_s)
        self._lock = threading.RLock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_s,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise _named(exc, self.path) from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            mode = _enable_wal(conn, self.busy_timeout_s)
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"{self.path}: cannot enable WAL (mode {mode})")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            self._conn: sqlite3.Connection | None = conn
            with self._transaction() as cur:
                version = cur.execute("PRAGMA user_version").fetchone()[0]
                tables = _tables(cur)
                if version == 0:
                    if tables:  # someone else's database: do not add our tables to it
                        raise ValueError(
                            f"{self.path}: not a mistake book (a SQLite database with the "
                            f"tables {tables}); give the mistake book a file of its own"
                        )
                    _create_schema(cur)
                    cur.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
                elif version != FORMAT_VERSION:
                    raise ValueError(
                        f"{self.path}: mistake book schema version {version} is not supported "
                        f"(this codea1 reads version {FORMAT_VERSION})"
                    )
                else:
                    _check_schema(cur, self.path)
        except sqlite3.Error as exc:
            conn.close()
            self._conn = None
            if str(self.path) in str(exc):  # named already (by _file_named, or the WAL check)
                raise
            raise _named(exc, self.path) from exc
        except BaseException:
            conn.close()
            self._conn = None
            raise

    def _storage(self) -> str:
        return f"mistake book {self.path}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _reopen_sqlite,
            (str(self.path), self.synchronous, self.busy_timeout_s, self.tie_order),
        )

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ValueError(f"mistake book {self.path} is closed")
        return self._conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """One ``BEGIN IMMEDIATE`` transaction; a SQLite error in it names the file."""
        with _file_named(self.path), _Transaction(self._connection(), self._lock) as cur:
            yield cur

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, under the thread lock; a SQLite error while reading names the file."""
        with _file_named(self.path), self._lock:
            yield self._connection()

    @contextmanager
    def _atomically(self) -> Iterator[None]:
        with self._transaction():  # the write lock from the first read on
            yield

    def _ranked(self, problem_id: str, limit: int | None) -> list[tuple[str, str, int]]:
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT call, expected, frequency FROM entries WHERE problem_id = ? "
                "ORDER BY frequency DESC, id LIMIT ?",
                (problem_id, -1 if limit is None else limit),
            )
            # a frequency is returned as stored: MistakeBook._read refuses a damaged one by name
            return [(str(c), str(e), f) for c, e, f in rows.fetchall()]

    def _oldest_first(self, problem_id: str) -> list[str]:
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT call FROM entries WHERE problem_id = ? ORDER BY id", (problem_id,)
            )
            return [str(row[0]) for row in rows.fetchall()]

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

    def _replace(self, rows: list[tuple[str, str, str, int]]) -> None:
        with self._transaction() as cur:
            cur.execute("DELETE FROM entries")
            cur.executemany(
                "INSERT INTO entries (problem_id, call, expected, frequency) VALUES (?, ?, ?, ?)",
                rows,
            )

    def _remove(self, rows: list[tuple[str, str]]) -> None:
        with self._transaction() as cur:
            cur.executemany("DELETE FROM entries WHERE problem_id = ? AND call = ?", rows)

    def size(self, problem_id: str | None = None) -> int:
        """Return the number of entries for ``problem_id``, or in the whole book when None."""
        with self._reading() as conn:
            if problem_id is None:
                row = conn.execute("SELECT COUNT(*) FROM entries").fetchone()
            else:
                row = conn.execute(
                    "SELECT COUNT(*) FROM entries WHERE problem_id = ?", (str(problem_id),)
                ).fetchone()
            return int(row[0])

    def problems(self) -> list[str]:
        """Return the ids of the problems that have entries, sorted."""
        with self._reading() as conn:
            rows = conn.execute("SELECT DISTINCT problem_id FROM entries ORDER BY problem_id")
            return [str(r[0]) for r in rows.fetchall()]

    def clear(self) -> None:
        """Remove every entry (one transaction)."""
        with self._transaction() as cur:
            cur.execute("DELETE FROM entries")

    def integrity_check(self) -> str:
        """Return SQLite's ``PRAGMA integrity_check`` verdict (``"ok"`` when healthy)."""
        with self._reading() as conn:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
            return "\n".join(str(r[0]) for r in rows)

    def close(self) -> None:
        """Close the connection. Idempotent; the file stays (reopen it to read it)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


_COLUMNS = ("id", "problem_id", "call", "expected", "frequency")


def _tables(cur: sqlite3.Cursor) -> list[str]:
    rows = cur.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name"
    )
    return [str(row[0]) for row in rows.fetchall()]


def _enable_wal(conn: sqlite3.Connection, busy_timeout_s: float) -> str:
    """Switch to WAL, waiting out other openers: the switch does not use the busy timeout.

    Processes that open a new book file at once (verl's reward workers, several services)
    would otherwise see "database is locked" from whichever did not get there first.
    """
    deadline = time.monotonic() + busy_timeout_s
    wait = 0.001
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() >= deadline:
                raise
        time.sleep(wait)
        wait = min(wait * 2, 0.1)


def _check_schema(cur: sqlite3.Cursor, path: Path) -> None:
    """Refuse a file that says it is a mistake book but lacks the ``entries`` table we write."""
    columns = tuple(str(row[1]) for row in cur.execute("PRAGMA table_info(entries)").fetchall())
    if columns != _COLUMNS:
        found = f"columns {list(columns)}" if columns else "no entries table"
        raise ValueError(
            f"{path}: not a mistake book of this codea1 ({found}; expected {list(_COLUMNS)})"
        )
    unique = [
        [str(info[2]) for info in cur.execute(f"PRAGMA index_info('{row[1]}')").fetchall()]
        for row in cur.execute("PRAGMA index_list(entries)").fetchall()
        if row[2]  # a unique index
    ]
    if ["problem_id", "call"] not in unique:  # every update relies on it (ON CONFLICT)
        raise ValueError(
            f"{path}: not a mistake book of this codea1 (its entries table has no "
            "UNIQUE (problem_id, call))"
        )


@contextmanager
def _file_named(path: Path) -> Iterator[None]:
    """Re-raise a SQLite error (a page found damaged, a lock timeout) with ``path`` in it."""
    try:
        yield
    except sqlite3.Error as exc:
        if str(path) in str(exc):
            raise
        raise _named(exc, path) from exc


def _named(exc: sqlite3.Error, path: Path) -> sqlite3.Error:
    """The same kind of SQLite error, its message naming the file."""
    named = type(exc)(f"{path}: {exc}")
    for attribute in ("sqlite_errorcode", "sqlite_errorname"):
        if hasattr(exc, attribute):
            setattr(named, attribute, getattr(exc, attribute))
    return named


def _create_schema(cur: sqlite3.Cursor) -> None:
    # executescript() would COMMIT the open transaction; run the statements one by one.
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            cur.execute(statement)


def _reopen_sqlite(
    path: str, synchronous: str, busy_timeout_s: float, tie_order: str = "oldest"
) -> SqliteMistakeBook:
    return SqliteMistakeBook(
        path, synchronous=synchronous, busy_timeout_s=busy_timeout_s, tie_order=tie_order
    )


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK`` on error) under a thread lock."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self.conn = conn
        self.lock = lock
        self.nested = False

    def __enter__(self) -> sqlite3.Cursor:
        self.lock.acquire()
        # within this thread's open transaction (an atomic section): part of it, no new one
        self.nested = self.conn.in_transaction
        if not self.nested:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except BaseException:
                self.lock.release()
                raise
        return self.conn.cursor()

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if self.nested:  # the enclosing transaction commits or rolls back
            self.lock.release()
            return
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
