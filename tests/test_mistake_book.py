"""The mistake book (codea1_env.mistake_book): semantics, persistence, concurrency, crash safety."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codea1_env.mistake_book import (
    BookEntry,
    InMemoryMistakeBook,
    MistakeBook,
    MistakeBookFormatError,
    SqliteMistakeBook,
    open_mistake_book,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(params=["memory", "sqlite"])
def book(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MistakeBook]:
    opened: MistakeBook
    if request.param == "memory":
        opened = InMemoryMistakeBook()
    else:
        opened = SqliteMistakeBook(tmp_path / "book.db")
    with opened:
        yield opened


def freqs(book: MistakeBook, pid: str = "p") -> dict[str, int]:
    return {e.call: e.frequency for e in book.entries(pid)}


# --- frequency semantics -------------------------------------------------------------------

# Each step: (failed calls, passed calls) -> frequencies after the step.
SEMANTICS = [
    # a failed kept test enters with frequency 1
    ((["f(1)"], []), {"f(1)": 1}),
    # failed again by another candidate: +1; a new failure enters at 1
    ((["f(1)", "f(2)"], []), {"f(1)": 2, "f(2)": 1}),
    # passed: -1; at 0 the entry is removed
    (([], ["f(1)", "f(2)"]), {"f(1)": 1}),
    # passing a call the book does not hold changes nothing
    (([], ["f(9)"]), {"f(1)": 1}),
    # two candidates fail f(3) in one step: +2
    ((["f(3)", "f(3)"], []), {"f(1)": 1, "f(3)": 2}),
    # the authors' order: decrements first, then increments. f(1): 1 - 2 -> removed, then
    # +1 -> a new entry at 1 (not the net 1 + 1 - 2 = 0); f(3): 2 - 1 = 1
    ((["f(1)"], ["f(1)", "f(1)", "f(3)"]), {"f(3)": 1, "f(1)": 1}),
    # a new call failed once and passed once in the same step: the pass finds nothing, +1 adds
    ((["f(4)"], ["f(4)"]), {"f(3)": 1, "f(1)": 1, "f(4)": 1}),
    # more passes than the frequency: removed, never negative
    (([], ["f(3)", "f(3)", "f(3)", "f(1)", "f(4)"]), {}),
]


def test_frequency_semantics(book: MistakeBook) -> None:
    for (failed, passed), expected in SEMANTICS:
        book.apply("p", [(call, 0) for call in failed], passed)
        assert freqs(book) == expected
    assert book.size("p") == 0 and book.problems() == []


def test_a_removed_and_re_added_entry_goes_to_the_end(book: MistakeBook) -> None:
    book.apply("p", [("f(a)", 1), ("f(b)", 2), ("f(c)", 3)], [])
    # f(a) is passed (1 -> 0, removed) and failed again in the same step: it comes back at 1,
    # after f(b) and f(c), as the authors' dict rebuild puts it; f(b) keeps its place
    book.apply("p", [("f(a)", 1)], ["f(a)"])
    assert [(e.call, e.frequency) for e in book.top("p")] == [("f(b)", 1), ("f(c)", 1), ("f(a)", 1)]


def test_entries_keep_their_first_expected_value_and_problems_are_separate(
    book: MistakeBook,
) -> None:
    book.apply("p", [("f(1)", [1, (2, 3.5)])], [])
    book.apply("p", [("f(1)", "other")], [])  # GT values are deterministic: the first is kept
    book.apply("q", [("f(1)", {"k": {1, 2}})], [])
    assert book.entries("p") == [BookEntry("f(1)", [1, (2, 3.5)], 2)]
    assert book.entries("q") == [BookEntry("f(1)", {"k": {1, 2}}, 1)]
    assert book.problems() == ["p", "q"]
    assert (book.size(), book.size("p"), book.size("missing")) == (2, 1, 0)
    book.clear()
    assert book.size() == 0 and book.entries("p") == []


def test_top_orders_by_frequency_then_insertion(book: MistakeBook) -> None:
    book.apply("p", [("f(a)", 1), ("f(b)", 2), ("f(c)", 3), ("f(d)", 4)], [])
    book.apply("p", [("f(c)", 3), ("f(d)", 4), ("f(d)", 4)], [])
    book.apply("p", [("f(e)", 5)], [])
    # frequencies: a 1, b 1, c 2, d 3, e 1 -> d, c, then a, b, e in insertion order
    assert [e.call for e in book.top("p")] == ["f(d)", "f(c)", "f(a)", "f(b)", "f(e)"]
    assert [e.call for e in book.top("p", 2)] == ["f(d)", "f(c)"]
    assert book.top("p", 0) == [] and book.top("other") == []
    for i in range(20):
        book.apply("p", [(f"g({i})", i)], [])
    assert len(book.top("p")) == 8  # Code-A1 replays 8 by default


def test_assert_source() -> None:
    assert BookEntry("f(1)", (1, "a"), 1).assert_source == "assert f(1) == (1, 'a')"
    assert BookEntry("f(2)", float("nan"), 1).assert_source == "assert f(2) == float('nan')"


def test_bad_updates_change_nothing(book: MistakeBook) -> None:
    book.apply("p", [("f(0)", 0)], [])

    class Weird:
        pass

    with pytest.raises(ValueError, match="not plain"):
        book.apply("p", [("f(1)", 1), ("f(2)", Weird())], [])
    with pytest.raises(ValueError, match="call must be a str"):
        book.apply("p", [], [3])  # type: ignore[list-item]
    assert freqs(book) == {"f(0)": 1}


# --- JSON ----------------------------------------------------------------------------------


def test_json_round_trip_between_backends(book: MistakeBook, tmp_path: Path) -> None:
    book.apply("p", [("f(1)", b"\x00bytes"), ("f(2)", complex(1, 2)), ("f(2)", complex(1, 2))], [])
    book.apply("q/1", [("f('x')", None), ("f(3)", frozenset({1}))], [])
    path = tmp_path / "out" / "book.json"
    path.parent.mkdir()
    book.export_json(path)
    assert [p.name for p in path.parent.iterdir()] == ["book.json"]  # no temp file left
    data = json.loads(path.read_text())
    assert data["format"] == "codea1.mistake_book" and data["version"] == 1
    assert [e["call"] for e in data["problems"]["p"]] == ["f(2)", "f(1)"]  # ranking order
    for target in (InMemoryMistakeBook(), SqliteMistakeBook(tmp_path / "copy.db")):
        with target:
            target.import_json(path)
            assert target.to_dict() == book.to_dict()
            assert target.entries("p") == book.entries("p")
    assert InMemoryMistakeBook.from_dict(book.to_dict()).to_dict() == book.to_dict()


def test_import_overwrites_matching_entries_and_keeps_others(book: MistakeBook) -> None:
    book.apply("p", [("f(1)", 1), ("f(2)", 2)], [])
    book.load_dict(
        {
            "format": "codea1.mistake_book",
            "version": 1,
            "problems": {"p": [{"call": "f(2)", "expected": 20, "frequency": 5}]},
        }
    )
    assert book.entries("p") == [BookEntry("f(2)", 20, 5), BookEntry("f(1)", 1, 1)]


def test_import_with_replace_makes_the_file_the_whole_book(book: MistakeBook) -> None:
    book.apply("p", [("f(1)", 1), ("f(2)", 2)], [])
    book.apply("q", [("g(1)", 1)], [])
    book.load_dict(
        {
            "format": "codea1.mistake_book",
            "version": 1,
            "problems": {"p": [{"call": "f(2)", "expected": 20, "frequency": 5}]},
        },
        replace=True,
    )
    assert book.problems() == ["p"]
    assert book.entries("p") == [BookEntry("f(2)", 20, 5)]


def test_a_damaged_file_imported_with_replace_leaves_the_book_as_it_was(
    book: MistakeBook, tmp_path: Path
) -> None:
    # A resume restores the checkpoint's book this way: a truncated file must not empty it.
    book.apply("p", [("f(1)", 1)], [])
    path = tmp_path / "mistake_book.json"
    book.export_json(path)
    path.write_text(path.read_text()[:-10])
    with pytest.raises(MistakeBookFormatError, match="mistake_book.json"):
        book.import_json(path, replace=True)
    assert book.entries("p") == [BookEntry("f(1)", 1, 1)]


GOOD_ENTRY = {"call": "f(1)", "expected": 1, "frequency": 1}


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("not json {", "cannot read a JSON mistake book"),
        ("[]", "<top level>"),
        ('{"format": "x", "version": 1, "problems": {}}', "format"),
        ('{"format": "codea1.mistake_book", "version": 2, "problems": {}}', "version"),
        ('{"format": "codea1.mistake_book", "version": 1, "problems": []}', "problems"),
        (json.dumps({"p": {"x": 1}}), "problems\\['p'\\]"),
        (
            [GOOD_ENTRY, {**GOOD_ENTRY, "call": "f(2)", "frequency": 0}],
            "problems\\['p'\\]\\[1\\].frequency",
        ),
        ([{**GOOD_ENTRY, "frequency": True}], "\\[0\\].frequency"),
        ([{**GOOD_ENTRY, "call": ""}], "\\[0\\].call"),
        ([GOOD_ENTRY, GOOD_ENTRY], "\\[1\\].call: duplicate"),
        ([{"call": "f(1)", "frequency": 1}], "\\[0\\].expected: missing"),
        ([{**GOOD_ENTRY, "expected": {"zz": 1}}], "\\[0\\].expected: not tagged"),
        ([GOOD_ENTRY, "entry"], "\\[1\\]: expected an object"),
    ],
)
def test_bad_json_files_name_file_and_field(
    book: MistakeBook, tmp_path: Path, content: Any, field: str
) -> None:
    book.apply("keep", [("f(0)", 0)], [])
    if isinstance(content, list):
        problems: Any = {"p": content}
        content = json.dumps({"format": "codea1.mistake_book", "version": 1, "problems": problems})
    elif content.startswith('{"p"'):
        problems = json.loads(content)
        content = json.dumps({"format": "codea1.mistake_book", "version": 1, "problems": problems})
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(MistakeBookFormatError, match=f"{re.escape(str(path))}: .*{field}"):
        book.import_json(path)
    assert book.problems() == ["keep"] and book.size() == 1  # nothing half-imported


def test_missing_file_is_a_format_error(book: MistakeBook, tmp_path: Path) -> None:
    with pytest.raises(MistakeBookFormatError, match="nope.json"):
        book.import_json(tmp_path / "nope.json")


# --- opening, closing, pickling ------------------------------------------------------------


def test_open_mistake_book_specs(tmp_path: Path) -> None:
    assert isinstance(open_mistake_book(None), InMemoryMistakeBook)
    assert isinstance(open_mistake_book("memory"), InMemoryMistakeBook)
    with open_mistake_book(str(tmp_path / "a.db")) as first:
        assert isinstance(first, SqliteMistakeBook)
        first.apply("p", [("f(1)", 1)], [])
    with open_mistake_book(f"sqlite:{tmp_path / 'a.db'}") as again:
        assert freqs(again) == {"f(1)": 1}  # persisted across opens
    with pytest.raises(ValueError, match="empty spec"):
        open_mistake_book("")


def test_sqlite_settings_schema_version_and_close(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with SqliteMistakeBook(path) as book:
        conn = book._connection()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert book.integrity_check() == "ok"
    with pytest.raises(ValueError, match="closed"):
        book.size()
    book.close()  # idempotent
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA user_version = 7")
    raw.close()
    with pytest.raises(ValueError, match="schema version 7"):
        SqliteMistakeBook(path)
    with pytest.raises(ValueError, match="synchronous"):
        SqliteMistakeBook(tmp_path / "c.db", synchronous="OFF")
    (tmp_path / "junk.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        SqliteMistakeBook(tmp_path / "junk.db")


def test_pickling(tmp_path: Path) -> None:
    with SqliteMistakeBook(tmp_path / "p.db", synchronous="NORMAL") as book:
        book.apply("p", [("f(1)", 1)], [])
        with pickle.loads(pickle.dumps(book)) as clone:  # reopens the same file: shared
            clone.apply("p", [("f(1)", 1)], [])
            assert clone.synchronous == "NORMAL"
        assert freqs(book) == {"f(1)": 2}
    memory = InMemoryMistakeBook()
    memory.apply("p", [("f(1)", 1)], [])
    copy = pickle.loads(pickle.dumps(memory))  # a copy: evolves separately
    copy.apply("p", [("f(1)", 1)], [])
    assert (freqs(memory), freqs(copy)) == ({"f(1)": 1}, {"f(1)": 2})


# --- several processes ---------------------------------------------------------------------

N_STEPS = 60


def _writer(path: str, worker: int, ready: Any) -> None:
    """Spawned process: wait for the start signal, then apply N_STEPS updates (+1 net each)."""
    with SqliteMistakeBook(path) as book:
        ready.wait()
        for step in range(N_STEPS):
            call = f"f({step % 7})"
            # failed three times, passed once: -1 then +3, so +2 on an entry that exists and +3
            # on the first update of each call, whichever process makes it
            book.apply("shared", [(call, step % 7)] * 3, [call])
            book.apply(f"own{worker}", [(f"g({step})", step)], [])


def test_two_processes_share_one_book(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    SqliteMistakeBook(path).close()
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    procs = [ctx.Process(target=_writer, args=(path, w, ready)) for w in range(2)]
    for proc in procs:
        proc.start()
    ready.set()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0
    with SqliteMistakeBook(path) as book:
        assert sum(e.frequency for e in book.entries("shared")) == 2 * (2 * N_STEPS) + 7
        assert book.size("own0") == book.size("own1") == N_STEPS
        assert book.integrity_check() == "ok"


CHILD = """
import sys
from codea1_env.mistake_book import SqliteMistakeBook
book = SqliteMistakeBook(sys.argv[1])
calls = [(f"f({i})", list(range(50))) for i in range(10)]
n = int(sys.argv[2])
while True:
    book.apply("p", calls, [])  # one transaction: +1 on each of the 10 calls
    n += 1
    print(n, flush=True)
"""


def test_kill_9_mid_write_loses_no_committed_transaction(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    committed = 0
    for _round in range(3):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), str(committed)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert child.stdout is not None
        try:
            deadline = time.monotonic() + 60
            seen = committed
            while seen < committed + 25 and time.monotonic() < deadline:
                line = child.stdout.readline()
                assert line, "child died before committing"
                seen = int(line)
            # Kill at a random point of a later transaction, not right after a print.
            time.sleep(random.Random(_round).uniform(0.001, 0.02))
            child.send_signal(signal.SIGKILL)
            rest = child.stdout.read()
        finally:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=30)
            child.stdout.close()
        assert child.returncode == -signal.SIGKILL
        reported = [int(x) for x in rest.split()]
        committed = reported[-1] if reported else seen
        with SqliteMistakeBook(path) as book:
            assert book.integrity_check() == "ok"
            counts = {e.frequency for e in book.entries("p")}
            # Every transaction touches all 10 calls, so a partial one would show unequal counts.
            assert len(counts) == 1 and book.size("p") == 10
            (stored,) = counts
            # Everything reported committed is there; at most one more transaction committed
            # after the last line the child managed to print before it was killed.
            assert stored in (committed, committed + 1)
            committed = stored


def test_sqlite_books_refuse_other_databases_and_name_the_file(tmp_path: Path) -> None:
    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    conn.close()
    with pytest.raises(ValueError, match=r"app\.db: not a mistake book .*\['users'\]"):
        SqliteMistakeBook(foreign)
    with sqlite3.connect(foreign) as conn:  # nothing was added to it
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    conn.close()
    assert tables == ["users"]
    shaped = tmp_path / "shaped.db"
    with sqlite3.connect(shaped) as conn:
        conn.execute("CREATE TABLE entries (problem_id TEXT, call TEXT)")
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    with pytest.raises(ValueError, match=r"shaped\.db: not a mistake book of this codea1"):
        SqliteMistakeBook(shaped)
    tableless = tmp_path / "v1.db"  # says it is a book (version 1) but has no entries table
    with sqlite3.connect(tableless) as conn:
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    with pytest.raises(ValueError, match=r"v1\.db: not a mistake book .*no entries table"):
        SqliteMistakeBook(tableless)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(sqlite3.DatabaseError, match=r"garbage\.db: file is not a database"):
        SqliteMistakeBook(garbage)
    with pytest.raises(sqlite3.OperationalError, match=str(tmp_path)):
        SqliteMistakeBook(tmp_path)  # a directory
    with SqliteMistakeBook(tmp_path / "new.db") as book:  # a new file still becomes a book
        book.apply("p", [("f(1)", 1)], [])
    with SqliteMistakeBook(tmp_path / "new.db") as book:
        assert book.size() == 1


# --- from an audit of the shared book ------------------------------------------------------


def test_a_new_file_opened_while_another_holds_its_lock_waits(tmp_path: Path) -> None:
    """Processes opening one new book at once: the WAL switch waits like any other write."""
    import threading

    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # what a second opener meets while the first creates it
    opened: list[Any] = []
    opener = threading.Thread(target=lambda: opened.append(SqliteMistakeBook(path)))
    opener.start()
    time.sleep(0.3)
    holder.execute("ROLLBACK")
    holder.close()
    opener.join(30)
    assert len(opened) == 1  # it had answered "database is locked" at once
    opened[0].apply("p", [("f(1)", 1)], [])
    assert opened[0].size() == 1
    opened[0].close()


def test_evict_sees_no_other_writer_between_its_ranking_and_its_removal(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "book.db"
    first, second = SqliteMistakeBook(path), SqliteMistakeBook(path)
    first.apply("p", [("x()", 1)] * 3 + [("y()", 2)], [])  # x: 3, y: 1
    remove = first._remove
    writer = threading.Thread(target=lambda: second.apply("p", [("y()", 2)] * 5, []))

    def remove_after_the_other_writer_tried(rows: list[tuple[str, str]]) -> None:
        writer.start()
        time.sleep(0.3)  # before the fix, its +5 went in here and then was removed with y
        remove(rows)

    first._remove = remove_after_the_other_writer_tried  # type: ignore[method-assign]
    assert first.evict(per_problem=1) == 1
    writer.join(30)
    assert freqs(first) == {"x()": 3, "y()": 5}  # evict, then the other write: a serial order
    first.close()
    second.close()


def test_both_backends_read_a_problem_id_as_apply_stored_it(book: MistakeBook) -> None:
    book.apply(5, [("f(1)", 1)], [])  # type: ignore[arg-type]
    assert [e.call for e in book.top(5)] == ["f(1)"]  # type: ignore[arg-type]
    assert book.size(5) == 1 and book.problems() == ["5"]  # type: ignore[arg-type]


def test_a_lone_surrogate_value_exports_and_reads_back(book: MistakeBook, tmp_path: Path) -> None:
    book.apply("p", [("g()", "\ud800")], [])  # a GT may return chr(55296)
    book.export_json(tmp_path / "book.json")
    copy = InMemoryMistakeBook()
    copy.import_json(tmp_path / "book.json")
    assert copy.entries("p") == [BookEntry("g()", "\ud800", 1)]


@pytest.mark.parametrize(
    ("entry", "version", "says"),
    [
        ({"call": "f()", "expected": 1, "frequency": 2**63}, 1, "frequency: expected an int"),
        ({"call": "f(\ud800)", "expected": 1, "frequency": 1}, 1, "call: not UTF-8 text"),
        ({"call": "f()", "expected": 1, "frequency": 1}, 1.0, "version: expected 1"),
        ({"call": "f()", "expected": 1, "frequency": 1}, True, "version: expected 1"),
    ],
)
def test_imports_that_a_backend_cannot_hold_are_refused_by_both(
    book: MistakeBook, entry: dict[str, Any], version: object, says: str
) -> None:
    data = {"format": "codea1.mistake_book", "version": version, "problems": {"p": [entry]}}
    with pytest.raises(MistakeBookFormatError, match=re.escape(says)):
        book.load_dict(data)
    assert book.size() == 0


def test_an_entries_table_without_its_unique_key_is_refused_at_open(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE entries (id INTEGER PRIMARY KEY, problem_id TEXT, call TEXT, "
        "expected TEXT, frequency INTEGER)"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with pytest.raises(ValueError, match=r"other\.db: .*no UNIQUE \(problem_id, call\)"):
        SqliteMistakeBook(path)


@pytest.mark.parametrize(
    ("column", "value", "says"),
    [
        ("expected", "{not json", "field 'expected' is damaged"),
        ("expected", '{"no": "tag"}', "field 'expected' is damaged"),
        ("frequency", "'three'", "field 'frequency' is damaged ('three'"),
        ("frequency", "0", "field 'frequency' is damaged (0"),
    ],
)
def test_a_row_damaged_outside_codea1_is_named_with_its_file_problem_and_call(
    tmp_path: Path, column: str, value: str, says: str
) -> None:
    path = tmp_path / "book.db"
    with SqliteMistakeBook(path) as book:
        book.apply("p", [("f(1)", 2), ("f(2)", 3)], [])
    conn = sqlite3.connect(path)
    literal = value if column == "frequency" else "'" + value.replace("'", "''") + "'"
    conn.execute(f"UPDATE entries SET {column} = {literal} WHERE call = 'f(2)'")
    conn.commit()
    conn.close()
    with SqliteMistakeBook(path) as book:
        where = re.escape(f"mistake book {path}: problem 'p', call 'f(2)': {says}")
        for read in (lambda: book.top("p"), lambda: book.entries("p"), book.to_dict):
            with pytest.raises(MistakeBookFormatError, match=where):
                read()
        assert book.size("p") == 2  # reading refuses; nothing is dropped
