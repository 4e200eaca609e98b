"""Argument types the subcommands share: argparse rejects a bad value with the flag's name."""

from __future__ import annotations

import argparse

__all__ = ["nonnegative_int", "port", "positive_int", "probability"]


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


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
