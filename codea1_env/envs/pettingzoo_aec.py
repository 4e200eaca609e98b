"""The duel as a PettingZoo AEC environment (agents ``"coder"`` and ``"tester"``).

A thin adapter over :class:`~codea1_env.game.duel.Duel`; scoring goes through the same referee as
the Gymnasium env. The coder's reward arrives when the tester has moved, through PettingZoo's
cumulative rewards (``env.last()`` or ``env.rewards`` after the tester's step).

```python
import codea1_env

env = codea1_env.pettingzoo_env(source="bank")
env.reset(seed=0)
for agent in env.agent_iter():
    obs, reward, terminated, truncated, info = env.last()
    action = None if terminated or truncated else policies[agent](obs)
    env.step(action)
```
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from gymnasium.utils import seeding

from codea1_env.envs.duel_env import check_render_mode, duel_info, print_if_human, show_duel
from codea1_env.game.duel import MAX_ACTION_CHARS, Duel, Role
from codea1_env.game.host import DuelHost
from codea1_env.game.spaces import action_space, observation_space, observe
from codea1_env.mistake_book import MistakeBook
from codea1_env.sandbox.base import Limits, Sandbox
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.stability import StabilityOptions

try:
    from pettingzoo import AECEnv
    from pettingzoo.utils import AgentSelector
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the PettingZoo view needs pettingzoo: pip install 'codea1[pettingzoo]'"
    ) from exc

__all__ = ["CodeTestDuelAEC"]

_ROLES = {"coder": Role.CODER, "tester": Role.TESTER}


class CodeTestDuelAEC(AECEnv):  # type: ignore[misc]
    """Agents ``coder`` then ``tester``; arguments as :class:`~.duel_env.CodeTestDuelEnv`."""

    metadata = {
        "name": "codetestduel_v0",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": False,
    }

    def __init__(
        self,
        source: Any = "bank",
        *,
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
        super().__init__()
        self.render_mode = check_render_mode(self, render_mode)
        self.max_action_chars = int(max_action_chars)
        self.possible_agents = ["coder", "tester"]
        self.agents = self.possible_agents[:]
        self._obs_space = observation_space()
        self._act_space = action_space(self.max_action_chars)
        self.observation_spaces = {a: self._obs_space for a in self.possible_agents}
        self.action_spaces = {a: self._act_space for a in self.possible_agents}
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
        self._duel: Duel | None = None
        self.np_random, _ = seeding.np_random(None)
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self._init_dicts()

    def observation_space(self, agent: str) -> Any:
        """The (shared) observation space."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Any:
        """The (shared) action space."""
        return self.action_spaces[agent]

    def observe(self, agent: str) -> dict[str, Any]:
        """What ``agent`` sees now (the tester sees the coder's program once it exists).

        Raises:
            RuntimeError: before :meth:`reset` (there is no problem to show yet).

        """
        if self._duel is None:
            raise RuntimeError("CodeTestDuelAEC: call reset() before observe()")
        return observe(self._duel, _ROLES[agent])

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a duel; the coder moves first."""
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        self._duel = self.host.new_duel(self.np_random, options)
        self.agents = self.possible_agents[:]
        self._init_dicts()
        self._selector = AgentSelector(self.agents)
        self.agent_selection = self._selector.reset()
        print_if_human(self._duel, self.render_mode)

    def step(self, action: Any) -> None:
        """Play the selected agent's move (``None`` for an agent that is done).

        Raises:
            RuntimeError: before :meth:`reset`, or once every agent has left a finished duel.

        """
        if self._duel is None:
            raise RuntimeError("CodeTestDuelAEC: call reset() before step()")
        if not self.agents:
            raise RuntimeError("CodeTestDuelAEC: the duel is over; call reset()")
        agent = self.agent_selection
        if self.terminations.get(agent) or self.truncations.get(agent):
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        if agent == "coder":
            self.host.play_code(self._duel, action, self.max_action_chars)  # a fixed tester answers
        else:
            self._duel.play_tests(action, self.max_action_chars)
        if self._duel.finished:
            outcome = self.host.score([self._duel])[0]
            for name in self.agents:
                self.rewards[name] = outcome.rewards[name]
                self.terminations[name] = True
                self.infos[name] = duel_info(self._duel)
        else:
            self.rewards = {name: 0.0 for name in self.agents}
            self.infos = {name: duel_info(self._duel) for name in self.agents}
        self.agent_selection = self._selector.next()
        self._accumulate_rewards()
        print_if_human(self._duel, self.render_mode)

    def render(self) -> str | None:
        """Text picture of the duel."""
        return show_duel(self._duel, self.render_mode)

    def close(self) -> None:
        """Stop the sandbox if this env started it."""
        self.host.close()

    def _init_dicts(self) -> None:
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: duel_info(self._duel) for a in self.agents}
