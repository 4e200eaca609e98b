"""One role against a fixed opponent, so any single-agent algorithm can train one side.

* ``CodeTestDuel-Coder-v0`` (:class:`CoderEnv`): the coder against the GT tests and/or the
  mistake book.
* ``CodeTestDuel-Tester-v0`` (:class:`TesterEnv`): the tester against a pool of candidate
  programs: the GT solution and AST mutants of it.

Both are one-step episodes scored by the same referee as ``CodeTestDuel-v0``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium.error import ResetNeeded

from codea1_env.envs.duel_env import check_render_mode, duel_info, print_if_human, show_duel
from codea1_env.game.duel import MAX_ACTION_CHARS, Duel, Role, gt_suite
from codea1_env.game.host import DuelHost
from codea1_env.game.spaces import action_space, observation_space, observe
from codea1_env.mistake_book import MistakeBook
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import Limits, Sandbox
from codea1_env.scoring.mutation import MutantCache
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.stability import StabilityOptions

__all__ = ["CoderEnv", "TesterEnv"]

OPPONENTS = ("gt", "mistake_book", "gt+mistake_book")


class _OneStepEnv(gym.Env[dict[str, Any], str]):
    """Shared plumbing of the single-role envs."""

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}

    def __init__(
        self,
        source: Any,
        reward_config: RewardConfig,
        limits: Limits | Mapping[str, Any] | None,
        mistake_book: MistakeBook | str | os.PathLike[str] | bool | None,
        sandbox: Sandbox | str | None,
        referee: Referee | None,
        stability: StabilityOptions | Mapping[str, Any] | None,
        max_action_chars: int,
        render_mode: str | None,
    ) -> None:
        self.render_mode = check_render_mode(self, render_mode)
        self.max_action_chars = int(max_action_chars)
        self.observation_space = observation_space()
        self.action_space = action_space(self.max_action_chars)
        self.host = DuelHost(
            source, reward_config, limits, mistake_book, sandbox, referee, stability
        )
        self.referee = self.host.referee
        self._duel: Duel | None = None

    def _require_live(self) -> Duel:
        if self._duel is None:
            raise ResetNeeded(f"{type(self).__name__}: call reset() before step()")
        if self._duel.finished:
            raise ResetNeeded(f"{type(self).__name__}: the episode is over; call reset()")
        return self._duel

    def render(self) -> str | None:
        """Return (``"ansi"``) or print (``"human"``) the duel as text.

        In ``"human"`` mode ``reset`` and ``step`` print it too, as Gymnasium's human mode has
        it (no ``render()`` call needed).
        """
        return show_duel(self._duel, self.render_mode)

    def close(self) -> None:
        """Stop the sandbox if this env started it."""
        self.host.close()


class CoderEnv(_OneStepEnv):
    """The coder against a fixed tester.

    Observation and action spaces as ``CodeTestDuel-v0`` (``role`` is always 0). One step: the
    coder's answer is scored and the episode ends.

    Args:
        source: Problem source (as ``CodeTestDuel-v0``).
        opponent: ``"gt"`` (reward = pass rate on the GT tests, the "Golden Tests" reward),
            ``"mistake_book"`` (pass rate on the replayed mistake-book tests; 0 while the book is
            empty), or ``"gt+mistake_book"`` (Code-A1's coder reward with the GT tests as the
            test suite).
        Other arguments: as :class:`~codea1_env.envs.duel_env.CodeTestDuelEnv`.

    """

    def __init__(
        self,
        source: Any = "bank",
        *,
        opponent: str = "gt",
        k: int = 8,
        limits: Limits | Mapping[str, Any] | None = None,
        mistake_book: MistakeBook | str | os.PathLike[str] | bool | None = None,
        sandbox: Sandbox | str | None = None,
        referee: Referee | None = None,
        stability: StabilityOptions | Mapping[str, Any] | None = None,
        max_action_chars: int = MAX_ACTION_CHARS,
        render_mode: str | None = None,
    ) -> None:
        if opponent not in OPPONENTS:
            raise ValueError(f"opponent must be one of {OPPONENTS}, got {opponent!r}")
        self.opponent = opponent
        mode = "golden" if opponent == "gt" else "code-a1"
        super().__init__(
            source,
            RewardConfig(k=k, mode=mode),
            limits,
            mistake_book,
            sandbox,
            referee,
            stability,
            max_action_chars,
            render_mode,
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Draw a problem; the coder moves."""
        super().reset(seed=seed)
        self._duel = self.host.new_duel(self.np_random, options)
        print_if_human(self._duel, self.render_mode)
        return observe(self._duel), duel_info(self._duel)

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        """Score the coder's answer against the fixed tests; the episode ends."""
        duel = self._require_live()
        self.host.play_code(duel, action, self.max_action_chars)  # "gt": the host's fixed tester
        if not duel.finished:  # "gt+mistake_book": the GT tests as the opponent's suite
            duel.play_tests(self._fixed_tests(duel.problem), self.max_action_chars)
        outcome = self.host.score([duel])[0]  # "gt": the tester's reason is golden_mode
        print_if_human(self._duel, self.render_mode)
        return observe(duel, Role.CODER), outcome.rewards["coder"], True, False, duel_info(duel)

    def _fixed_tests(self, problem: Problem) -> str:
        if self.opponent == "gt+mistake_book":
            return gt_suite(problem)
        return ""


class TesterEnv(_OneStepEnv):
    """The tester against a pool of candidate programs: the GT solution and its mutants.

    Observation and action spaces as ``CodeTestDuel-v0`` (``role`` is always 1). ``reset``
    draws a problem and a candidate (the GT with probability ``p_gt``, else a uniformly drawn AST
    mutant of it; the GT when it has no mutant); one step scores the tester's answer and ends the
    episode. ``info["candidate"]`` says which candidate was drawn.

    Args:
        source: Problem source.
        p_gt: Probability that the candidate is the GT itself (a correct program: the tester's
            best answer is then valid tests, since nothing can fail).
        mutation_operators: Operators to draw mutants from (default: all of
            :data:`codea1_env.scoring.mutation.OPERATORS`).
        Other arguments: as :class:`~codea1_env.envs.duel_env.CodeTestDuelEnv`.

    """

    def __init__(
        self,
        source: Any = "bank",
        *,
        p_gt: float = 0.25,
        mutation_operators: tuple[str, ...] | None = None,
        alpha: float = 0.5,
        k: int = 8,
        limits: Limits | Mapping[str, Any] | None = None,
        mistake_book: MistakeBook | str | os.PathLike[str] | bool | None = None,
        sandbox: Sandbox | str | None = None,
        referee: Referee | None = None,
        stability: StabilityOptions | Mapping[str, Any] | None = None,
        max_action_chars: int = MAX_ACTION_CHARS,
        render_mode: str | None = None,
    ) -> None:
        if not 0.0 <= p_gt <= 1.0:
            raise ValueError(f"p_gt must be in [0, 1], got {p_gt}")
        self.p_gt = p_gt
        self.mutation_operators = mutation_operators
        self._mutants = MutantCache()
        self._candidate = "gt"
        super().__init__(
            source,
            RewardConfig(alpha=alpha, k=k),
            limits,
            mistake_book,
            sandbox,
            referee,
            stability,
            max_action_chars,
            render_mode,
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Draw a problem and a candidate program; the tester moves."""
        super().reset(seed=seed)
        self._duel = self.host.new_duel(self.np_random, options)
        program, self._candidate = self._draw_candidate(self._duel.problem)
        self.host.play_code(self._duel, program, self.max_action_chars)
        print_if_human(self._duel, self.render_mode)
        return observe(self._duel), self._info()

    def step(self, action: Any) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        """Score the tester's answer against the drawn candidate; the episode ends."""
        duel = self._require_live()
        duel.play_tests(action, self.max_action_chars)
        outcome = self.host.score([duel])[0]
        print_if_human(self._duel, self.render_mode)
        return observe(duel, Role.TESTER), outcome.rewards["tester"], True, False, self._info()

    def _draw_candidate(self, problem: Problem) -> tuple[str, str]:
        gt = problem.gt_program
        if self.np_random.random() < self.p_gt:
            return gt, "gt"
        mutants = self._mutants.get(gt, operators=self.mutation_operators)
        if not mutants:
            return gt, "gt"
        mutant = mutants[int(self.np_random.integers(len(mutants)))]
        return mutant.source, f"mutant: {mutant.operator} line {mutant.line}: {mutant.description}"

    def _info(self) -> dict[str, Any]:
        info = duel_info(self._duel)
        info["candidate"] = self._candidate
        return info
