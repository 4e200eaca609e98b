"""Argument types the subcommands share: argparse rejects a bad value with the flag's name.

:func:`check_output` checks an output path before a command's work starts, so a result is never
computed only to be lost on a path it cannot be written to.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

__all__ = [
    "check_output",
    "nonnegative_float",
    "nonnegative_int",
    "port",
    "positive_float",
    "positive_int",
    "probability",
    "top_p",
]


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _float(text: str, expected: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def nonnegative_int(text: str) -> int:
    """An integer >= 0."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def port(text: str) -> int:
    """A TCP port, 0 (any free port) to 65535."""
    value = _int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port in [0, 65535], got {text!r}")
    return value


def probability(text: str) -> float:
    """A number in ``[0, 1]``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


def nonnegative_float(text: str) -> float:
    """A finite number >= 0."""
    value = _float(text, "a number >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _float(text, "a number > 0")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def top_p(text: str) -> float:
    """A nucleus-sampling mass in ``(0, 1]``."""
    value = _float(text, "a number in (0, 1]")
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return value


def check_output(flag: str, path: str | os.PathLike[str], *, directory: bool) -> Path:
    """Check that ``path`` can be written, before the work whose result goes there.

    Missing parent directories are fine (the writer creates them) as long as the nearest
    existing one is a writable directory.

    Args:
        flag: The flag that named the path, for the message (``--out``).
        path: The output file, or with ``directory`` the output directory.
        directory: Whether ``path`` is a directory (else a file).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        NotADirectoryError: ``directory`` and ``path`` is a file, or a parent is a file.
        IsADirectoryError: a file ``path`` is a directory.
        PermissionError: the nearest existing directory cannot be written to.

    """
    target = Path(path)
    if target.is_dir() and not directory:
        raise IsADirectoryError(f"{flag} {path}: is a directory")
    if target.exists() and not target.is_dir() and directory:
        raise NotADirectoryError(f"{flag} {path}: exists and is not a directory")
    nearest = target if directory and target.is_dir() else target.parent
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    if not nearest.is_dir():
        raise NotADirectoryError(f"{flag} {path}: {nearest} is not a directory")
    if not os.access(nearest, os.W_OK | os.X_OK):
        raise PermissionError(f"{flag} {path}: cannot write in {nearest}")
    return target
