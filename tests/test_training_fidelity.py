"""The trainer's math against verl's, as the authors' released code runs it.

The reference functions below are verl's (``core_algos.compute_policy_loss``,
``core_algos.compute_grpo_outcome_advantage``, ``torch_functional.get_cosine_schedule_with_warmup``
and ``get_constant_schedule_with_warmup``, in the verl tree of ZJU-REAL/Code-A1), reduced to the
paths the authors' configuration takes (token-mean, ``min_lr_ratio = 0``, ``num_cycles = 0.5``).
Also: no optimizer step on a non-finite gradient norm (verl's ``dp_actor._optimizer_step``), and
the tester's code chosen by the population standard deviation of its suite rewards
(``trainer_a1.py``).
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from dataclasses import dataclass, field

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import torch

from agents.commands.train_cli import add_arguments, build_config
from agents.training import groups
from agents.training.config import TrainConfig, from_preset
from agents.training.groups import coder_samples, select_tester_codes, suite_spread
from agents.training.grpo import group_advantages, grpo_loss, ppo_clip_loss
from agents.training.player import Player, _make_scheduler, build_player, lr_lambda
from agents.training.rollout import Sample


@dataclass
class Gen:
    """A generation as the group functions read it."""

    text: str
    prompt_ids: list[int] = field(default_factory=lambda: [1])
    completion_ids: list[int] = field(default_factory=lambda: [2])


# ---------------------------------------------------------------- verl's functions


def verl_policy_loss(
    old: torch.Tensor,
    new: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    low: float = 0.2,
    high: float = 0.28,
    clip_ratio_c: float = 10.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's ``compute_policy_loss`` (token-mean): the loss and ``pg_clipfrac_lower``."""
    ratio = torch.exp(torch.clamp(new - old, min=-20.0, max=20.0))
    pg_losses1 = -adv * ratio
    pg_losses2 = -adv * torch.clamp(ratio, 1 - low, 1 + high)
    clip_pg_losses1 = torch.maximum(pg_losses1, pg_losses2)
    pg_losses3 = -adv * clip_ratio_c
    clip_pg_losses2 = torch.min(pg_losses3, clip_pg_losses1)
    lower = torch.gt(clip_pg_losses1, pg_losses3) * (adv < 0).float()
    pg_losses = torch.where(adv < 0, clip_pg_losses2, clip_pg_losses1)
    mean = (pg_losses * mask).sum() / (mask.sum() + 1e-8)
    return mean, (lower * mask).sum() / (mask.sum() + 1e-8)


def verl_grpo_advantages(scores: list[float], index: list[int], eps: float = 1e-6) -> list[float]:
    """verl's ``compute_grpo_outcome_advantage`` on outcome scores (one per sequence)."""
    by_group: dict[int, list[float]] = defaultdict(list)
    for score, group in zip(scores, index, strict=True):
        by_group[group].append(score)
    mean: dict[int, torch.Tensor] = {}
    std: dict[int, torch.Tensor] = {}
    for group, values in by_group.items():
        if len(values) == 1:
            mean[group], std[group] = torch.tensor(0.0), torch.tensor(1.0)
        else:
            mean[group] = torch.mean(torch.tensor(values))
            std[group] = torch.std(torch.tensor([values]))
    return [
        float((torch.tensor(s) - mean[g]) / (std[g] + eps))
        for s, g in zip(scores, index, strict=True)
    ]


def verl_cosine(step: int, warmup: int, total: int) -> float:
    """verl's ``get_cosine_schedule_with_warmup`` multiplier (``min_lr_ratio = 0``)."""
    min_lr_ratio, num_cycles = 0.0, 0.5
    coef, intercept = (1 - min_lr_ratio) * 0.5, (1 + min_lr_ratio) * 0.5
    if step < warmup:
        return min_lr_ratio + (1.0 - min_lr_ratio) * (float(step) / float(max(1, warmup)))
    progress = float(step - warmup) / float(max(1, total - warmup))
    x = math.cos(math.pi * float(num_cycles) * 2.0 * progress)
    return max(min_lr_ratio, x * coef + intercept)


def verl_constant(step: int, warmup: int) -> float:
    """verl's ``get_constant_schedule_with_warmup`` multiplier."""
    if step < warmup:
        return float(step) / float(max(1.0, warmup))
    return 1.0


# ---------------------------------------------------------------- 1. dual-clip PPO


def _dual_clip_case() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    mask = (torch.rand(6, 7) > 0.3).float()
    mask[:, 0] = 1
    old = torch.randn(6, 7) * 0.3 - 1
    adv = torch.tensor([1.2, -0.7, 0.0, -1.5, 0.3, 2.0])
    return old, adv, mask


def test_dual_clip_caps_a_negative_advantage_token_as_verl_does() -> None:
    old, adv, mask = _dual_clip_case()
    new = old.clone()
    new[1, 0] = old[1, 0] + 3.0  # ratio e^3 ~ 20 > 10 against A = -0.7
    per_token_adv = adv.unsqueeze(-1).expand(6, 7)
    expected, expected_lower = verl_policy_loss(old, new, per_token_adv, mask)
    logp = new.clone().requires_grad_(True)
    loss, stats = ppo_clip_loss(logp, old, adv, mask)
    assert loss.item() == pytest.approx(expected.item(), abs=1e-6)
    # every other token has ratio 1 (loss -A); the capped one -A * 10 = 7, not -A * e^3 ~ 14.06
    others = (-per_token_adv * mask).sum().item() - 0.7
    assert loss.item() == pytest.approx((others + 7.0) / mask.sum().item(), abs=1e-6)
    loss.backward()
    assert logp.grad is not None and logp.grad[1, 0].item() == 0.0  # the dual clip stops it
    assert stats["clip_fraction_dual"] == pytest.approx(expected_lower.item())
    assert stats["clip_fraction_dual"] == pytest.approx(1.0 / mask.sum().item())


def test_dual_clip_leaves_ratios_up_to_c_and_positive_advantages_alone() -> None:
    old, adv, mask = _dual_clip_case()
    torch.manual_seed(1)
    new = old + torch.randn(6, 7) * 0.4
    new[1, 0] = old[1, 0] + 2.0  # ratio e^2 ~ 7.4 <= 10: the plain clipped loss
    new[0, 0] = old[0, 0] + 3.0  # ratio e^3 with A > 0: clipped at 1.28, no dual clip
    per_token_adv = adv.unsqueeze(-1).expand(6, 7)
    ratio = torch.exp(new - old)
    plain = torch.maximum(-per_token_adv * ratio, -per_token_adv * ratio.clamp(0.8, 1.28))
    plain_mean = (plain * mask).sum() / mask.sum()
    loss, stats = ppo_clip_loss(new, old, adv, mask)
    assert loss.item() == pytest.approx(plain_mean.item(), abs=1e-6)
    assert loss.item() == pytest.approx(verl_policy_loss(old, new, per_token_adv, mask)[0].item())
    assert stats["clip_fraction_dual"] == 0.0
    # a lower bound moves the cap: with c = 5 the e^2 token is capped at -A * 5
    capped, capped_stats = grpo_loss(new, old, adv, mask, clip_ratio_c=5.0)
    assert capped.item() == pytest.approx(
        verl_policy_loss(old, new, per_token_adv, mask, clip_ratio_c=5.0)[0].item(), abs=1e-6
    )
    assert capped.item() < loss.item() and capped_stats["clip_fraction_dual"] > 0


@pytest.mark.parametrize("c", [1.0, 0.5, float("nan")])
def test_dual_clip_bound_must_exceed_one(c: float) -> None:
    logp = torch.zeros(1, 2)
    with pytest.raises(ValueError, match="clip_ratio_c"):
        ppo_clip_loss(logp, logp, torch.tensor([-1.0]), torch.ones(1, 2), clip_ratio_c=c)


def test_clip_ratio_c_is_a_config_field_with_a_flag() -> None:
    assert TrainConfig().clip_ratio_c == 10.0  # the authors' 3B_A1.yaml
    for bad in (1.0, 0.5, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="TrainConfig.clip_ratio_c"):
            TrainConfig(clip_ratio_c=bad)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert "--clip-ratio-c" in parser.format_help()
    cfg = build_config(parser.parse_args(["--preset", "nano", "--clip-ratio-c", "3"]))
    assert cfg.clip_ratio_c == 3.0
    assert TrainConfig.from_dict(cfg.to_dict()).clip_ratio_c == 3.0


# ---------------------------------------------------------------- 2. non-finite gradient norm


def _player(**overrides: object) -> Player:
    cfg = from_preset("nano", lr=1e-2, warmup_steps=0, kl_coef=0.0, steps=4, **overrides)
    return build_player("coder", "builtin:nano", cfg, seed=0, lr=cfg.lr, device=torch.device("cpu"))


def _samples() -> list[Sample]:
    return [Sample([10, 11, 12], [20, 21, 22], 1.0), Sample([10, 11, 12], [30, 31, 32], -1.0)]


def _weights(player: Player) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in player.model.named_parameters()}


@pytest.mark.parametrize(("max_grad_norm", "bad"), [(1.0, float("inf")), (0.0, float("nan"))])
def test_a_non_finite_gradient_norm_skips_the_optimizer_step(
    max_grad_norm: float, bad: float
) -> None:
    player = _player(max_grad_norm=max_grad_norm)
    first = next(p for p in player.model.parameters() if p.requires_grad)
    hook = first.register_hook(lambda g: torch.full_like(g, bad))
    before = _weights(player)
    with pytest.warns(RuntimeWarning, match="coder: the gradient norm of update 1 is .*skipped"):
        stats = player.update(_samples())
    assert stats["skipped_updates"] == 1.0
    assert not math.isfinite(stats["grad_norm"])
    after = _weights(player)
    assert all(torch.equal(before[n], after[n]) for n in before)  # no step: nothing moved
    assert not player.optimizer.state  # AdamW never stepped (its moments untouched)
    assert all(p.grad is None for p in player.model.parameters())  # the gradients dropped
    # the schedule stepped as it would have (verl steps its scheduler after every update)
    assert player.scheduler.last_epoch == 1
    expected = player.lr * lr_lambda(1, warmup=0, total=4, schedule="cosine", from_zero=True)
    assert player.scheduler.get_last_lr()[0] == pytest.approx(expected)

    hook.remove()  # a finite gradient steps again
    stats = player.update(_samples())
    assert stats["skipped_updates"] == 0.0 and math.isfinite(stats["grad_norm"])
    assert any(not torch.equal(after[n], p) for n, p in player.model.named_parameters())
    assert player.optimizer.state and player.scheduler.last_epoch == 2


def test_update_reports_the_dual_clip_fraction() -> None:
    stats = _player().update(_samples())
    assert stats["skipped_updates"] == 0.0
    assert stats["clip_fraction_dual"] == 0.0  # one PPO epoch on fresh samples: ratio 1


# ---------------------------------------------------------------- 3. the warm-up


def test_the_rl_schedule_is_verls_cosine_with_warmup() -> None:
    for step in range(13):
        assert lr_lambda(
            step, warmup=10, total=100, schedule="cosine", from_zero=True
        ) == pytest.approx(verl_cosine(step, 10, 100), abs=1e-12)
    assert lr_lambda(0, warmup=10, total=100, schedule="cosine", from_zero=True) == 0.0
    assert lr_lambda(10, warmup=10, total=100, schedule="cosine", from_zero=True) == 1.0
    for step in range(21):  # the whole of a short run, its end included
        assert lr_lambda(
            step, warmup=10, total=20, schedule="cosine", from_zero=True
        ) == pytest.approx(verl_cosine(step, 10, 20), abs=1e-12)
        assert lr_lambda(
            step, warmup=10, total=20, schedule="constant", from_zero=True
        ) == pytest.approx(verl_constant(step, 10), abs=1e-12)


def test_the_players_scheduler_warms_up_from_zero() -> None:
    cfg = TrainConfig(warmup_steps=10, steps=100)
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=cfg.lr)
    scheduler = _make_scheduler(optimizer, cfg)
    seen = []
    for _ in range(13):
        seen.append(scheduler.get_last_lr()[0] / cfg.lr)
        optimizer.step()
        scheduler.step()
    assert seen == pytest.approx([verl_cosine(s, 10, 100) for s in range(13)], abs=1e-12)
    assert seen[0] == 0.0 and seen[10] == pytest.approx(1.0)


# ---------------------------------------------------------------- 4. a group of one


def test_a_group_of_one_keeps_its_reward_as_verl_does() -> None:
    adv = group_advantages(torch.tensor([[0.7], [-0.25]]))
    expected = verl_grpo_advantages([0.7, -0.25], [0, 1])
    assert adv.flatten().tolist() == pytest.approx(expected, abs=1e-7)
    assert adv[0, 0].item() == pytest.approx(0.7 / (1 + 1e-6))
    assert group_advantages(torch.tensor([0.7]), normalize_std=False).item() == pytest.approx(0.7)
    # larger groups are unchanged, and agree with verl too
    rewards = [0.3125, 0.5, 0.5, 0.0, 1.0, 0.25, 0.75, 0.4]
    ours = group_advantages(torch.tensor([rewards])).flatten().tolist()
    assert ours == pytest.approx(verl_grpo_advantages(rewards, [0] * 8), abs=1e-6)


def test_a_coder_group_of_one_code_learns_from_its_reward() -> None:
    out = coder_samples(torch.tensor([[1.0], [0.0]]), [Gen("a"), Gen("b")])
    assert [s.advantage for s in out.samples] == pytest.approx([1.0 / (1 + 1e-6), 0.0])


# ---------------------------------------------------------------- 5. the tester's code


def test_suite_spread_is_the_population_std_the_authors_pick_by() -> None:
    rewards = torch.tensor(
        [
            [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
            [0.5] * 8,
            [0.2, 0.4, 0.2, 0.4, 0.2, 0.4, 0.2, 0.4],
        ]
    )
    spread = suite_spread(rewards)
    assert torch.allclose(spread, torch.std(rewards.float(), dim=1, unbiased=False))
    assert spread[0].item() == pytest.approx(0.5)  # not sqrt(8/7) * 0.5
    gens = [Gen(str(i)) for i in range(24)]
    out = groups.tester_samples(rewards.unsqueeze(0), gens)  # named so pytest collects nothing
    assert out.chosen_std == pytest.approx([0.5])  # what tester/update_n_std logs


def test_tied_spreads_pick_the_first_code() -> None:
    rewards = torch.tensor([[0.5, 0.5], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    assert select_tester_codes(rewards, "update_n") == [1]
    assert select_tester_codes(torch.zeros(3, 4), "update_n") == [0]
