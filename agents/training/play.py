"""The duels of one RL step: the coder's and the tester's moves, played as the env plays them.

Every code is one :class:`~codea1_env.game.duel.Duel` (the coder's move played through the
host: move checks, code extraction, ``anonymize_code``); every suite is written against one code
on a branch of that code's duel. Observations are :func:`codea1_env.game.spaces.observe`'s and
infos :func:`~codea1_env.envs.duel_env.duel_info`'s, so the policies see what the env shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from codea1_env.envs.duel_env import duel_info
from codea1_env.game.duel import MAX_ACTION_CHARS, Duel
from codea1_env.game.host import DuelHost
from codea1_env.game.spaces import observe
from codea1_env.problems.problem import Problem

__all__ = ["Generate", "play_codes", "play_suites"]

Generate = Callable[..., list[Any]]
"""``generate(role, observations, infos, seed=..., seed_offset=...) -> generations`` (each with
``text``, ``prompt_ids`` and ``completion_ids``)."""


def play_codes(
    host: DuelHost,
    generate: Generate,
    problems: Sequence[Problem],
    n_codes: int,
    *,
    seed: int,
    offset: Callable[[int], int],
) -> tuple[list[Duel], list[Any]]:
    """``n_codes`` duels per problem, each with the coder's move played (the coder view).

    Args:
        host: The run's game layer (it plays the coder's move).
        generate: The role sampler.
        problems: This rank's problems.
        n_codes: Codes per problem.
        seed: The rollout seed.
        offset: This rank's first sample index given its number of samples (data-parallel).

    Returns:
        The duels and the coder's generations, problem-major.
    """
    duels = [Duel(p) for p in problems for _ in range(n_codes)]
    gens = _moves(generate, "coder", duels, seed, offset)
    for duel, gen in zip(duels, gens, strict=True):
        host.play_code(duel, gen.text, MAX_ACTION_CHARS)
    return duels, gens


def play_suites(
    generate: Generate,
    duels: Sequence[Duel],
    n_suites: int,
    *,
    seed: int,
    offset: Callable[[int], int],
) -> tuple[list[list[Duel]], list[Any]]:
    """Per code, ``n_suites`` branches of its duel with the tester's move played.

    Each suite is written against that code (white-box: the duel's shown program).

    Args:
        generate: The role sampler.
        duels: The codes' duels, after the coder's move.
        n_suites: Suites per code.
        seed: The rollout seed.
        offset: This rank's first sample index given its number of samples (data-parallel).

    Returns:
        One row of ``n_suites`` duels per code, and the tester's generations in that order.
    """
    rows = [[duel.branch() for _ in range(n_suites)] for duel in duels]
    tester_duels = [d for row in rows for d in row]
    gens = _moves(generate, "tester", tester_duels, seed, offset)
    for duel, gen in zip(tester_duels, gens, strict=True):
        duel.play_tests(gen.text, MAX_ACTION_CHARS)
    return rows, gens


def _moves(
    generate: Generate, role: str, duels: Sequence[Duel], seed: int, offset: Callable[[int], int]
) -> list[Any]:
    """The role's generations for ``duels``, from what the env shows it (observation, info)."""
    return generate(
        role,
        [observe(d) for d in duels],
        [duel_info(d) for d in duels],
        seed=seed,
        seed_offset=offset(len(duels)),
    )
