"""Turning constructor arguments into the objects every view needs (problems, referee)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from codea1_env.game.caller import warn_at_caller
from codea1_env.game.duel import Duel, DuelOutcome, fixed_tester, score_duels
from codea1_env.mistake_book import InMemoryMistakeBook, MistakeBook, open_mistake_book
from codea1_env.problems import Problem, ProblemSource, load_source, problem_from_dict
from codea1_env.problems.curriculum import Curriculum, hard_only
from codea1_env.sandbox.base import Limits, Sandbox
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.stability import StabilityOptions, make_stability

__all__ = [
    "RESET_OPTIONS",
    "DuelHost",
    "ProblemPicker",
    "check_reset_options",
    "make_limits",
    "make_mistake_book",
    "make_referee",
]

RESET_OPTIONS = ("problem", "problem_id")
"""The ``reset(options=...)`` keys every view reads (the vector env adds ``problem_ids``)."""


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


def make_mistake_book(book: MistakeBook | str | os.PathLike[str] | bool | None) -> MistakeBook:
    """A mistake book from an instance, a spec for :func:`open_mistake_book`, or a bool.

    Args:
        book: A :class:`MistakeBook`; None, ``"memory"`` or ``":memory:"`` (in memory); a SQLite
            file's path (``"sqlite:"`` prefix optional); ``False`` for an in-memory book that
            stays empty (the host then neither replays nor records: no mistake book, as
            ``codea1 train --no-mistake-book``); ``True`` for the default (in memory).

    Raises:
        TypeError: ``book`` is none of these (the message names what it got).
        ValueError: an empty path.

    """
    if isinstance(book, MistakeBook):
        return book
    if book is None or isinstance(book, bool):
        return InMemoryMistakeBook()
    if not isinstance(book, (str, os.PathLike)):
        raise TypeError(
            "mistake_book must be a MistakeBook, None, 'memory', a SQLite file's path or a bool "
            f"(False: no mistake book), got {type(book).__name__} {book!r}"
        )
    return open_mistake_book(book)


def make_sandbox(sandbox: Sandbox | str | None) -> Sandbox | None:
    """A sandbox instance from an instance or a backend name; None means "start lazily"."""
    if sandbox is None or not isinstance(sandbox, str):
        return sandbox
    from codea1_env.sandbox.factory import make_sandbox as factory

    return factory(sandbox)


def make_referee(
    reward_config: RewardConfig,
    limits: Limits | Mapping[str, Any] | None = None,
    mistake_book: MistakeBook | str | os.PathLike[str] | bool | None = None,
    sandbox: Sandbox | str | None = None,
    stability: StabilityOptions | None = None,
) -> Referee:
    """A :class:`Referee` from the env's scoring arguments."""
    return Referee(
        stability=stability,
        sandbox=make_sandbox(sandbox),
        reward_config=reward_config,
        limits=make_limits(limits),
        mistake_book=make_mistake_book(mistake_book),
        owns_sandbox=sandbox is None or isinstance(sandbox, str),
    )


def check_reset_options(
    options: Mapping[str, Any] | None, extra: tuple[str, ...] = ()
) -> Mapping[str, Any]:
    """``options`` without the keys no view reads, after a warning that names them.

    Args:
        options: What ``reset(options=...)`` was given (None: no options).
        extra: Keys the calling view reads besides :data:`RESET_OPTIONS`.

    Raises:
        TypeError: ``options`` is not a mapping.

    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"reset(options=...) expects a dict, got {type(options).__name__}")
    known = RESET_OPTIONS + extra
    unknown = [key for key in options if key not in known]
    if not unknown:
        return options
    warn_at_caller(
        f"reset(options=...): unknown key(s) {', '.join(sorted(map(repr, unknown)))} ignored; "
        f"known: {', '.join(known)}"
    )
    return {key: value for key, value in options.items() if key in known}


class ProblemPicker:
    """Chooses each episode's problem: drawn from a source, by id, or given in ``reset`` options.

    Args:
        source: A :class:`ProblemSource`, a spec for :func:`load_source` (``"bank"``,
            ``"humaneval"``, ``"procedural"``, ``"jsonl:PATH"``, ...), or a list of problems.
        stability: ``hard_only`` filters the source; ``curriculum`` wraps it in a
            :class:`~codea1_env.problems.curriculum.Curriculum`.
    """

    def __init__(self, source: Any = "bank", stability: StabilityOptions | None = None) -> None:
        if isinstance(source, str):
            self.source: ProblemSource | Any = load_source(source)
        elif isinstance(source, (list, tuple)):
            from codea1_env.problems import ListSource

            self.source = ListSource(list(source))
        else:
            self.source = source
        stability = stability or StabilityOptions()
        if stability.hard_only is not None:
            self.source = hard_only(self.source, stability.hard_only)
        if stability.curriculum and not isinstance(self.source, Curriculum):
            self.source = Curriculum(self.source, stability.curriculum_schedule)

    @property
    def curriculum(self) -> Curriculum | None:
        """The curriculum, when problems are drawn through one."""
        return self.source if isinstance(self.source, Curriculum) else None

    def observe(self, task_id: str, gt_pass_rate: float) -> None:
        """Feed an episode's outcome to the curriculum (if any)."""
        if self.curriculum is not None:
            self.curriculum.observe(task_id, gt_pass_rate)

    @property
    def source_name(self) -> str:
        """The problem source's name, for messages (its type's name when it has none)."""
        return str(getattr(self.source, "name", type(self.source).__name__))

    def pick(self, rng: np.random.Generator, options: Mapping[str, Any] | None) -> Problem:
        """The problem for the next episode.

        ``options["problem"]`` (a JSONL-schema record or a :class:`Problem`) or
        ``options["problem_id"]`` (a str; not both), else a random draw.

        Keys other than :data:`RESET_OPTIONS` are ignored with a warning that names them (a
        misspelt ``problem_id`` would otherwise play a random problem without a word).

        Raises:
            TypeError: ``options`` is not a mapping.
            ValueError: a malformed problem record, an unknown problem id, or both keys.

        """
        options = check_reset_options(options)
        if "problem" in options and "problem_id" in options:
            raise ValueError(
                "reset(options=...): give 'problem' (a record to play) or 'problem_id' (one of "
                "the source's ids), not both"
            )
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
            if not isinstance(task_id, str):
                raise TypeError(
                    f"reset(options={{'problem_id': ...}}) expects a str (a task id such as "
                    f"'bank/clamp'), got {type(task_id).__name__} {task_id!r}"
                )
            try:
                return self.source[task_id]
            except KeyError:
                raise ValueError(
                    f"reset(options={{'problem_id': {task_id!r}}}): no such problem in "
                    f"source {self.source_name!r}"
                ) from None
        return self.source.sample(rng)


class DuelHost:
    """What every view of the duel shares: problem picking, the referee and the options.

    The Gymnasium env, the vector env, the PettingZoo view and the single-role envs each hold one
    and differ only in how they expose turns and rewards.

    Args:
        source: Problem source (see :class:`ProblemPicker`).
        reward_config: Reward settings for a referee built here.
        limits: Sandbox limits for a referee built here.
        mistake_book: Mistake book for a referee built here (:func:`make_mistake_book`);
            ``False``: none (nothing replayed, nothing recorded).
        sandbox: Sandbox (instance or backend name) for a referee built here.
        referee: A shared referee; when given, the four arguments above are ignored (its book
            is its own, so ``mistake_book=False`` is refused with it).

    Raises:
        ValueError: ``mistake_book=False`` with a shared referee.
        stability: Stability options (see :mod:`codea1_env.stability`).
    """

    def __init__(
        self,
        source: Any,
        reward_config: RewardConfig,
        limits: Limits | Mapping[str, Any] | None,
        mistake_book: MistakeBook | str | os.PathLike[str] | bool | None,
        sandbox: Sandbox | str | None,
        referee: Referee | None,
        stability: StabilityOptions | Mapping[str, Any] | None,
    ) -> None:
        self.uses_book = mistake_book is not False
        if referee is not None and not self.uses_book:
            raise ValueError(
                "mistake_book=False needs the env's own referee: a shared referee's mistake book "
                "is the referee's (give it an empty book it never updates, or no referee)"
            )
        self.stability = make_stability(stability)
        self.picker = ProblemPicker(source, self.stability)
        self.owns_referee = referee is None
        self.referee = referee or make_referee(
            reward_config, limits, mistake_book, sandbox, self.stability
        )

    def __getstate__(self) -> dict[str, Any]:
        """Refused: a host holds a referee with sandbox processes and an open mistake book."""
        raise TypeError(
            "a codea1 env cannot be pickled or deep-copied: it holds sandbox worker processes "
            "and its mistake book; build one per process (gym.make, or the constructor that "
            "Gymnasium's async vector env pickles) and share a book through a SQLite file"
        )

    @property
    def golden(self) -> bool:
        """True in the "Golden Tests" mode (no tester)."""
        return self.referee.reward_config.mode == "golden"

    @property
    def fixed_tester(self) -> str | None:
        """The fixed opponent's suite, or None when a tester plays (:func:`.duel.fixed_tester`).

        :meth:`play_code` plays it, so the duel is finished after the coder's move and no view
        needs a branch of its own.
        """
        return fixed_tester(self.referee.reward_config.mode)

    def new_duel(self, rng: np.random.Generator, options: Mapping[str, Any] | None) -> Duel:
        """A fresh duel on the next problem.

        Raises:
            RuntimeError: the env was closed and its referee with it (the duel could not be
                scored), or the referee the env was given (and does not own) was closed; a
                given referee stays usable after the env closes.

        """
        if self.referee.closed:
            if not self.owns_referee:
                raise RuntimeError(
                    "the referee given to this env was closed by its owner: give the env an "
                    "open referee (or none) to play on"
                )
            raise RuntimeError(
                "this env is closed: close() stopped its sandbox; make a new env to play on"
            )
        return Duel(self.picker.pick(rng, options))

    def play_code(self, duel: Duel, action: Any, max_chars: int) -> None:
        """The coder's move, then the fixed opponent's when there is one.

        The move is anonymized for the tester's view when the stability options ask; with a
        fixed opponent (:attr:`fixed_tester`) the duel is finished after it: check
        ``duel.finished``.
        """
        duel.play_code(action, max_chars, anonymize_code=self.stability.anonymize_code)
        suite = self.fixed_tester
        if suite is not None:
            duel.play_tests(suite, max_chars)

    def score(self, duels: list[Duel]) -> list[DuelOutcome]:
        """Score finished duels in one sandbox call and feed the curriculum."""
        outcomes = score_duels(self.referee, duels, update_book=self.uses_book)
        for duel, outcome in zip(duels, outcomes):
            if self.golden:
                outcome.reasons["tester"] = "golden_mode"
            judgement = outcome.judgement
            if judgement is not None and judgement.gt_pass_rates:
                self.picker.observe(duel.problem.task_id, judgement.gt_pass_rates[0])
        return outcomes

    def curriculum_state(self) -> dict[str, float]:
        """The curriculum's numbers for logging (empty without a curriculum)."""
        curriculum = self.picker.curriculum
        return curriculum.state() if curriculum is not None else {}

    def close(self) -> None:
        """Stop the sandbox if this host built the referee."""
        if self.owns_referee:
            self.referee.close()
