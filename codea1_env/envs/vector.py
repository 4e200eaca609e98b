"""The natively batched form of ``CodeTestDuel-v0``: one sandbox call per batched step."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from codea1_env.envs.duel_env import check_render_mode, duel_info
from codea1_env.game.duel import MAX_ACTION_CHARS, Duel, Role
from codea1_env.game.host import DuelHost, check_reset_options
from codea1_env.game.spaces import action_space, observation_space, observe
from codea1_env.mistake_book import MistakeBook
from codea1_env.sandbox.base import Limits, Sandbox
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.stability import StabilityOptions

__all__ = ["CodeTestDuelVectorEnv"]


class CodeTestDuelVectorEnv(VectorEnv[dict[str, Any], tuple[str, ...], np.ndarray]):
    """``num_envs`` duels stepped together; the tester step scores all of them in one batch.

    All sub-envs move in lock-step (every episode is coder then tester), so at each step every
    sub-env has the same role. Sub-envs ``i`` and ``j`` with ``i // group_size == j //
    group_size`` play the same problem, the way GRPO samples groups: with ``group_size=8`` and 8
    distinct codes x 8 suites, one step is 9 sandbox jobs (one GT job and one job per distinct
    program) rather than 128.

    Observations are batched as Gymnasium does for a ``Dict``: ``obs["role"]`` is an ``int64``
    array and the text fields are tuples of strings. ``infos`` follow the vector convention (an
    array per key plus a ``"_key"`` mask); ``infos["rewards"]`` holds ``{"coder": array,
    "tester": array}`` at the end of the episodes. Autoreset is ``NEXT_STEP``: the step after an
    episode ends resets it and ignores its action.

    Args:
        num_envs: Number of sub-envs.
        group_size: Sub-envs per shared problem (must divide ``num_envs``).
        Other arguments: as :class:`~codea1_env.envs.duel_env.CodeTestDuelEnv`.

    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["ansi"]}

    def __init__(
        self,
        num_envs: int = 1,
        source: Any = "bank",
        *,
        group_size: int = 1,
        reward_mode: str = "code-a1",
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
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if group_size < 1 or num_envs % group_size:
            raise ValueError(f"group_size ({group_size}) must divide num_envs ({num_envs})")
        self.num_envs = num_envs
        self.group_size = group_size
        self.render_mode = check_render_mode(self, render_mode)
        self.max_action_chars = int(max_action_chars)
        self.single_observation_space = observation_space()
        self.single_action_space = action_space(self.max_action_chars)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.host = DuelHost(
            source,
            RewardConfig(alpha=alpha, k=k, mode=reward_mode),
            limits,
            mistake_book,
            sandbox,
            referee,
            stability,
        )
        self.referee = self.host.referee
        self._duels: list[Duel] | None = None

    # ------------------------------------------------------------------ VectorEnv API
    def reset(
        self,
        *,
        seed: int | list[int] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start ``num_envs`` duels.

        The sub-envs draw their problems from one generator, :attr:`np_random`: an ``int`` seed
        seeds it, and so does a list of ``num_envs`` seeds (Gymnasium's per-sub-env form), all
        of them together (``np.random.SeedSequence(seed)``), so that changing any one changes
        the draws (:attr:`np_random_seed` is then -1, as Gymnasium has it for a generator not
        seeded by one int).

        ``options`` as for the single env (one problem for all sub-envs), or
        ``{"problem_ids": [...]}`` with one id per group.

        Raises:
            ValueError: a seed list of another length than ``num_envs`` or with a non-int item;
                ``problem_ids`` of another length than the number of groups, or together with
                ``problem`` or ``problem_id``.

        """
        if isinstance(seed, (list, tuple)):
            self._seed_from_list(list(seed))
            super().reset(seed=None)
        else:
            super().reset(seed=seed)
        options = dict(check_reset_options(options, ("problem_ids",)))
        ids = self._problem_ids(options.pop("problem_ids", None))
        if ids is not None and ("problem" in options or "problem_id" in options):
            raise ValueError("reset options: give problem_ids, or problem/problem_id, not both")
        problems = []
        for group in range(self.num_envs // self.group_size):
            if ids is None:
                problems.append(self.host.picker.pick(self.np_random, options))
                continue
            try:
                problems.append(self.host.picker.pick(self.np_random, {"problem_id": ids[group]}))
            except ValueError:
                raise ValueError(
                    f"reset(options={{'problem_ids': [...]}}): problem_ids[{group}] = "
                    f"{ids[group]!r}: no such problem in source {self.host.picker.source_name!r}"
                ) from None
        self._duels = [Duel(problems[i // self.group_size]) for i in range(self.num_envs)]
        return self._observations(), self._infos()

    def _problem_ids(self, ids: Any) -> list[str] | None:
        """Check ``options["problem_ids"]``: a list or tuple of one id (a str) per group."""
        if ids is None:
            return None
        n_groups = self.num_envs // self.group_size
        if not isinstance(ids, (list, tuple)):
            raise ValueError(
                f"problem_ids: expected a list of {n_groups} problem ids (one per group), "
                f"got {type(ids).__name__}"
            )
        if len(ids) != n_groups:
            raise ValueError(
                f"problem_ids: expected {n_groups} ids (one per group), got {len(ids)}"
            )
        for group, task_id in enumerate(ids):
            if not isinstance(task_id, str):
                raise ValueError(
                    f"problem_ids[{group}]: expected a problem id (str), got "
                    f"{type(task_id).__name__}"
                )
        return list(ids)

    def _seed_from_list(self, seeds: list[Any]) -> None:
        """Seed :attr:`np_random` from a list of ``num_envs`` seeds (see :meth:`reset`)."""
        if len(seeds) != self.num_envs:
            raise ValueError(
                f"seed: expected {self.num_envs} seeds (one per sub-env), got {len(seeds)}"
            )
        if not all(isinstance(item, (int, np.integer)) and item >= 0 for item in seeds):
            raise ValueError(f"seed: every item must be a non-negative int, got {seeds!r}")
        sequence = np.random.SeedSequence([int(item) for item in seeds])
        self._np_random = np.random.Generator(np.random.PCG64(sequence))
        self._np_random_seed = -1  # Gymnasium's value for a generator not seeded by one int

    def step(
        self, actions: Sequence[Any]
    ) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Play one move in every sub-env; tester moves are scored in one sandbox call."""
        if self._duels is None:
            raise ResetNeeded("CodeTestDuelVectorEnv: call reset() before step()")
        if isinstance(actions, (str, bytes)) or not isinstance(actions, Iterable):
            raise TypeError(
                f"actions: expected a sequence of {self.num_envs} texts (one per sub-env), got "
                f"{type(actions).__name__}"
            )
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"actions: expected {self.num_envs} actions, got {len(actions)}")
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=bool)
        if all(d.finished for d in self._duels):  # autoreset (NEXT_STEP)
            obs, info = self.reset()
            return obs, rewards, terminated, np.zeros(self.num_envs, dtype=bool), info
        to_score: list[tuple[int, str]] = []  # (sub-env, the role whose move ended it)
        for i, (duel, action) in enumerate(zip(self._duels, actions)):
            if duel.role is Role.CODER:
                mover = "coder"
                self.host.play_code(duel, action, self.max_action_chars)  # a fixed tester answers
            else:
                mover = "tester"
                duel.play_tests(action, self.max_action_chars)
            if duel.finished:
                to_score.append((i, mover))
        if to_score:
            outcomes = self.host.score([self._duels[i] for i, _ in to_score])
            for (i, mover), outcome in zip(to_score, outcomes):
                rewards[i] = outcome.rewards[mover]
                terminated[i] = True
        truncated = np.zeros(self.num_envs, dtype=bool)
        return self._observations(), rewards, terminated, truncated, self._infos()

    def render(self) -> tuple[str, ...] | None:
        """Text pictures of every sub-env's duel."""
        from codea1_env.envs.duel_env import render_duel

        if self._duels is None:
            return None
        return tuple(render_duel(d) for d in self._duels)

    def close_extras(self, **kwargs: Any) -> None:
        """Stop the sandbox if this env started it."""
        self.host.close()

    # ------------------------------------------------------------------ helpers
    @property
    def duels(self) -> list[Duel]:
        """The current duels (empty before reset)."""
        return list(self._duels or [])

    def _observations(self) -> dict[str, Any]:
        assert self._duels is not None
        single = [observe(d) for d in self._duels]
        return {
            "role": np.array([o["role"] for o in single], dtype=np.int64),
            "prompt": tuple(o["prompt"] for o in single),
            "entry_point": tuple(o["entry_point"] for o in single),
            "code": tuple(o["code"] for o in single),
        }

    def _infos(self) -> dict[str, Any]:
        """Vector-style infos: per key an object array plus a ``_key`` presence mask."""
        assert self._duels is not None
        per_env = [duel_info(d) for d in self._duels]
        curriculum = self.host.curriculum_state()
        for duel, info in zip(self._duels, per_env):
            if duel.finished:
                info.update(curriculum)
        keys: list[str] = []
        for info in per_env:
            keys.extend(k for k in info if k not in keys)
        out: dict[str, Any] = {}
        for key in keys:
            present = np.array([key in info for info in per_env], dtype=bool)
            if key == "rewards":
                out[key] = {
                    role: np.array(
                        [info[key][role] if key in info else 0.0 for info in per_env],
                        dtype=np.float64,
                    )
                    for role in ("coder", "tester")
                }
            else:
                values = np.empty(self.num_envs, dtype=object)
                for i, info in enumerate(per_env):
                    values[i] = info.get(key)
                out[key] = values
            out["_" + key] = present
        return out
