"""The supervised warm start: teach a fresh model the answer format before RL.

A model built from config knows nothing, so RL alone would never see a reward. The tiny preset
first fine-tunes the coder on the GT solutions of the training problems and the tester on
GT-valid ``assert`` lines (the problems' own GT tests, written against the GT code), with the
same prompts the policies use at rollout time. Examples are token ids; the loss is the mean
negative log-likelihood of the target tokens (prompt tokens are not trained).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("agents.training.sft needs PyTorch: pip install 'codea1[train]'") from exc

from agents.training.player import Player
from agents.training.rollout import Sample, micro_batches, pack, sequence_logprobs

__all__ = ["SupervisedExample", "supervised_warm_start"]


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
    on_step: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Fine-tune ``player.model`` on freshly drawn examples for ``steps`` steps.

    Args:
        player: The player to train (its RL optimizer is untouched; a separate AdamW is used).
        make_example: Draws one example from a seeded generator (problems are generated on
            the fly, so every step sees new ones).
        steps: Optimizer steps.
        batch_size: Examples per step.
        lr: Peak learning rate (5% linear warm-up, then constant).
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
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup))
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
