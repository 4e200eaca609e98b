"""The mistake book's JSON export format, and its validation on import.

The format (also described in :mod:`codea1_env.mistake_book`)::

    {"format": "codea1.mistake_book", "version": 1,
     "problems": {"<problem_id>": [{"call": "f(1)", "expected": <tagged JSON>, "frequency": 2,
                                    "order": 0}, ...]}}

Each problem's list is in ranking order. ``order`` (optional: all of a problem's entries have it
or none do) is the entry's place in the problem's insertion order, 0 the oldest, which ranks
entries of equal frequency; without it the list's order is the insertion order.

:func:`validate_rows` checks a loaded document and returns its rows for a backend's upsert, each
problem's in insertion order; every failure is a :class:`MistakeBookFormatError` naming the
source and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from codea1_env.sandbox.worker import plain

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "MistakeBookFormatError", "validate_rows"]

FORMAT_NAME = "codea1.mistake_book"
"""Value of the ``"format"`` key of an exported book."""

FORMAT_VERSION = 1
"""Version of the JSON format and of the SQLite schema (``PRAGMA user_version``)."""


class MistakeBookFormatError(ValueError):
    """An imported book (file or dict) is malformed; the message names the file and the field."""


MAX_FREQUENCY = 2**63 - 1
"""The largest frequency a book holds (SQLite's INTEGER; both backends refuse more on import)."""


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validate_rows(data: Any, source: str) -> list[tuple[str, str, str, int]]:
    """Check an exported book and return ``(problem_id, call, encoded expected, frequency)``."""

    def fail(field: str, why: str) -> MistakeBookFormatError:
        return MistakeBookFormatError(f"{source}: {field}: {why}")

    if not isinstance(data, Mapping):
        raise fail("<top level>", f"expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT_NAME:
        raise fail("format", f"expected {FORMAT_NAME!r}, got {data.get('format')!r}")
    version = data.get("version")
    if type(version) is not int or version != FORMAT_VERSION:  # not 1.0, not True
        raise fail("version", f"expected {FORMAT_VERSION}, got {version!r}")
    problems = data.get("problems")
    if not isinstance(problems, Mapping):
        raise fail("problems", "expected an object mapping problem ids to entry lists")
    rows: list[tuple[str, str, str, int]] = []
    ids: set[str] = set()
    for pid, entries in problems.items():
        if str(pid) in ids:  # 1 and "1" (a dict built in Python): one problem, stored as text
            raise fail(f"problems[{pid!r}]", f"the same problem id as the key {str(pid)!r}")
        ids.add(str(pid))
        if not _utf8(str(pid)):
            raise fail(f"problems[{pid!r}]", "the problem id is not UTF-8 text (a lone surrogate)")
        if not isinstance(entries, list):
            raise fail(f"problems[{pid!r}]", "expected a list of entries")
        seen: set[str] = set()
        placed: list[tuple[int, tuple[str, str, str, int]]] = []
        for index, entry in enumerate(entries):
            where = f"problems[{pid!r}][{index}]"
            if not isinstance(entry, Mapping):
                raise fail(where, "expected an object")
            call, frequency = entry.get("call"), entry.get("frequency")
            if not isinstance(call, str) or not call:
                raise fail(f"{where}.call", f"expected a non-empty string, got {call!r}")
            if not _utf8(call):
                raise fail(f"{where}.call", "not UTF-8 text (a lone surrogate)")
            if call in seen:
                raise fail(f"{where}.call", f"duplicate call {call!r}")
            seen.add(call)
            if (
                isinstance(frequency, bool)
                or not isinstance(frequency, int)
                or not 1 <= frequency <= MAX_FREQUENCY
            ):
                raise fail(
                    f"{where}.frequency", f"expected an int from 1 to 2**63 - 1, got {frequency!r}"
                )
            if "expected" not in entry:
                raise fail(f"{where}.expected", "missing")
            try:
                encoded = plain.dumps(plain.decode(entry["expected"]))
            except (plain.PlainDataError, RecursionError) as exc:
                raise fail(f"{where}.expected", f"not tagged plain data: {exc}") from None
            placed.append(
                (_order(entries, index, where, fail), (str(pid), call, encoded, frequency))
            )
        taken: set[int] = set()
        for index, (place, _) in enumerate(placed):
            if place in taken:
                raise fail(f"problems[{pid!r}][{index}].order", f"{place} is another entry's too")
            taken.add(place)
        rows.extend(row for _, row in sorted(placed, key=lambda item: item[0]))
    return rows


def _order(entries: list[Any], index: int, where: str, fail: Any) -> int:
    """Entry ``index``'s place in its problem's insertion order (its index when none has one).

    Raises:
        MistakeBookFormatError: ``order`` is not an int from 0 to the entries' count - 1, or only
            some of the problem's entries have one.

    """
    has = "order" in entries[index]
    if has != ("order" in entries[0]):
        raise fail(
            f"{where}.order",
            "present in some of the problem's entries only (all have one or none does)",
        )
    if not has:
        return index
    order = entries[index]["order"]
    if isinstance(order, bool) or not isinstance(order, int) or not 0 <= order < len(entries):
        raise fail(
            f"{where}.order",
            f"expected an int from 0 to {len(entries) - 1} (the entries' count - 1), got {order!r}",
        )
    return order
