"""A token-level view of a single-role env: ``Discrete`` actions, ``Box`` observations.

Classic RL libraries (Stable-Baselines3, CleanRL) want fixed-size numeric spaces. This wrapper
turns a text env (by default ``CodeTestDuel-Tester-v0``) into one: each step appends one token
from a small vocabulary; the episode ends when the policy picks the end token or reaches
``max_tokens``, and the assembled text is then played in the inner env, whose reward is the
(sparse) reward of the last step.

Observation: a ``Box(0, 1, (context_chars + max_tokens,), float32)``: the first
``context_chars`` UTF-8 bytes of the inner observation (prompt, then code), each ``byte / 255``,
followed by the ids of the tokens chosen so far, each
``(id + 1) / len(vocab)`` (0 for positions not yet written).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from codea1_env.envs.duel_env import check_render_mode

__all__ = ["DEFAULT_TESTER_VOCAB", "END", "TokenEnv"]

END = "<end>"
"""The token that ends an episode."""

DEFAULT_TESTER_VOCAB: tuple[str, ...] = (
    END,
    "assert {entry_point}(",
    ") == ",
    "\n",
    ", ",
    "-",
    *[str(d) for d in range(10)],
    "[",
    "]",
    "True",
    "False",
    "''",
    "None",
)
"""A vocabulary that can spell ``assert f(-12, [3]) == 0`` style tests; ``{entry_point}`` is
replaced by the problem's entry point when the text is assembled."""


class TokenEnv(gym.Env[np.ndarray, np.int64]):
    """Token-by-token control of a text env's single move.

    Args:
        env: The inner one-step text env (``CodeTestDuel-Tester-v0`` or ``-Coder-v0``), or its id.
        vocab: Token strings; must contain :data:`END`. ``{entry_point}`` is substituted.
        max_tokens: Most tokens per episode (the text is played when reached).
        context_chars: Characters of the inner observation shown to the policy.
        env_kwargs: Passed to ``gym.make`` when ``env`` is an id.

    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        env: gym.Env[Any, Any] | str = "CodeTestDuel-Tester-v0",
        *,
        vocab: Sequence[str] = DEFAULT_TESTER_VOCAB,
        max_tokens: int = 32,
        context_chars: int = 256,
        render_mode: str | None = None,
        **env_kwargs: Any,
    ) -> None:
        check_render_mode(self, render_mode)  # before an inner env (and its sandbox) exists
        if END not in vocab:
            raise ValueError(f"vocab must contain the end token {END!r}")
        if max_tokens < 1 or context_chars < 0:
            raise ValueError("max_tokens must be >= 1 and context_chars >= 0")
        if isinstance(env, str):
            import codea1_env  # noqa: F401  (registers the ids)

            env = gym.make(env, **env_kwargs).unwrapped
        self.inner = env
        self.vocab = tuple(vocab)
        self.max_tokens = int(max_tokens)
        self.context_chars = int(context_chars)
        self.render_mode = render_mode
        self.action_space = spaces.Discrete(len(self.vocab))
        self.observation_space = spaces.Box(
            0.0, 1.0, shape=(self.context_chars + self.max_tokens,), dtype=np.float32
        )
        self._context = np.zeros(self.context_chars, dtype=np.float32)
        self._tokens: list[int] = []
        self._entry_point = ""
        self._done = True

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset the inner env and start an empty text."""
        super().reset(seed=seed)
        inner_seed = int(self.np_random.integers(2**31)) if seed is not None else None
        obs, info = self.inner.reset(seed=inner_seed, options=options)
        self._entry_point = str(obs.get("entry_point", ""))
        text = (str(obs.get("prompt", "")) + "\n" + str(obs.get("code", "")))[: self.context_chars]
        raw = np.frombuffer(text.encode("utf-8", "replace")[: self.context_chars], dtype=np.uint8)
        self._context = np.zeros(self.context_chars, dtype=np.float32)
        self._context[: raw.size] = raw.astype(np.float32) / 255.0
        self._tokens = []
        self._done = False
        return self._obs(), {"task_id": info.get("task_id", "")}

    def step(self, action: Any) -> tuple[np.ndarray, SupportsFloat, bool, bool, dict[str, Any]]:
        """Append one token; play the text in the inner env at the end token or the limit."""
        if self._done:
            raise gym.error.ResetNeeded("TokenEnv: call reset() before step()")
        token = int(action)
        if not 0 <= token < len(self.vocab):
            raise ValueError(f"action {action!r} outside Discrete({len(self.vocab)})")
        if self.vocab[token] != END:
            self._tokens.append(token)
        if self.vocab[token] != END and len(self._tokens) < self.max_tokens:
            return self._obs(), 0.0, False, False, {}
        text = self.text()
        _, reward, terminated, truncated, info = self.inner.step(text)
        self._done = True
        out = {"text": text, "inner_reward": float(reward)}
        for key in ("rewards", "reasons", "verdicts"):
            if key in info:
                out[key] = info[key]
        return self._obs(), float(reward), True, False, out

    def text(self) -> str:
        """The text assembled so far."""
        return "".join(self.vocab[t] for t in self._tokens).replace(
            "{entry_point}", self._entry_point
        )

    def render(self) -> str:
        """The assembled text."""
        return self.text()

    def close(self) -> None:
        """Close the inner env."""
        self.inner.close()

    def _obs(self) -> np.ndarray:
        ids = np.zeros(self.max_tokens, dtype=np.float32)
        if self._tokens:
            ids[: len(self._tokens)] = (np.array(self._tokens, dtype=np.float32) + 1.0) / len(
                self.vocab
            )
        return np.concatenate([self._context, ids]).astype(np.float32)
