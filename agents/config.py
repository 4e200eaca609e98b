"""Kept as a documented import path; the code lives in :mod:`agents.training.config`."""

from agents.training.config import (
    INERT_FIELDS,
    MODES,
    PRESETS,
    TrainConfig,
    add_config_arguments,
    config_from_args,
    field_docs,
    from_preset,
)

__all__ = [
    "INERT_FIELDS",
    "MODES",
    "PRESETS",
    "TrainConfig",
    "add_config_arguments",
    "config_from_args",
    "field_docs",
    "from_preset",
]
