"""GRPO loss math on hand-computed tensors."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import torch

from agents.training.grpo import (
    group_advantages,
    grpo_loss,
    low_var_kl,
    masked_aggregate,
    ppo_clip_loss,
    token_logprobs,
)

# ---------------------------------------------------------------- advantages


def test_group_advantages_normalised_by_unbiased_std() -> None:
    # mean 0.5; unbiased std = sqrt(4 * 0.25 / 3) = sqrt(1/3)
    adv = group_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]), eps=0.0)
    expected = 0.5 / math.sqrt(1.0 / 3.0)
    assert torch.allclose(adv, torch.tensor([[expected, -expected, -expected, expected]]))


def test_group_advantages_per_row_and_zero_std_group() -> None:
    rewards = torch.tensor([[2.0, 2.0, 2.0], [0.0, 1.0, 2.0]])
    adv = group_advantages(rewards, eps=0.0)
    # row 0 has zero std: no signal, exactly zero (not NaN); row 1: mean 1, std 1
    assert torch.equal(adv[0], torch.zeros(3))
    assert torch.allclose(adv[1], torch.tensor([-1.0, 0.0, 1.0]))


def test_group_advantages_eps_and_no_std_and_dim() -> None:
    adv = group_advantages(torch.tensor([0.0, 2.0]), eps=1.0)
    # mean 1, std sqrt(2): (+-1) / (sqrt 2 + 1)
    assert torch.allclose(adv, torch.tensor([-1.0, 1.0]) / (math.sqrt(2.0) + 1.0))
    assert torch.allclose(
        group_advantages(torch.tensor([[1.0, 3.0]]), normalize_std=False),
        torch.tensor([[-1.0, 1.0]]),
    )
    by_column = group_advantages(torch.tensor([[0.0, 5.0], [2.0, 5.0]]), eps=0.0, dim=0)
    s = math.sqrt(2.0)
    assert torch.allclose(by_column, torch.tensor([[-1 / s, 0.0], [1 / s, 0.0]]))


def test_group_advantages_bad_input() -> None:
    # a group of one: verl's mean 0 and std 1, so the advantage is the reward
    assert torch.allclose(
        group_advantages(torch.tensor([[3.0]])), torch.tensor([[3.0 / (1 + 1e-6)]])
    )
    assert torch.allclose(
        group_advantages(torch.tensor([0, 2])), torch.tensor([-1.0, 1.0]) / (math.sqrt(2.0) + 1e-6)
    )
    with pytest.raises(ValueError, match="NaN"):
        group_advantages(torch.tensor([1.0, float("nan")]))
    with pytest.raises(ValueError, match="empty"):
        group_advantages(torch.tensor([]))


# ---------------------------------------------------------------- token log-probs


def test_token_logprobs_hand_values_and_temperature() -> None:
    logits = torch.tensor([[[0.0, math.log(3.0)], [0.0, 0.0]]])  # (1, 2, 2)
    ids = torch.tensor([[1, 0]])
    logp = token_logprobs(logits, ids)
    assert torch.allclose(logp, torch.tensor([[math.log(0.75), math.log(0.5)]]))
    hot = token_logprobs(logits, ids, temperature=2.0)
    sqrt3 = math.sqrt(3.0)
    assert torch.allclose(hot[0, 0], torch.tensor(math.log(sqrt3 / (1.0 + sqrt3))))
    masked = token_logprobs(logits, ids, mask=torch.tensor([[1, 0]]))
    assert masked[0, 1].item() == 0.0
    with pytest.raises(ValueError):
        token_logprobs(logits, ids, temperature=0.0)
    with pytest.raises(ValueError):
        token_logprobs(logits, torch.tensor([[1]]))


def test_token_logprobs_matches_log_softmax_in_bf16() -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 11, generator=g)
    ids = torch.randint(0, 11, (2, 5), generator=g)
    ref = torch.log_softmax(logits, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(token_logprobs(logits, ids), ref, atol=1e-6)
    low = token_logprobs(logits.bfloat16(), ids)
    assert low.dtype == torch.float32
    assert torch.allclose(low, ref, atol=5e-2)


# ---------------------------------------------------------------- clipping


def _clip_case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    # ratios 1.5, 1.5, 0.5, 0.5 with advantages +1, -1, +1, -1 (one token per sequence)
    logp_old = torch.zeros(4, 1)
    logp_new = torch.log(torch.tensor([[1.5], [1.5], [0.5], [0.5]])).requires_grad_(True)
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0])
    return logp_new, logp_old, adv, torch.ones(4, 1)


def test_ppo_clip_both_sides() -> None:
    logp_new, logp_old, adv, mask = _clip_case()
    loss, stats = ppo_clip_loss(logp_new, logp_old, adv, mask, clip_low=0.2, clip_high=0.28)
    # per token: max(-A r, -A clip(r, 0.8, 1.28))
    #   r=1.5, A=+1: max(-1.5, -1.28) = -1.28 (clipped, high side)
    #   r=1.5, A=-1: max( 1.5,  1.28) =  1.5
    #   r=0.5, A=+1: max(-0.5, -0.8)  = -0.5
    #   r=0.5, A=-1: max( 0.5,  0.8)  =  0.8  (clipped, low side)
    assert loss.item() == pytest.approx((-1.28 + 1.5 - 0.5 + 0.8) / 4, abs=1e-6)
    assert stats["clip_fraction"] == pytest.approx(0.5)
    assert stats["clip_fraction_high"] == pytest.approx(0.5)
    assert stats["clip_fraction_low"] == pytest.approx(0.5)
    assert stats["ratio_mean"] == pytest.approx(1.0)
    assert stats["ratio_max"] == pytest.approx(1.5)
    assert stats["ratio_min"] == pytest.approx(0.5)
    loss.backward()
    assert logp_new.grad is not None
    grad = logp_new.grad.flatten()
    # clipped tokens carry no gradient; d(-A r)/dlogp = -A r, divided by 4 tokens
    assert torch.allclose(grad, torch.tensor([0.0, 1.5 / 4, -0.5 / 4, 0.0]))


def test_ppo_clip_asymmetric_range_matters() -> None:
    logp_new, logp_old, adv, mask = _clip_case()
    loss, _ = ppo_clip_loss(logp_new, logp_old, adv, mask, clip_low=0.2, clip_high=0.2)
    assert loss.item() == pytest.approx((-1.2 + 1.5 - 0.5 + 0.8) / 4, abs=1e-6)


def test_ppo_clip_unit_ratio_is_minus_advantage() -> None:
    logp = torch.full((2, 3), -1.3)
    loss, stats = ppo_clip_loss(logp, logp, torch.tensor([2.0, -1.0]), torch.ones(2, 3))
    assert loss.item() == pytest.approx((-2.0 * 3 + 1.0 * 3) / 6)
    assert stats["clip_fraction"] == 0.0
    assert stats["approx_kl"] == 0.0


# ---------------------------------------------------------------- masking and aggregation


def test_masking_ignores_padding_values() -> None:
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    logp_old = torch.zeros(2, 3)
    clean = torch.zeros(2, 3)
    dirty = clean.clone()
    dirty[0, 2] = 50.0  # garbage at padded positions: huge ratio
    dirty[1, 1:] = -50.0
    adv = torch.tensor([1.0, -2.0])
    a, sa = ppo_clip_loss(clean, logp_old, adv, mask)
    b, sb = ppo_clip_loss(dirty, logp_old, adv, mask)
    assert a.item() == pytest.approx(b.item())
    assert sb["clip_fraction"] == 0.0
    assert sb["ratio_max"] == pytest.approx(1.0)


def test_token_mean_vs_seq_mean() -> None:
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    logp = torch.zeros(2, 3)
    adv = torch.tensor([1.0, -2.0])  # per-token loss = -A: [-1, -1, .], [2, ., .]
    token_mean, _ = ppo_clip_loss(logp, logp, adv, mask, aggregation="token-mean")
    seq_mean, _ = ppo_clip_loss(logp, logp, adv, mask, aggregation="seq-mean-token-mean")
    seq_sum, _ = ppo_clip_loss(logp, logp, adv, mask, aggregation="seq-mean-token-sum")
    assert token_mean.item() == pytest.approx((-1 - 1 + 2) / 3)
    assert seq_mean.item() == pytest.approx((-1 + 2) / 2)
    assert seq_sum.item() == pytest.approx((-2 + 2) / 2)


def test_masked_aggregate_edge_cases() -> None:
    values = torch.tensor([[3.0, 1.0], [7.0, 7.0]])
    empty_row = torch.tensor([[1, 1], [0, 0]])
    assert masked_aggregate(values, empty_row, "seq-mean-token-mean").item() == pytest.approx(2.0)
    assert masked_aggregate(values, torch.zeros(2, 2), "token-mean").item() == 0.0
    with pytest.raises(ValueError, match="aggregation"):
        masked_aggregate(values, empty_row, "sum")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shape"):
        masked_aggregate(values, torch.ones(2, 3))
    with pytest.raises(ValueError, match="advantages"):
        ppo_clip_loss(values, values, torch.ones(3), torch.ones(2, 2))


def test_per_token_advantages_accepted() -> None:
    logp = torch.zeros(1, 2)
    loss, _ = ppo_clip_loss(logp, logp, torch.tensor([[1.0, 3.0]]), torch.ones(1, 2))
    assert loss.item() == pytest.approx(-2.0)


# ---------------------------------------------------------------- KL


def test_low_var_kl_hand_values() -> None:
    logp_new = torch.zeros(1, 4)
    logp_ref = torch.tensor([[math.log(2.0), math.log(0.5), 0.0, 5.0]])
    kl = low_var_kl(logp_new, logp_ref)
    # d = ref - new; kl = e^d - d - 1
    expected = [1.0 - math.log(2.0), 0.5 + math.log(2.0) - 1.0, 0.0, 10.0]  # e^5-6 clamped to 10
    assert torch.allclose(kl, torch.tensor([expected]), atol=1e-6)
    assert low_var_kl(torch.zeros(1, 1), torch.tensor([[100.0]])).item() == pytest.approx(10.0)
    masked = low_var_kl(logp_new, logp_ref, torch.tensor([[1, 1, 1, 0]]))
    assert masked[0, 3].item() == 0.0


def test_grpo_loss_adds_weighted_kl() -> None:
    mask = torch.ones(1, 2)
    logp_new = torch.zeros(1, 2)
    logp_ref = torch.tensor([[math.log(2.0), math.log(2.0)]])
    adv = torch.tensor([1.0])
    loss, stats = grpo_loss(logp_new, logp_new, adv, mask, logp_ref=logp_ref, kl_coef=0.1)
    kl = 1.0 - math.log(2.0)
    assert stats["kl"] == pytest.approx(kl, abs=1e-6)
    assert loss.item() == pytest.approx(-1.0 + 0.1 * kl, abs=1e-6)
    assert stats["loss"] == pytest.approx(loss.item())
    no_ref, no_ref_stats = grpo_loss(logp_new, logp_new, adv, mask)
    assert no_ref.item() == pytest.approx(-1.0)
    assert no_ref_stats["kl"] == 0.0


def test_grpo_loss_kl_gradient_pulls_towards_reference() -> None:
    logp_new = torch.zeros(1, 1, requires_grad=True)
    logp_ref = torch.tensor([[math.log(2.0)]])
    loss, _ = grpo_loss(
        logp_new, logp_new.detach(), torch.tensor([0.0]), torch.ones(1, 1), logp_ref, kl_coef=1.0
    )
    loss.backward()
    assert logp_new.grad is not None
    # d/dnew [e^(ref-new) - (ref-new) - 1] = -e^(ref-new) + 1 = -1 at ref - new = ln 2
    assert logp_new.grad.item() == pytest.approx(-1.0, abs=1e-6)
