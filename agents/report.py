"""Kept as a documented import path; the code lives in :mod:`agents.evaluation.report`."""

from agents.evaluation.report import (
    DEFAULT_SMOOTHING,
    PLOTS,
    RunData,
    broke_the_code,
    ema,
    load_run,
    pick_duels,
    play_example_duels,
    plot_run,
    write_report,
)

__all__ = [
    "DEFAULT_SMOOTHING",
    "PLOTS",
    "RunData",
    "broke_the_code",
    "ema",
    "load_run",
    "pick_duels",
    "play_example_duels",
    "plot_run",
    "write_report",
]
