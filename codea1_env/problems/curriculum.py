"""Curriculum: draw problems by difficulty, starting easy and widening as the coder improves.

A problem's difficulty is, in order of preference: its ``difficulty`` field; a tag ``easy`` /
``medium`` / ``hard`` (0.2 / 0.5 / 0.8); one minus the coder's observed GT pass rate on it (once
it has been played); else 0.5. The :class:`Curriculum` admits problems up to a difficulty
``level`` (starting at ``schedule.start``); whenever the coder's running GT pass rate over the last
``schedule.window`` episodes reaches ``schedule.promote_at``, the level rises by
``schedule.step``. Every promotion is logged in :attr:`Curriculum.history`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from codea1_env.problems.problem import Problem

__all__ = ["Curriculum", "CurriculumSchedule", "difficulty_of", "hard_only"]

_TAG_DIFFICULTY = {"easy": 0.2, "medium": 0.5, "hard": 0.8}


@dataclass(frozen=True)
class CurriculumSchedule:
    """When and how the admitted difficulty widens (each field documented below it)."""

    start: float = 0.3
    """Initial highest admitted difficulty of the curriculum, in [0, 1]."""
    step: float = 0.1
    """How much the admitted difficulty rises at each promotion, in (0, 1]."""
    promote_at: float = 0.7
    """Running GT pass rate (over ``window`` episodes) that triggers a promotion, in (0, 1]."""
    window: int = 64
    """Episodes in the running pass rate (a promotion needs a full window); in training, one
    episode is one code."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.start <= 1.0 or not 0.0 < self.step <= 1.0:
            raise ValueError("CurriculumSchedule: start must be in [0, 1] and step in (0, 1]")
        if not 0.0 < self.promote_at <= 1.0 or self.window < 1:
            raise ValueError("CurriculumSchedule: promote_at must be in (0, 1], window >= 1")


def difficulty_of(problem: Problem, observed: dict[str, float] | None = None) -> float:
    """The difficulty used by the curriculum (see the module docstring)."""
    if problem.difficulty is not None:
        return float(problem.difficulty)
    for tag in problem.tags:
        if tag.lower() in _TAG_DIFFICULTY:
            return _TAG_DIFFICULTY[tag.lower()]
    if observed and problem.task_id in observed:
        return 1.0 - observed[problem.task_id]
    return 0.5


class Curriculum:
    """A problem source that samples by a widening difficulty level.

    It wraps any source and is itself a source (``sample``, ``ids``, ``__getitem__``, ...), so
    every env view and the trainer can use it. Feed it outcomes with :meth:`observe`; the envs do
    this automatically with the coder's GT pass rate at the end of each episode.

    Args:
        source: The underlying problem source (anything with ``ids()`` and ``__getitem__``).
        schedule: The widening schedule.
    """

    def __init__(self, source: Any, schedule: CurriculumSchedule | None = None) -> None:
        self.source = source
        self.schedule = schedule or CurriculumSchedule()
        self.name = f"curriculum({getattr(source, 'name', type(source).__name__)})"
        self.level = self.schedule.start
        self.history: list[dict[str, float]] = []
        self._recent: deque[float] = deque(maxlen=self.schedule.window)
        self._observed: dict[str, float] = {}
        self._episodes = 0
        self._problems = [source[task_id] for task_id in source.ids()]

    # ---- source protocol
    def __len__(self) -> int:
        return len(self._problems)

    def __iter__(self) -> Iterator[Problem]:
        return iter(self._problems)

    def __getitem__(self, task_id: str) -> Problem:
        return self.source[task_id]

    def ids(self) -> list[str]:
        """All problem ids of the underlying source."""
        return [p.task_id for p in self._problems]

    def admitted(self) -> list[Problem]:
        """Problems at or below the current level (the easiest one if none is)."""
        scored = [(difficulty_of(p, self._observed), p) for p in self._problems]
        inside = [p for d, p in scored if d <= self.level + 1e-12]
        if inside:
            return inside
        easiest = min(d for d, _ in scored)
        return [p for d, p in scored if d == easiest]

    def sample(self, rng: np.random.Generator) -> Problem:
        """Draw uniformly among the admitted problems."""
        pool = self.admitted()
        return pool[int(rng.integers(len(pool)))]

    # ---- feedback
    def observe(self, task_id: str, pass_rate: float) -> None:
        """Record the coder's GT pass rate on one episode and promote when due."""
        pass_rate = float(min(max(pass_rate, 0.0), 1.0))
        previous = self._observed.get(task_id)
        self._observed[task_id] = (
            pass_rate if previous is None else 0.8 * previous + 0.2 * pass_rate
        )
        self._recent.append(pass_rate)
        self._episodes += 1
        full = len(self._recent) == self._recent.maxlen
        if full and self.level < 1.0 and self.running_pass_rate() >= self.schedule.promote_at:
            self.level = min(1.0, self.level + self.schedule.step)
            self.history.append(
                {
                    "episode": float(self._episodes),
                    "level": self.level,
                    "pass_rate": self.running_pass_rate(),
                }
            )
            self._recent.clear()

    def running_pass_rate(self) -> float:
        """Mean GT pass rate over the current window (0 before any episode)."""
        return sum(self._recent) / len(self._recent) if self._recent else 0.0

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume the schedule (for checkpoints)."""
        return {
            "level": self.level,
            "history": list(self.history),
            "recent": list(self._recent),
            "observed": dict(self._observed),
            "episodes": self._episodes,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.level = float(state["level"])
        self.history = [dict(h) for h in state["history"]]
        self._recent.clear()
        self._recent.extend(float(x) for x in state["recent"])
        self._observed = {str(k): float(v) for k, v in state["observed"].items()}
        self._episodes = int(state["episodes"])

    def state(self) -> dict[str, float]:
        """Numbers to log: level, running pass rate, admitted problems, promotions."""
        return {
            "curriculum/level": self.level,
            "curriculum/running_pass_rate": self.running_pass_rate(),
            "curriculum/admitted": float(len(self.admitted())),
            "curriculum/promotions": float(len(self.history)),
        }


def hard_only(source: Any, min_difficulty: float = 0.7) -> Any:
    """A list source with only the problems whose difficulty is at least ``min_difficulty``.

    Raises:
        ValueError: no problem is that hard.
    """
    from codea1_env.problems import ListSource

    kept = [source[t] for t in source.ids() if difficulty_of(source[t]) >= min_difficulty]
    if not kept:
        raise ValueError(f"hard_only: no problem has difficulty >= {min_difficulty}")
    return ListSource(kept)
