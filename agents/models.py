"""Kept as a documented import path; the code lives in :mod:`agents.lm.models`."""

from agents.lm.models import (
    TINY_SIZES,
    ModelSize,
    build_tiny_model,
    count_parameters,
    load_model,
    load_tokenizer,
    resolve_dtype,
    tiny_config,
)

__all__ = [
    "TINY_SIZES",
    "ModelSize",
    "build_tiny_model",
    "count_parameters",
    "load_model",
    "load_tokenizer",
    "resolve_dtype",
    "tiny_config",
]
