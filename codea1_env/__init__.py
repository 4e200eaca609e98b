"""codea1_env: the Code-A1 duel between a Code LLM and a Test LLM as Gymnasium environments.

Importing this package registers:

* ``CodeTestDuel-v0``: the two-player env (:class:`~codea1_env.envs.duel_env.CodeTestDuelEnv`), with
  a natively batched vector form (``gym.make_vec(..., vectorization_mode="vector_entry_point")``);
* ``CodeTestDuel-Coder-v0`` and ``CodeTestDuel-Tester-v0``: one role against a fixed opponent.

The PettingZoo AEC view is :func:`pettingzoo_env`. Nothing here imports torch or transformers.
"""

from __future__ import annotations

from typing import Any

from gymnasium.envs.registration import register, registry

from codea1_env.envs.duel_env import CodeTestDuelEnv
from codea1_env.game.duel import Duel, DuelOutcome, Role, score_duels
from codea1_env.mistake_book import (
    BookEntry,
    InMemoryMistakeBook,
    MistakeBook,
    SqliteMistakeBook,
    open_mistake_book,
)
from codea1_env.problems import Problem, ProblemSource, load_source
from codea1_env.sandbox import Job, JobResult, Limits, Sandbox
from codea1_env.scoring.referee import Judgement, Referee
from codea1_env.scoring.rewards import RewardConfig

__version__ = "0.1.0"

__all__ = [
    "BookEntry",
    "CodeTestDuelEnv",
    "Duel",
    "DuelOutcome",
    "InMemoryMistakeBook",
    "Job",
    "JobResult",
    "Judgement",
    "Limits",
    "MistakeBook",
    "Problem",
    "ProblemSource",
    "Referee",
    "RewardConfig",
    "Role",
    "Sandbox",
    "SqliteMistakeBook",
    "load_source",
    "open_mistake_book",
    "pettingzoo_env",
    "score_duels",
]


def pettingzoo_env(**kwargs: Any) -> Any:
    """The duel as a PettingZoo AEC env (needs the ``pettingzoo`` extra).

    See :class:`codea1_env.envs.pettingzoo_aec.CodeTestDuelAEC` for its arguments.
    """
    from codea1_env.envs.pettingzoo_aec import CodeTestDuelAEC

    return CodeTestDuelAEC(**kwargs)


def _register() -> None:
    specs = {
        "CodeTestDuel-v0": dict(
            entry_point="codea1_env.envs.duel_env:CodeTestDuelEnv",
            vector_entry_point="codea1_env.envs.vector:CodeTestDuelVectorEnv",
        ),
        "CodeTestDuel-Coder-v0": dict(entry_point="codea1_env.envs.single_role:CoderEnv"),
        "CodeTestDuel-Tester-v0": dict(entry_point="codea1_env.envs.single_role:TesterEnv"),
    }
    for env_id, kwargs in specs.items():
        if env_id not in registry:
            register(id=env_id, **kwargs)  # type: ignore[arg-type]


_register()
