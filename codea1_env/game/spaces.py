"""Observation and action spaces shared by every view of the duel."""

from __future__ import annotations

import copy
from typing import Any

from gymnasium import spaces

from codea1_env.game.duel import MAX_ACTION_CHARS, Duel, Role
from codea1_env.game.shared_text import register_shared_text

__all__ = [
    "MAX_CODE_CHARS",
    "MAX_PROMPT_CHARS",
    "REPLACEMENT",
    "TEXT_CHARSET",
    "CharsetText",
    "action_space",
    "observation_space",
    "observe",
]

MAX_PROMPT_CHARS = 16_384
"""Longest prompt shown in an observation; longer prompts are cut."""
MAX_CODE_CHARS = 32_768
"""Longest candidate program shown to the tester; longer ones are cut."""
MAX_NAME_CHARS = 256
REPLACEMENT = "\ufffd"
"""Shown in place of characters outside :data:`TEXT_CHARSET`."""


def _charset() -> str:
    chars = [chr(c) for c in range(0x20, 0x10000) if chr(c).isprintable()]
    return "\n\t" + "".join(chars)  # REPLACEMENT (U+FFFD) is printable, so it is among them


TEXT_CHARSET = _charset()
"""Newline, tab and every printable character of Unicode's Basic Multilingual Plane (U+0020 to
U+FFFF: every script's letters, CJK ideographs, Hangul, punctuation, symbols; about 55,000).
Characters outside it (emoji and the other supplementary planes, control characters, private
use) are shown as :data:`REPLACEMENT`."""
_ALLOWED = frozenset(TEXT_CHARSET)
_ASCII_PRINTABLE = "".join(chr(c) for c in range(0x20, 0x7F)) + "\n\t"


class CharsetText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` whose copies share its (read-only) charset tables.

    Gymnasium's ``Text`` keeps a character index of one ``np.int32`` per character. With the
    observations' charset (:data:`TEXT_CHARSET`, about 55,000 characters) a ``deepcopy`` walks
    every entry, and ``gymnasium.vector.utils.batch_space`` deep-copies a ``Text`` once per sub-env:
    a plain ``Text`` made a 64-env vector env take seconds to build. A copy of this space is a
    new space with its own random generator (so batched sub-spaces still sample independently),
    the same bounds and the very same charset tables, which nothing ever writes to.

    ``AsyncVectorEnv``'s shared memory reads and writes it through
    :mod:`codea1_env.game.shared_text` (Gymnasium's own reader decodes a ``Text`` only once).
    """

    def __repr__(self) -> str:
        """Gymnasium's form, :data:`TEXT_CHARSET` summarized (printed whole: 55,000 characters)."""
        if self.character_set != _ALLOWED:
            return super().__repr__()
        return (
            f"Text({self.min_length}, {self.max_length}, "
            f"charset=<{len(self.character_set)} characters: TEXT_CHARSET>)"
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> CharsetText:
        clone = copy.copy(self)
        memo[id(self)] = clone
        if self._np_random is not None:
            clone._np_random = copy.deepcopy(self._np_random, memo)
        return clone


register_shared_text(CharsetText)  # AsyncVectorEnv's shared memory shows each step's texts

_TEXT_PROTOTYPES: dict[tuple[int, int], CharsetText] = {}


def _text(max_length: int, min_length: int) -> CharsetText:
    """A fresh :class:`CharsetText` over :data:`TEXT_CHARSET` (tables built once per process).

    Every length bound shares the tables of the first space built: only the bounds differ.
    """
    key = (max_length, min_length)
    prototype = _TEXT_PROTOTYPES.get(key)
    if prototype is None:
        if _TEXT_PROTOTYPES:
            prototype = copy.deepcopy(next(iter(_TEXT_PROTOTYPES.values())))
            prototype.max_length, prototype.min_length = int(max_length), int(min_length)
        else:
            prototype = CharsetText(
                max_length=max_length, min_length=min_length, charset=TEXT_CHARSET
            )
        _TEXT_PROTOTYPES[key] = prototype
    return copy.deepcopy(prototype)


def observation_space() -> spaces.Dict:
    """The observation: whose turn, the problem prompt, the entry point and the candidate code."""
    return spaces.Dict(
        {
            "role": spaces.Discrete(2),
            "prompt": _text(MAX_PROMPT_CHARS, 1),
            "entry_point": _text(MAX_NAME_CHARS, 0),
            "code": _text(MAX_CODE_CHARS, 0),
        }
    )


def action_space(max_chars: int = MAX_ACTION_CHARS) -> spaces.Text:
    """Actions are text over printable ASCII (any string is still a legal move; see the env).

    A :class:`CharsetText`: ``batch_space`` copies it once per sub-env of a vector env, and a
    plain ``Text`` copy walks its character index entry by entry (a 256-env vector env spent
    about 0.1 s on it).
    """
    return CharsetText(max_length=max_chars, min_length=0, charset=_ASCII_PRINTABLE)


def clean_text(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters and replace characters outside the charset."""
    text = text[:limit]
    if _ALLOWED.issuperset(text):  # one C loop: observations are built for every step
        return text
    return "".join(ch if ch in _ALLOWED else REPLACEMENT for ch in text)


def observe(duel: Duel | None, role: Role | None = None) -> dict[str, Any]:
    """The observation of ``duel`` for ``role`` (default: whose turn, or the tester at the end).

    Args:
        duel: The duel, or None for an empty observation.
        role: The role to observe for (the tester sees :attr:`Duel.shown_program`).

    """
    if duel is None:
        return {"role": 0, "prompt": "", "entry_point": "", "code": ""}
    if role is None:
        role = duel.role if duel.role is not None else Role.TESTER
    code = "" if role is Role.CODER else duel.shown_program
    return {
        "role": int(role),
        "prompt": clean_text(duel.problem.prompt, MAX_PROMPT_CHARS),
        "entry_point": clean_text(duel.problem.entry_point, MAX_NAME_CHARS),
        "code": clean_text(code, MAX_CODE_CHARS),
    }
