"""Kept as a documented import path; the code lives in :mod:`agents.training.trainer`."""

from agents.training.trainer import (
    Trainer,
    TrainResult,
    build_referee,
    game_host,
    resolve_run_dir,
    resolve_source,
    select_tester_codes,
    step_seed,
)

__all__ = [
    "TrainResult",
    "Trainer",
    "build_referee",
    "game_host",
    "resolve_run_dir",
    "resolve_source",
    "step_seed",
    "select_tester_codes",
]
