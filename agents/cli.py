"""Kept as a documented import path; the code lives in :mod:`agents.commands.cli`."""

import sys

from agents.commands.cli import (
    build_parser,
    main,
)

__all__ = [
    "build_parser",
    "main",
]

if __name__ == "__main__":
    sys.exit(main())
