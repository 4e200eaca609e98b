"""The supervised warm start: teach a fresh model the answer format before RL.

A model built from config knows nothing, so RL alone would never see a reward. The tiny preset
first fine-tunes the coder on the GT solutions of the training problems and the tester on
GT-valid ``assert`` lines (the problems' own GT tests, written against the GT code), with the
same prompts the policies use at rollout time. Examples are token ids; the loss is the mean
negative log-likelihood of the target tokens (prompt tokens are not trained).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("agents.training.sft needs PyTorch: pip install 'codea1[train]'") from exc

from agents.training.player import Player, lr_lambda
from agents.training.rollout import Sample, micro_batches, pack, sequence_logprobs

if TYPE_CHECKING:
    from agents.training.config import TrainConfig
    from agents.training.roles import RolePolicies

__all__ = ["SupervisedExample", "supervised_warm_start", "warm_start_players"]


@dataclass(frozen=True)
class SupervisedExample:
    """One prompt and the answer the model should write.

    Attributes:
        prompt_ids: The rendered prompt's token ids.
        target_ids: The answer's token ids (ending with the stop sequence the policy stops on).

    """

    prompt_ids: tuple[int, ...]
    target_ids: tuple[int, ...]


def supervised_warm_start(
    player: Player,
    make_example: Callable[[np.random.Generator], SupervisedExample],
    *,
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    schedule: str = "constant",
    on_step: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Fine-tune ``player.model`` on freshly drawn examples for ``steps`` steps.

    Args:
        player: The player to train (its RL optimizer is untouched; a separate AdamW is used).
        make_example: Draws one example from a seeded generator (problems are generated on
            the fly, so every step sees new ones).
        steps: Optimizer steps.
        batch_size: Examples per step.
        lr: Peak learning rate (reached after a linear warm-up over 5% of the steps).
        schedule: After the warm-up: ``"constant"``, or ``"cosine"`` / ``"linear"`` decay to
            zero at the last step (:func:`agents.training.player.lr_lambda`).
        seed: Seed of the example generator.
        on_step: Called with ``(step, loss)`` after each step (progress display).

    Returns:
        The loss of every step.

    """
    if steps <= 0:
        return []
    cfg = player.config
    rng = np.random.default_rng(seed)
    params = [p for p in player.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    warmup = max(1, steps // 20)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_lambda(s, warmup=warmup, total=steps, schedule=schedule)
    )
    losses: list[float] = []
    player.model.train()
    for step in range(steps):
        examples = [make_example(rng) for _ in range(batch_size)]
        samples = [Sample(list(e.prompt_ids), list(e.target_ids), advantage=1.0) for e in examples]
        total = sum(s.n_tokens for s in samples)
        optimizer.zero_grad(set_to_none=True)
        step_loss = 0.0
        for chunk in micro_batches(samples, cfg.micro_batch_size):
            batch = pack(chunk, player.pad_id).to(player.device)
            logp = sequence_logprobs(player.model, batch, bf16=cfg.bf16)
            tokens = batch.loss_mask.sum().clamp(min=1.0)
            loss = -(logp * batch.loss_mask).sum() / tokens
            weight = float(tokens.item()) / max(1, total)
            (loss * weight).backward()
            step_loss += float(loss.detach().item()) * weight
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(step_loss)
        if on_step is not None:
            on_step(step, step_loss)
    player.model.eval()
    optimizer.zero_grad(set_to_none=True)
    return losses


def warm_start_players(
    cfg: TrainConfig,
    coder: Player,
    tester: Player | None,
    roles: RolePolicies,
    problems: Any,
    log: Callable[[str], None],
) -> dict[str, float]:
    """The run's supervised warm start: the coder on GT solutions, the tester on GT asserts.

    With one model for both roles (``self-play``) the two roles are learned in a single run that
    interleaves them (each batch is a coder batch with probability
    ``sft_steps / (sft_steps + sft_tester_steps)``, else a tester batch; one role per batch keeps
    padding short): run one after the other, the tester phase erased the coding (pass@1 0 on the
    toy preset).

    Args:
        cfg: The run's config (``sft_steps``, ``tester_sft_steps``, ``sft_batch_size``,
            ``sft_lr``, ``sft_lr_schedule``, ``seed``).
        coder: The coder (or, in ``self-play``, the shared) player.
        tester: The separate tester player, or ``None``.
        roles: The run's role policies (they render the examples).
        problems: The training source (``sample(rng)`` draws a problem).
        log: Where progress lines go.

    Returns:
        The first and last losses and the seconds per run (``sft/coder_loss_first``,
        ``sft/tester_loss_last``, or ``sft/coder+tester_...`` in self-play).
    """
    out: dict[str, float] = {}
    plans: list[tuple[Player, str, int]] = []
    tester_steps = cfg.tester_sft_steps if cfg.has_tester else 0
    if tester is None and cfg.sft_steps > 0 and tester_steps > 0:
        plans.append((coder, "coder+tester", cfg.sft_steps + tester_steps))
    else:
        if cfg.sft_steps > 0:
            plans.append((coder, "coder", cfg.sft_steps))
        if tester_steps > 0:
            plans.append((tester if tester is not None else coder, "tester", tester_steps))
    coder_share = cfg.sft_steps / max(1, cfg.sft_steps + tester_steps)
    for index, (player, role, steps) in enumerate(plans):
        started = time.perf_counter()
        drawn = {"examples": 0, "role": role}

        def example(
            rng: np.random.Generator, role: str = role, drawn: dict[str, Any] = drawn
        ) -> SupervisedExample:
            if role == "coder+tester":  # a new role at the first example of each batch
                if drawn["examples"] % cfg.sft_batch_size == 0:
                    drawn["role"] = "coder" if rng.random() < coder_share else "tester"
                drawn["examples"] += 1
                role = str(drawn["role"])
            return roles.supervised_example(role, problems.sample(rng), rng)

        def progress(step: int, loss: float, role: str = role, steps: int = steps) -> None:
            if step == 0 or (step + 1) % max(1, steps // 5) == 0:
                log(f"warm start [{role}] step {step + 1}/{steps}: loss {loss:.4f}")

        losses = supervised_warm_start(
            player,
            example,
            steps=steps,
            batch_size=cfg.sft_batch_size,
            lr=cfg.sft_lr,
            schedule=cfg.sft_lr_schedule,
            seed=cfg.seed * 1000 + index,
            on_step=progress,
        )
        out[f"sft/{role}_loss_first"] = losses[0]
        out[f"sft/{role}_loss_last"] = losses[-1]
        out[f"sft/{role}_seconds"] = time.perf_counter() - started
    return out
