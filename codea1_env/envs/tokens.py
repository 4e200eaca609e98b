"""A token-level view of a single-role env: ``Discrete`` actions, ``Box`` observations.

Classic RL libraries (Stable-Baselines3, CleanRL) want fixed-size numeric spaces. This wrapper
turns a single-role text env (``CodeTestDuel-Tester-v0``, the default, or
``CodeTestDuel-Coder-v0``) into one: each step appends one token from a small vocabulary; the
episode ends when the policy picks the end token or reaches ``max_tokens``, and the assembled text
is then played in the inner env, whose reward is the (sparse) reward of the last step and whose
``terminated`` / ``truncated`` flags are the last step's. The two-player ``CodeTestDuel-v0`` is
refused (one text is one move, and a duel needs two) unless it is in golden mode, where the
coder's move ends the episode.

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
from gymnasium.envs.registration import load_env_creator

from codea1_env.envs.duel_env import CodeTestDuelEnv, check_render_mode
from codea1_env.envs.single_role import CoderEnv, TesterEnv

__all__ = ["DEFAULT_TESTER_VOCAB", "END", "SINGLE_ROLE_IDS", "TokenEnv"]

SINGLE_ROLE_IDS: tuple[str, ...] = ("CodeTestDuel-Coder-v0", "CodeTestDuel-Tester-v0")
"""The registered ids :class:`TokenEnv` accepts: their envs are ``CoderEnv`` and ``TesterEnv``."""

_SINGLE_ROLE_CLASSES: tuple[type[gym.Env[Any, Any]], ...] = (CoderEnv, TesterEnv)

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

    The last step's ``info`` has ``text`` (the assembled text), ``inner_reward``, the inner
    env's ``rewards`` / ``reasons`` / ``verdicts`` when it reports them, and ``inner_info`` (the
    inner env's whole ``info``).

    Args:
        env: The inner one-step text env: a single-role env (one of :data:`SINGLE_ROLE_IDS`, a
            :class:`~codea1_env.envs.single_role.CoderEnv` or
            :class:`~codea1_env.envs.single_role.TesterEnv`, possibly wrapped), or its id.
        vocab: Token strings; must contain :data:`END`. ``{entry_point}`` is substituted.
        max_tokens: Most tokens per episode (the text is played when reached).
        context_chars: Characters of the inner observation shown to the policy.
        render_mode: ``None`` or ``"ansi"``.
        env_kwargs: Passed to ``gym.make`` when ``env`` is an id.

    Raises:
        ValueError: If ``env`` is not a single-role env (e.g. the two-player
            ``CodeTestDuel-v0``), or for a bad ``vocab``, ``max_tokens`` or ``context_chars``.

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

            name = env
            try:
                env = gym.make(name, **env_kwargs).unwrapped
            except TypeError:  # a keyword the env does not take: say so if it is the wrong env
                _refuse_unless_single_role(_registered_class(name), name)
                raise
            if not _one_move(env):
                env.close()  # built here, so closed here; a caller's instance is the caller's
        else:
            name = _env_name(env)
        if not _one_move(env):
            _refuse_unless_single_role(type(env.unwrapped), name)
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
        """Append one token; play the text in the inner env at the end token or the limit.

        Raises:
            gymnasium.error.ResetNeeded: Before ``reset()`` or after the episode ended.
            ValueError: For an action outside the action space.
            RuntimeError: If the inner env's episode did not end after the text was played.

        """
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
        if not (terminated or truncated):
            raise RuntimeError(
                f"TokenEnv: the inner env {_env_name(self.inner)!r} did not end its episode "
                "after its one move (terminated and truncated both False); call reset()"
            )
        out: dict[str, Any] = {"text": text, "inner_reward": float(reward)}
        for key in ("rewards", "reasons", "verdicts"):
            if key in info:
                out[key] = info[key]
        out["inner_info"] = info
        return self._obs(), float(reward), bool(terminated), bool(truncated), out

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


def _env_name(env: gym.Env[Any, Any]) -> str:
    """The env's registered id when it has one, else its class name."""
    spec = env.unwrapped.spec  # a wrapper's ``spec`` deep-copies its kwargs (a sandbox, say)
    return spec.id if spec is not None else type(env.unwrapped).__name__


def _one_move(env: gym.Env[Any, Any]) -> bool:
    """A single-role env, or the duel env in golden mode (its episode is the coder's one move)."""
    inner = env.unwrapped
    if isinstance(inner, _SINGLE_ROLE_CLASSES):
        return True
    host = getattr(inner, "host", None)
    return isinstance(inner, CodeTestDuelEnv) and bool(getattr(host, "golden", False))


def _registered_class(env_id: str) -> type | None:
    """The class an id's entry point names, or ``None`` (unknown id, or not a class)."""
    try:
        creator: Any = gym.spec(env_id).entry_point
        if isinstance(creator, str):
            creator = load_env_creator(creator)
    except (gym.error.Error, ImportError, AttributeError, ValueError):
        return None  # gym.make says what is wrong with the id
    return creator if isinstance(creator, type) else None


def _refuse_unless_single_role(cls: type | None, name: str) -> None:
    """Raise ``ValueError`` unless ``cls`` is a single-role env class (``None``: not known yet)."""
    if cls is None or issubclass(cls, _SINGLE_ROLE_CLASSES):
        return
    raise ValueError(
        "TokenEnv plays one text as one move, so it needs a single-role env: "
        f"one of {', '.join(repr(i) for i in SINGLE_ROLE_IDS)} "
        f"(a CoderEnv or TesterEnv instance, possibly wrapped; or CodeTestDuel-v0 with "
        f"reward_mode='golden', where the coder's move ends the episode); got {name!r}"
    )
