"""The interface every player implements: a batched policy, one text action per observation.

Scripted players (:mod:`codea1_env.baselines.scripted`) and the LM players
(:mod:`agents.players.policy`) both follow :class:`Policy`; the CLI, the evaluator and the
examples drive any of them through it. Observations are :func:`codea1_env.game.spaces.observe`'s
dicts; ``infos`` are the env's (scripted players read the problem from them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Policy"]


@runtime_checkable
class Policy(Protocol):
    """A batched policy: one text action per observation."""

    def act(
        self,
        observations: Sequence[Mapping[str, Any]],
        infos: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """Return one action per observation (``infos[i]`` belongs to ``observations[i]``)."""
        ...
