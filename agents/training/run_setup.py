"""What a run is made of before its first step: seeds, run dir, problems, players, referee.

Pure functions of the :class:`~agents.training.config.TrainConfig` (and of the saved config on
resume), used by :class:`~agents.training.trainer.Trainer` when it sets up a run.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.training.config import TrainConfig
from agents.training.distributed import Distributed, is_sharded, shard_sizes
from agents.training.player import Player, build_player
from codea1_env.game.host import DuelHost
from codea1_env.problems.problem import Problem

__all__ = [
    "build_players",
    "build_referee",
    "game_host",
    "heldout_problems",
    "merge_saved_config",
    "resolve_run_dir",
    "resolve_source",
    "seed_everything",
    "step_seed",
]


def step_seed(seed: int, step: int, role: str) -> int:
    """A 31-bit seed for one rollout, a pure function of (run seed, step, role).

    Rollouts therefore do not depend on how many random numbers earlier steps drew, which keeps a
    resumed run on the same trajectory as an uninterrupted one.
    """
    digest = hashlib.sha256(f"{seed}/{step}/{role}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def resolve_source(spec: str) -> Any:
    """Return the problem source for a spec: :func:`codea1_env.problems.load_source`.

    Kept as the trainer's name for it; every spec form (``bank``,
    ``procedural:SEED[:train|test[:FAMILY+...]]``, ``jsonl:PATH``, ...) is parsed there, so a
    run's ``problems``/``eval_problems`` mean the same to the trainer, the evaluator and the
    report.

    Raises:
        ValueError: a malformed spec (from the source, which names it).
    """
    from codea1_env import problems as problem_sources

    return problem_sources.load_source(spec)


def resolve_run_dir(config: TrainConfig) -> Path:
    """``output_dir`` when set, else ``{runs_root}/{exp_name}__{mode}__{seed}__{unix time}``."""
    if config.output_dir:
        return Path(config.output_dir)
    name = f"{config.exp_name}__{config.mode}__{config.seed}__{int(time.time())}"
    return Path(config.runs_root) / name


def build_referee(config: TrainConfig, mistake_book: Any = None) -> Any:
    """The run's :class:`~codea1_env.scoring.referee.Referee`: rewards, limits, stability, sandbox.

    With ``config.referee_processes`` above 1, a :class:`~codea1_env.scoring.pool.RefereePool`
    of that many referee processes instead (the same judgements; it closes its processes, the
    book stays the trainer's).

    ``config.reward_config()`` (``alpha``, ``k``, ``mode``), ``config.limits``,
    ``config.stability`` (quality filter, mistake-book bounds and refresh) and the
    ``sandbox`` backend with ``sandbox_workers``; the local sandbox with its default workers is
    started lazily, on the first judgement. The referee owns (and closes) its sandbox.
    """
    from codea1_env.scoring.referee import Referee

    if config.referee_processes > 1:
        from codea1_env.scoring.pool import RefereePool

        return RefereePool(  # local or docker: TrainConfig.validate refuses ray here
            config.referee_processes,
            backend=config.sandbox,
            sandbox_workers=config.sandbox_workers,
            reward_config=config.reward_config(),
            limits=config.limits,
            mistake_book=mistake_book,
            stability=config.stability,
        )
    sandbox = None
    if config.sandbox != "local" or config.sandbox_workers is not None:
        from codea1_env.sandbox.factory import make_sandbox

        options = {} if config.sandbox_workers is None else {"workers": config.sandbox_workers}
        if config.sandbox == "ray" and config.sandbox_workers is not None:
            options = {"workers_per_actor": config.sandbox_workers}
        sandbox = make_sandbox(config.sandbox, **options)
    return Referee(
        sandbox=sandbox,
        reward_config=config.reward_config(),
        limits=config.limits,
        mistake_book=mistake_book,
        owns_sandbox=True,
        stability=config.stability,
    )


def game_host(config: TrainConfig, source: Any, referee: Any) -> DuelHost:
    """The env's game layer for a run: the views' :class:`~codea1_env.game.host.DuelHost`.

    Problems are drawn from ``source`` through its picker (``hard_only`` filter, curriculum),
    the coder's moves are played with the run's ``anonymize_code``, and ``referee`` scores.
    """
    return DuelHost(source, referee.reward_config, None, None, None, referee, config.stability)


def merge_saved_config(
    saved: TrainConfig,
    given: TrainConfig,
    log: Callable[[str], None],
    at_step: int | None = None,
) -> TrainConfig:
    """On resume the saved config wins, except ``steps`` (so a run can be extended).

    ``output_dir``, ``distributed_strategy`` and ``rollout_dtype`` also follow the command line:
    checkpoints hold full float32 states whatever the rollouts sample from, so a run may resume
    under ``ddp``, ``fsdp`` or on one process, with or without bf16 rollout copies (a GPU without
    bf16, a resume on CPU). Other changed fields are named in ``log`` and ignored. A ``steps``
    below ``at_step`` (the checkpoint's step: those steps are done) becomes ``at_step``, said in
    ``log``, so that the saved config says where the run ends.
    """
    kept = ("steps", "output_dir", "distributed_strategy", "rollout_dtype")
    differences = {k: v for k, v in saved.diff(given).items() if k not in kept}
    if differences:
        names = ", ".join(sorted(differences))
        log(f"resume: keeping the saved config; ignoring changed fields: {names}")
    steps = given.steps
    if at_step is not None and steps < at_step:
        log(f"resume: the run is at step {at_step}, past steps={steps}; it ends there")
        steps = at_step
    return replace(
        saved,
        steps=steps,
        output_dir=given.output_dir,
        distributed_strategy=given.distributed_strategy,
        rollout_dtype=given.rollout_dtype,
    )


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's global and torch's random number generators."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def heldout_problems(config: TrainConfig) -> list[Problem]:
    """The first ``eval_size`` problems of ``eval_problems``: the fixed held-out set."""
    source = resolve_source(config.eval_problems)
    ids = list(source.ids())[: config.eval_size]
    return [source[i] for i in ids]


def build_players(
    config: TrainConfig, device: torch.device, dist: Distributed, log: Callable[[str], None]
) -> tuple[Player, Player | None]:
    """The run's players, joined to the data-parallel group and sharded under FSDP.

    The coder (named ``shared`` in ``self-play``, where it also plays the tester) and, when
    the mode has a separate tester (``code-a1``), the tester with ``tester_lr`` (else ``lr``).

    Returns:
        ``(coder, tester)``; ``tester`` is ``None`` without a separate tester.
    """
    coder = build_player(
        "shared" if config.mode == "self-play" else "coder",
        config.coder_model,
        config,
        seed=config.seed,
        lr=config.lr,
        device=device,
    )
    tester: Player | None = None
    if config.separate_tester:
        tester = build_player(
            "tester",
            config.tester_model,
            config,
            seed=config.seed,
            lr=config.tester_lr or config.lr,
            device=device,
        )
    for player in [coder] + ([tester] if tester is not None else []):
        player.dist = dist
        player.shard_parameters()  # FSDP2 under distributed_strategy="fsdp", else no-op
        if is_sharded(player.model):
            local, total = shard_sizes(player.model)
            log(f"fsdp: {player.name} holds {local}/{total} parameters on rank 0")
    return coder, tester
