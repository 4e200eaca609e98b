"""Training-stability options for adversarial co-evolution, in one documented place.

Practitioners of Code-A1-style training recommend a few controls to keep the coder and the tester
from destabilising each other. Each is an option here, used by the env views and the trainer
through the referee. Defaults follow the paper's released setting; where the paper has none, the
option is off.

* ``curriculum`` (off): draw problems by difficulty, starting easy and widening as the coder's
  running GT pass rate rises (:mod:`codea1_env.problems.curriculum`).
* ``hard_only`` (off): keep only problems at or above this difficulty (the paper trains on
  KodCode's hard split).
* ``anonymize_code`` (off): show the tester the candidate with names, comments and docstrings
  stripped (:mod:`codea1_env.game.anonymize`); tests still run on the original program.
* ``book_capacity_per_problem`` / ``book_capacity_total`` (unbounded): bound the mistake book,
  evicting the lowest-frequency entries (the write-up suggests 1,000-2,000 tests in all).
* ``book_refresh_every`` (off): every N scored batches, re-run the stored tests of the batch's
  problems on the GT and drop any that no longer hold.
* ``quality_filter`` (off): reject trivial tests before they count
  (:mod:`codea1_env.scoring.quality`), counting them as invalid; off scores them as the paper does,
  so both can be compared.
* ``always_pass_after`` (16): with the filter on, a test that every one of at least this many
  distinct candidates passed is trivial.

Execution limits (seconds per call, per program, memory) are :class:`codea1_env.sandbox.Limits`,
passed as the views' ``limits=`` argument; the write-up's guidance is 1-5 s per call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from codea1_env.problems.curriculum import CurriculumSchedule

__all__ = ["StabilityOptions", "make_stability"]


@dataclass(frozen=True)
class StabilityOptions:
    """See the module docstring for each option's meaning and default.

    Each field's docstring is also the help text of the ``codea1 train`` flag of the same name
    (``curriculum_schedule``'s fields: ``--curriculum-start`` and so on).
    """

    curriculum: bool = False
    """Sample problems by difficulty, widening as the coder's GT pass rate rises."""
    curriculum_schedule: CurriculumSchedule = field(default_factory=CurriculumSchedule)
    """The schedule used when ``curriculum`` is on."""
    hard_only: float | None = None
    """Keep only problems whose difficulty is at least this (None: keep all; the paper trains on
    KodCode's hard split)."""
    anonymize_code: bool = False
    """Show the tester the candidate with names, comments and docstrings stripped."""
    book_capacity_per_problem: int | None = None
    """Most mistake-book entries kept per problem (None: unbounded)."""
    book_capacity_total: int | None = None
    """Most mistake-book entries kept in all (None: unbounded; the write-up suggests 1000-2000)."""
    book_refresh_every: int | None = None
    """Re-validate stored tests against the GT every N scored batches (None: never; a training
    step scores one batch)."""
    quality_filter: bool = False
    """Reject trivial tests (counted invalid) instead of scoring them as the paper does."""
    always_pass_after: int = 16
    """With ``quality_filter``: distinct candidates that must all pass a test before it counts
    as trivial. The pass counts live in the referee; the trainer's checkpoints save them, so a
    resumed training run filters as the uninterrupted run does."""

    def __post_init__(self) -> None:
        for name in ("book_capacity_per_problem", "book_capacity_total", "book_refresh_every"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"StabilityOptions.{name} must be a positive int or None")
        if self.hard_only is not None and not 0.0 <= self.hard_only <= 1.0:
            raise ValueError("StabilityOptions.hard_only must be in [0, 1] or None")
        if self.always_pass_after < 1:
            raise ValueError("StabilityOptions.always_pass_after must be >= 1")


def make_stability(options: StabilityOptions | Mapping[str, Any] | None) -> StabilityOptions:
    """A :class:`StabilityOptions` from an instance, a dict of its fields, or None (defaults).

    Raises:
        ValueError: an unknown field name.
    """
    if options is None:
        return StabilityOptions()
    if isinstance(options, StabilityOptions):
        return options
    known = {f.name for f in dataclasses.fields(StabilityOptions)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"stability: unknown option(s) {unknown}; known: {sorted(known)}")
    values = dict(options)
    schedule = values.get("curriculum_schedule")
    if isinstance(schedule, Mapping):
        values["curriculum_schedule"] = CurriculumSchedule(**schedule)
    return StabilityOptions(**values)
