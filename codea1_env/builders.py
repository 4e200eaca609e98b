"""Turning constructor arguments into the objects every view needs (problems, referee)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from codea1_env.mistake_book import InMemoryMistakeBook, MistakeBook, SqliteMistakeBook
from codea1_env.problems import Problem, ProblemSource, load_source, problem_from_dict
from codea1_env.referee import Referee
from codea1_env.rewards import RewardConfig
from codea1_env.sandbox.base import Limits, Sandbox

__all__ = ["ProblemPicker", "make_limits", "make_mistake_book", "make_referee"]


def make_limits(limits: Limits | Mapping[str, Any] | None) -> Limits:
    """A :class:`Limits` from an instance, a dict of its fields, or None (defaults).

    Raises:
        ValueError: a dict names a field :class:`Limits` does not have.

    """
    if limits is None:
        return Limits()
    if isinstance(limits, Limits):
        return limits
    known = {f.name for f in dataclasses.fields(Limits)}
    unknown = sorted(set(limits) - known)
    if unknown:
        raise ValueError(f"limits: unknown field(s) {unknown}; known: {sorted(known)}")
    return Limits(**dict(limits))


def make_mistake_book(book: MistakeBook | str | None) -> MistakeBook:
    """A mistake book from an instance, a SQLite path, or None/``"memory"`` (in memory)."""
    if book is None or book == "memory":
        return InMemoryMistakeBook()
    if isinstance(book, MistakeBook):
        return book
    return SqliteMistakeBook(str(book))


def make_sandbox(sandbox: Sandbox | str | None) -> Sandbox | None:
    """A sandbox instance from an instance or a backend name; None means "start lazily"."""
    if sandbox is None or not isinstance(sandbox, str):
        return sandbox
    from codea1_env.sandbox.factory import make_sandbox as factory

    return factory(sandbox)


def make_referee(
    reward_config: RewardConfig,
    limits: Limits | Mapping[str, Any] | None = None,
    mistake_book: MistakeBook | str | None = None,
    sandbox: Sandbox | str | None = None,
) -> Referee:
    """A :class:`Referee` from the env's scoring arguments."""
    return Referee(
        sandbox=make_sandbox(sandbox),
        reward_config=reward_config,
        limits=make_limits(limits),
        mistake_book=make_mistake_book(mistake_book),
        owns_sandbox=sandbox is None or isinstance(sandbox, str),
    )


class ProblemPicker:
    """Chooses each episode's problem: drawn from a source, by id, or given in ``reset`` options.

    Args:
        source: A :class:`ProblemSource`, a spec for :func:`load_source` (``"bank"``,
            ``"humaneval"``, ``"procedural"``, ``"jsonl:PATH"``, ...), or a list of problems.

    """

    def __init__(self, source: Any = "bank") -> None:
        if isinstance(source, str):
            self.source: ProblemSource | Any = load_source(source)
        elif isinstance(source, (list, tuple)):
            from codea1_env.problems import ListSource

            self.source = ListSource(list(source))
        else:
            self.source = source

    def pick(self, rng: np.random.Generator, options: Mapping[str, Any] | None) -> Problem:
        """The problem for the next episode.

        ``options["problem"]`` (a JSONL-schema record or a :class:`Problem`) wins over
        ``options["problem_id"]``, which wins over a random draw.

        Raises:
            ValueError: a malformed problem record or an unknown problem id.

        """
        options = options or {}
        if "problem" in options:
            record = options["problem"]
            if isinstance(record, Problem):
                return record
            if not isinstance(record, Mapping):
                raise ValueError(
                    "reset(options={'problem': ...}) expects a dict in the JSONL schema"
                )
            return problem_from_dict(record, where="reset(options['problem'])")
        if "problem_id" in options:
            task_id = options["problem_id"]
            try:
                return self.source[task_id]
            except KeyError:
                raise ValueError(
                    f"reset(options={{'problem_id': {task_id!r}}}): no such problem in "
                    f"source {getattr(self.source, 'name', type(self.source).__name__)!r}"
                ) from None
        return self.source.sample(rng)
