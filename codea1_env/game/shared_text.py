r"""Text observations through Gymnasium's shared memory (``AsyncVectorEnv``'s default).

``AsyncVectorEnv(shared_memory=True)`` builds its observation buffer once, at construction, with
``read_from_shared_memory``: numeric spaces come back as views on the shared array, so each
step's values show through, but Gymnasium 1.x decodes a ``Text`` into a tuple of strings right
there, so every later reset and step returned the blank text of the empty buffer (``"\n"``
repeated: the first character of the charset). For :class:`~codea1_env.game.spaces.CharsetText`
this module registers the two directions instead:

- reading gives a :class:`SharedTexts`: a live, read-only sequence over the shared array that
  decodes the current text of an env when indexed; a deep copy (the vector env's ``copy=True``,
  its default) is a plain tuple of strings, as the synchronous vector env returns;
- writing encodes the whole string at once (the code points through a lookup table) instead of
  Gymnasium's character-by-character loop over a 55,000-character index.

Both read and write the layout Gymnasium allocates (``create_shared_memory``: ``max_length``
``int32`` character indices per env, padded with ``len(charset)``), so a buffer written by
either implementation decodes the same through the other.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils.shared_memory import read_from_shared_memory, write_to_shared_memory

__all__ = ["SharedTexts", "decode", "encode", "register_shared_text"]

_TABLES: dict[int, tuple[tuple[str, ...], np.ndarray, np.ndarray]] = {}
"""Each space's tables by ``id``, dropped when the space is (``weakref.finalize``)."""


def _tables(space: spaces.Text) -> tuple[np.ndarray, np.ndarray]:
    """``(index -> code point, code point -> index or -1)`` for ``space``'s charset.

    Built once per space, freed with it: a vector env reads through one space and each worker
    writes through its env's own. Not kept on the space, whose pickle stays Gymnasium's.
    """
    cached = _TABLES.get(id(space))
    if cached is None or cached[0] is not space.character_list:
        chars = space.character_list
        points = np.fromiter((ord(ch) for ch in chars), dtype=np.uint32, count=len(chars))
        lookup = np.full(int(points.max(initial=0)) + 1, -1, dtype=np.int32)
        lookup[points] = np.arange(len(points), dtype=np.int32)
        if cached is None:
            weakref.finalize(space, _TABLES.pop, id(space), None)
        cached = (chars, points, lookup)
        _TABLES[id(space)] = cached
    return cached[1], cached[2]


def decode(space: spaces.Text, indices: np.ndarray) -> str:
    """The text of one env's row of character indices (entries past the charset are padding)."""
    points, _ = _tables(space)
    kept = indices[(indices >= 0) & (indices < len(points))]
    return points[kept].astype("<u4").tobytes().decode("utf-32-le")


def encode(space: spaces.Text, text: str) -> np.ndarray:
    """``text`` as ``max_length`` character indices, padded with ``len(charset)``.

    Raises:
        ValueError: ``text`` is longer than ``max_length`` or has a character outside the
            charset (the observation is not in the space; Gymnasium's own writer fails too).
    """
    _, lookup = _tables(space)
    if len(text) > space.max_length:
        raise ValueError(f"a text of {len(text)} characters for {space} (max {space.max_length})")
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    row = np.full(space.max_length, len(space.character_list), dtype=np.int32)
    inside = points < len(lookup)
    found = np.where(inside, lookup[np.where(inside, points, 0)], -1)
    if (found < 0).any():
        bad = text[int(np.argmax(found < 0))]
        raise ValueError(f"the character {bad!r} is outside the charset of {space}")
    row[: len(found)] = found
    return row


class SharedTexts(Sequence[str]):
    """The current texts of a vector env's sub-envs, read from its shared memory when indexed.

    What ``AsyncVectorEnv`` keeps as a ``Text`` observation buffer. With ``copy=True`` (the
    default) users see ``deepcopy`` of it: a tuple of strings, as ``SyncVectorEnv`` gives. With
    ``copy=False`` they get this live view, which changes with the next step (as the numeric
    observations' arrays do); ``tuple(view)`` is a snapshot, and what the vector env's
    ``observation_space.contains`` takes (Gymnasium's ``Tuple`` space checks for a tuple).
    """

    def __init__(self, space: spaces.Text, shared: Any, n: int) -> None:
        """Wrap ``n`` envs' rows of ``shared`` (a ``multiprocessing`` ``int32`` array)."""
        self._space = space
        self._rows = np.frombuffer(shared.get_obj(), dtype=np.int32).reshape(n, space.max_length)

    def __len__(self) -> int:
        """The number of sub-envs."""
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        """Sub-env ``index``'s current text (a slice: a tuple of them)."""
        if isinstance(index, slice):
            return tuple(decode(self._space, row) for row in self._rows[index])
        return decode(self._space, self._rows[index])

    def __iter__(self) -> Iterator[str]:
        """The current texts in order."""
        return (decode(self._space, row) for row in self._rows)

    def __eq__(self, other: object) -> bool:
        """Equal to a sequence of the same texts (a tuple or list included)."""
        if isinstance(other, (SharedTexts, tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # it changes with every step

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        """The texts now, as a tuple of strings (what ``AsyncVectorEnv(copy=True)`` returns)."""
        return tuple(self)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (sent to another process) as the tuple of its texts now."""
        return (tuple, (tuple(self),))

    def __repr__(self) -> str:
        """The current texts, as a tuple's repr."""
        return f"SharedTexts{tuple(self)!r}"


def register_shared_text(cls: type[spaces.Text]) -> None:
    """Route Gymnasium's shared-memory reads and writes of ``cls`` through this module."""

    @read_from_shared_memory.register(cls)
    def _read(space: spaces.Text, shared_memory: Any, n: int = 1) -> Any:  # a SharedTexts
        return SharedTexts(space, shared_memory, n)

    @write_to_shared_memory.register(cls)
    def _write(space: spaces.Text, index: int, values: str, shared_memory: Any) -> None:
        size = space.max_length
        destination = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
        destination[index * size : (index + 1) * size] = encode(space, values)
