"""The in-memory mistake book backend: a dict behind a lock."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from codea1_env.mistake_book.book import MistakeBook, Update, check_tie_order

__all__ = ["InMemoryMistakeBook"]


class InMemoryMistakeBook(MistakeBook):
    """A mistake book held in a dict; thread-safe; lost when the process ends.

    Pickling (for example into a subprocess env) copies the contents: the copies then evolve
    separately. Use :class:`SqliteMistakeBook` to share one book between processes.

    Args:
        tie_order: How entries of equal frequency rank: ``"oldest"`` (first in, first) or
            ``"authors"`` (the authors' in-place sort); see :class:`MistakeBook`.

    Raises:
        ValueError: ``tie_order`` is not one of :data:`~codea1_env.mistake_book.TIE_ORDERS`.

    """

    def __init__(self, *, tie_order: str = "oldest") -> None:
        self.tie_order = check_tie_order(tie_order)
        self._lock = threading.RLock()
        # problem_id -> call -> [encoded expected, frequency, insertion number]
        self._data: dict[str, dict[str, list[Any]]] = {}
        self._counter = 0

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {"data": self._data, "counter": self._counter, "tie_order": self.tie_order}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.tie_order = check_tie_order(state.get("tie_order", "oldest"))
        self._lock = threading.RLock()
        self._data = state["data"]
        self._counter = state["counter"]

    @contextmanager
    def _atomically(self) -> Iterator[None]:
        with self._lock:
            yield

    def _ranked(self, problem_id: str, limit: int | None) -> list[tuple[str, str, int]]:
        with self._lock:
            rows = sorted(
                self._data.get(problem_id, {}).items(), key=lambda kv: (-kv[1][1], kv[1][2])
            )
            return [(call, enc, freq) for call, (enc, freq, _) in rows[:limit]]

    def _oldest_first(self, problem_id: str) -> list[str]:
        with self._lock:
            rows = sorted(self._data.get(problem_id, {}).items(), key=lambda kv: kv[1][2])
            return [call for call, _ in rows]

    def _reorder(self, problem_id: str, rows: list[tuple[str, str, int]]) -> None:
        """New insertion numbers in ``rows``' order, swapped in at once (nothing to roll back)."""
        with self._lock:
            start = self._counter
            renumbered = {
                call: [encoded, freq, start + place + 1]
                for place, (call, encoded, freq) in enumerate(rows)
            }
            self._counter = start + len(rows)
            self._data[problem_id] = renumbered

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
                return len(self._data.get(str(problem_id), {}))
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
