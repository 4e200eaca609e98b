"""Kept as a documented import path; the code lives in :mod:`agents.lm.serve`."""

from agents.lm.serve import (
    CompletionService,
    RequestError,
    main,
    make_server,
)

__all__ = [
    "CompletionService",
    "RequestError",
    "main",
    "make_server",
]

if __name__ == "__main__":
    raise SystemExit(main())
