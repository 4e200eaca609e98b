"""Decoding JSON that a model, a client or a data file wrote.

:func:`json.loads` raises :class:`RecursionError` on deeply nested input (``[[[[...]]]]``),
which is not a :class:`ValueError` and so slips past every ``except json.JSONDecodeError``.
:func:`decode_json` turns it into a :class:`json.JSONDecodeError`, so that a caller's one
handler for bad JSON covers it too.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["decode_json"]


def decode_json(text: str | bytes | bytearray) -> Any:
    """:func:`json.loads`, where nesting too deep to decode is bad JSON like any other.

    Args:
        text: The JSON text (bytes as :func:`json.loads` takes them).

    Returns:
        The decoded value.

    Raises:
        json.JSONDecodeError: ``text`` is not valid JSON, or nests too deeply to decode.
        UnicodeDecodeError: ``text`` is bytes in no encoding JSON allows.

    """
    try:
        return json.loads(text)
    except RecursionError:
        doc = text if isinstance(text, str) else ""
        raise json.JSONDecodeError("nested too deeply to decode", doc, 0) from None
