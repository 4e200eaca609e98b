"""Kept as a documented import path; the code lives in :mod:`codea1_env.sandbox.worker.plain`."""

from codea1_env.sandbox.worker.plain import (
    EQUALITIES,
    MAX_DEPTH,
    PlainDataError,
    decode,
    dumps,
    encode,
    equality,
    is_plain,
    loads,
    python_equal,
    to_source,
    values_equal,
)

__all__ = [
    "MAX_DEPTH",
    "PlainDataError",
    "decode",
    "dumps",
    "encode",
    "is_plain",
    "loads",
    "to_source",
    "EQUALITIES",
    "equality",
    "python_equal",
    "values_equal",
]
