"""Observation and action spaces shared by every view of the duel."""

from __future__ import annotations

from typing import Any

from gymnasium import spaces

from codea1_env.game.duel import MAX_ACTION_CHARS, Duel, Role

__all__ = [
    "MAX_CODE_CHARS",
    "MAX_PROMPT_CHARS",
    "REPLACEMENT",
    "TEXT_CHARSET",
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
    chars = [chr(c) for c in range(0x20, 0x3000) if chr(c).isprintable()]
    return "\n\t" + "".join(chars) + REPLACEMENT


TEXT_CHARSET = _charset()
"""Printable characters (ASCII, Latin, Greek, Cyrillic, CJK punctuation, ...) plus newline/tab."""
_ALLOWED = frozenset(TEXT_CHARSET)
_ASCII_PRINTABLE = "".join(chr(c) for c in range(0x20, 0x7F)) + "\n\t"


def observation_space() -> spaces.Dict:
    """The observation: whose turn, the problem prompt, the entry point and the candidate code."""
    return spaces.Dict(
        {
            "role": spaces.Discrete(2),
            "prompt": spaces.Text(max_length=MAX_PROMPT_CHARS, charset=TEXT_CHARSET),
            "entry_point": spaces.Text(
                max_length=MAX_NAME_CHARS, min_length=0, charset=TEXT_CHARSET
            ),
            "code": spaces.Text(max_length=MAX_CODE_CHARS, min_length=0, charset=TEXT_CHARSET),
        }
    )


def action_space(max_chars: int = MAX_ACTION_CHARS) -> spaces.Text:
    """Actions are text over printable ASCII (any string is still a legal move; see the env)."""
    return spaces.Text(max_length=max_chars, min_length=0, charset=_ASCII_PRINTABLE)


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
