"""The GRPO loss, as pure tensor functions (no model code).

Code-A1 trains both players with GRPO (Shao et al., 2024) in the verl setting of the paper:

- **Group advantages** (:func:`group_advantages`): each completion's reward minus its group's
  mean, divided by the group's standard deviation (plus ``eps``). A group is the ``G`` samples
  drawn for one prompt (8 codes per question; 8 suites for the chosen code).
- **PPO-clip policy loss** (:func:`ppo_clip_loss`) with asymmetric clipping ("clip-higher",
  ``clip_low = 0.20``, ``clip_high = 0.28``) and dual clipping (``clip_ratio_c = 10``: the loss
  of a token with a negative advantage is at most ``-A * clip_ratio_c``), aggregated as a mean
  over all valid tokens of the batch ("token-mean"). Per token it is verl's
  ``compute_policy_loss``, which the authors' code calls.
- **Low-variance KL** (:func:`low_var_kl`) to a frozen reference policy, the k3 estimator
  ``exp(ref - new) - (ref - new) - 1``, clamped to ``[-10, 10]`` as verl does, weighted by
  ``kl_coef = 0.001`` in :func:`grpo_loss`. No entropy bonus.

Shapes: ``B`` sequences (completions) of ``T`` completion tokens; ``mask`` is ``1`` on real
completion tokens and ``0`` on padding. Every per-token tensor is ``(B, T)``; advantages are one
scalar per sequence ``(B,)`` (broadcast over its tokens) or already per token ``(B, T)``.

Example:
    >>> import torch
    >>> rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0]])       # one group of 4 completions
    >>> adv = group_advantages(rewards).flatten()              # (4,)
    >>> logp = torch.zeros(4, 3)
    >>> mask = torch.ones(4, 3)
    >>> loss, stats = grpo_loss(logp, logp, adv, mask, logp_ref=logp)

"""

from __future__ import annotations

from typing import Literal

try:
    import torch
    from torch import Tensor
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("agents.training.grpo needs PyTorch: pip install 'codea1[train]'") from exc

__all__ = [
    "Aggregation",
    "group_advantages",
    "grpo_loss",
    "low_var_kl",
    "masked_aggregate",
    "ppo_clip_loss",
    "token_logprobs",
]

Aggregation = Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"]
"""How per-token losses become one scalar.

- ``"token-mean"``: sum over all valid tokens of the batch / number of valid tokens (the paper's
  setting; long and short completions weigh per token).
- ``"seq-mean-token-mean"``: mean over tokens within each sequence, then mean over sequences
  (original GRPO; every sequence weighs the same). Sequences with no valid token are left out.
- ``"seq-mean-token-sum"``: sum over tokens within each sequence, then mean over sequences
  (Dr. GRPO style; no length normalisation).
"""

_AGGREGATIONS: tuple[str, ...] = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")
_LOG_RATIO_CLAMP = 20.0
_KL_CLAMP = 10.0


def group_advantages(
    rewards: Tensor, eps: float = 1e-6, normalize_std: bool = True, dim: int = -1
) -> Tensor:
    """GRPO advantages: rewards centred (and scaled) within their group.

    ``A_i = (r_i - mean(r)) / (std(r) + eps)`` with the unbiased standard deviation (as
    ``torch.std`` and verl compute it), or ``r_i - mean(r)`` when ``normalize_std`` is false
    (Dr. GRPO). A group whose rewards are all equal gets all-zero advantages (no signal).

    A group of size 1 is verl's (``compute_grpo_outcome_advantage``, which the authors' code
    calls): its mean is taken as 0 and its standard deviation as 1, so its advantage is the
    reward itself, ``r / (1 + eps)`` (``r`` without ``normalize_std``). The trainer makes such
    groups with ``n_codes = 1`` (the coder), or ``n_suites = 1`` with ``tester_group = "all"``.

    Args:
        rewards: Rewards with the group along ``dim``, e.g. ``(num_groups, G)`` or ``(G,)``.
        eps: Added to the standard deviation before dividing.
        normalize_std: Divide by the group standard deviation.
        dim: The group dimension.

    Returns:
        Advantages, a float tensor of the same shape as ``rewards``.

    Raises:
        ValueError: If ``rewards`` is empty or holds NaN or infinite values.

    """
    rewards = rewards.to(torch.float32) if not rewards.is_floating_point() else rewards
    if rewards.numel() == 0:
        raise ValueError("group_advantages: rewards is empty")
    if not torch.isfinite(rewards).all():
        raise ValueError("group_advantages: rewards hold NaN or infinite values")
    group_size = rewards.shape[dim]
    if group_size == 1:  # verl: mean 0, std 1
        return rewards / (1.0 + eps) if normalize_std else rewards.clone()
    centred = rewards - rewards.mean(dim=dim, keepdim=True)
    if not normalize_std:
        return centred
    std = rewards.std(dim=dim, keepdim=True)
    scaled = centred / (std + eps)
    return torch.where(std > 0, scaled, torch.zeros_like(scaled))


def token_logprobs(
    logits: Tensor, ids: Tensor, mask: Tensor | None = None, temperature: float = 1.0
) -> Tensor:
    """Log-probabilities of the given tokens under ``softmax(logits / temperature)``.

    The logits must already be aligned with ``ids``: ``logits[b, t]`` is the distribution that
    produced ``ids[b, t]`` (for a causal LM run on ``prompt + completion``, take the logits at
    positions ``P - 1 ... P + T - 2``). Computed in float32 whatever the logits' dtype.

    Args:
        logits: ``(B, T, V)``.
        ids: ``(B, T)`` token ids.
        mask: Optional ``(B, T)``; positions where it is 0 get log-probability 0.
        temperature: The sampling temperature the tokens were drawn at (must be > 0).

    Returns:
        ``(B, T)`` float32 log-probabilities.

    Raises:
        ValueError: On mismatched shapes or a non-positive temperature.

    """
    if logits.dim() != 3 or ids.shape != logits.shape[:2]:
        raise ValueError(
            f"token_logprobs: logits {tuple(logits.shape)} and ids {tuple(ids.shape)} "
            "must be (B, T, V) and (B, T)"
        )
    if temperature <= 0:
        raise ValueError(f"token_logprobs: temperature must be > 0, got {temperature}")
    scaled = logits.float()
    if temperature != 1.0:
        scaled = scaled / temperature
    picked = scaled.gather(-1, ids.long().unsqueeze(-1)).squeeze(-1)
    logp = picked - torch.logsumexp(scaled, dim=-1)
    if mask is not None:
        _check_same_shape(logp, mask, "mask")
        logp = logp * mask.to(logp.dtype)
    return logp


def masked_aggregate(
    values: Tensor, mask: Tensor, aggregation: Aggregation = "token-mean"
) -> Tensor:
    """Reduce per-token ``values`` ``(B, T)`` to a scalar over the tokens where ``mask`` is 1.

    See :data:`Aggregation` for the modes. A batch with no valid token gives 0 (not NaN), so an
    all-padding micro-batch contributes no gradient.

    Raises:
        ValueError: On an unknown aggregation or mismatched shapes.

    """
    _check_same_shape(values, mask, "mask")
    if aggregation not in _AGGREGATIONS:
        raise ValueError(f"unknown aggregation {aggregation!r}; expected one of {_AGGREGATIONS}")
    weights = mask.to(values.dtype)
    masked = values * weights
    if aggregation == "token-mean":
        return masked.sum() / weights.sum().clamp(min=1.0)
    per_seq_tokens = weights.sum(dim=-1)
    per_seq = masked.sum(dim=-1)
    if aggregation == "seq-mean-token-mean":
        per_seq = per_seq / per_seq_tokens.clamp(min=1.0)
    present = (per_seq_tokens > 0).to(values.dtype)
    return (per_seq * present).sum() / present.sum().clamp(min=1.0)


def ppo_clip_loss(
    logp_new: Tensor,
    logp_old: Tensor,
    advantages: Tensor,
    mask: Tensor,
    clip_low: float = 0.20,
    clip_high: float = 0.28,
    aggregation: Aggregation = "token-mean",
    clip_ratio_c: float = 10.0,
) -> tuple[Tensor, dict[str, float]]:
    """PPO's clipped surrogate loss with asymmetric and dual clipping (verl's).

    Per token: ``ratio = exp(logp_new - logp_old)`` (the log-ratio clamped to ``[-20, 20]``) and
    ``loss = max(-A * ratio, -A * clip(ratio, 1 - clip_low, 1 + clip_high))``; where ``A < 0``
    the loss is further capped at ``-A * clip_ratio_c`` (dual-clip PPO, Ye et al., 2020: a token
    whose ratio has grown past ``clip_ratio_c`` against a negative advantage stops pushing, and
    carries no gradient). Then aggregated over valid tokens by :func:`masked_aggregate`.

    Args:
        logp_new: ``(B, T)`` log-probabilities under the policy being trained (with grad).
        logp_old: ``(B, T)`` log-probabilities under the policy that sampled (no grad needed).
        advantages: ``(B,)`` per sequence or ``(B, T)`` per token.
        mask: ``(B, T)``, 1 on completion tokens.
        clip_low: Lower clip range: the ratio is clipped below at ``1 - clip_low``.
        clip_high: Upper clip range: the ratio is clipped above at ``1 + clip_high``.
        aggregation: See :data:`Aggregation`.
        clip_ratio_c: The dual clip: where ``A < 0`` the loss is at most ``-A * clip_ratio_c``
            (must be > 1, as verl asserts; the authors use 10).

    Returns:
        ``(loss, stats)``; ``stats`` holds floats: ``pg_loss``, ``clip_fraction`` (share of valid
        tokens where the clipped term was the active one), ``clip_fraction_low`` /
        ``clip_fraction_high`` (ratio below / above the clip range), ``clip_fraction_dual``
        (share of valid tokens where the dual clip was the active one: ``A < 0`` and the clipped
        loss above ``-A * clip_ratio_c``; verl's ``pg_clipfrac_lower``), ``ratio_mean``,
        ``ratio_min``, ``ratio_max`` and ``approx_kl`` (mean of ``logp_old - logp_new``, the k1
        estimate of KL(old || new)), all over valid tokens.

    Raises:
        ValueError: On mismatched shapes, negative clip ranges or ``clip_ratio_c <= 1``.

    """
    _check_same_shape(logp_new, logp_old, "logp_old")
    _check_same_shape(logp_new, mask, "mask")
    if clip_low < 0 or clip_high < 0:
        raise ValueError(f"clip ranges must be >= 0, got low={clip_low} high={clip_high}")
    if not clip_ratio_c > 1.0:
        raise ValueError(f"clip_ratio_c must be > 1, got {clip_ratio_c}")
    adv = _per_token(advantages, logp_new)
    log_ratio = (logp_new - logp_old).clamp(-_LOG_RATIO_CLAMP, _LOG_RATIO_CLAMP)
    ratio = torch.exp(log_ratio)
    unclipped = -adv * ratio
    clipped = -adv * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    ppo_clipped = torch.maximum(unclipped, clipped)
    dual_cap = -adv * clip_ratio_c
    negative = adv < 0
    per_token = torch.where(negative, torch.minimum(ppo_clipped, dual_cap), ppo_clipped)
    loss = masked_aggregate(per_token, mask, aggregation)

    with torch.no_grad():
        valid = mask.bool()
        n_valid = max(int(valid.sum().item()), 1)
        r = ratio.detach()
        active_clip = (clipped > unclipped) & valid
        active_dual = (ppo_clipped > dual_cap) & negative & valid
        stats = {
            "pg_loss": float(loss.detach().item()),
            "clip_fraction": float(active_clip.sum().item()) / n_valid,
            "clip_fraction_dual": float(active_dual.sum().item()) / n_valid,
            "clip_fraction_low": float(((r < 1.0 - clip_low) & valid).sum().item()) / n_valid,
            "clip_fraction_high": float(((r > 1.0 + clip_high) & valid).sum().item()) / n_valid,
            "ratio_mean": float(r[valid].mean().item()) if valid.any() else 1.0,
            "ratio_min": float(r[valid].min().item()) if valid.any() else 1.0,
            "ratio_max": float(r[valid].max().item()) if valid.any() else 1.0,
            "approx_kl": float((-log_ratio.detach())[valid].mean().item()) if valid.any() else 0.0,
        }
    return loss, stats


def low_var_kl(logp_new: Tensor, logp_ref: Tensor, mask: Tensor | None = None) -> Tensor:
    """Per-token low-variance KL estimate of KL(new || ref) (Schulman's k3).

    ``d = clamp(logp_ref - logp_new, -20, 20)``, ``kl = exp(d) - d - 1``, then clamped to
    ``[-10, 10]`` (verl's ``low_var_kl``). It is >= 0 and 0 where the two agree.

    Args:
        logp_new: ``(B, T)`` log-probabilities under the trained policy.
        logp_ref: ``(B, T)`` log-probabilities under the frozen reference policy.
        mask: Optional ``(B, T)``; masked positions get 0.

    Returns:
        ``(B, T)`` per-token KL values (aggregate them with :func:`masked_aggregate`).

    """
    _check_same_shape(logp_new, logp_ref, "logp_ref")
    delta = (logp_ref - logp_new).clamp(-_LOG_RATIO_CLAMP, _LOG_RATIO_CLAMP)
    kl = (torch.exp(delta) - delta - 1.0).clamp(-_KL_CLAMP, _KL_CLAMP)
    if mask is not None:
        _check_same_shape(kl, mask, "mask")
        kl = kl * mask.to(kl.dtype)
    return kl


def grpo_loss(
    logp_new: Tensor,
    logp_old: Tensor,
    advantages: Tensor,
    mask: Tensor,
    logp_ref: Tensor | None = None,
    kl_coef: float = 0.001,
    clip_low: float = 0.20,
    clip_high: float = 0.28,
    aggregation: Aggregation = "token-mean",
    clip_ratio_c: float = 10.0,
) -> tuple[Tensor, dict[str, float]]:
    """Compute the GRPO objective: PPO-clip loss plus ``kl_coef`` x low-variance KL.

    Both terms are aggregated the same way (``aggregation``). With ``logp_ref=None`` or
    ``kl_coef=0`` the KL term is left out (and reported as 0). ``clip_ratio_c`` is the dual clip
    of :func:`ppo_clip_loss`.

    Returns:
        ``(loss, stats)``: the stats of :func:`ppo_clip_loss` plus ``kl`` (the aggregated KL,
        before the coefficient) and ``loss`` (the total).

    """
    loss, stats = ppo_clip_loss(
        logp_new, logp_old, advantages, mask, clip_low, clip_high, aggregation, clip_ratio_c
    )
    kl_value = 0.0
    if logp_ref is not None and kl_coef != 0.0:
        kl = masked_aggregate(low_var_kl(logp_new, logp_ref, mask), mask, aggregation)
        loss = loss + kl_coef * kl
        kl_value = float(kl.detach().item())
    stats["kl"] = kl_value
    stats["loss"] = float(loss.detach().item())
    return loss, stats


def _per_token(advantages: Tensor, like: Tensor) -> Tensor:
    if advantages.shape == like.shape:
        return advantages.to(like.dtype)
    if advantages.dim() == 1 and advantages.shape[0] == like.shape[0]:
        return advantages.to(like.dtype).unsqueeze(-1).expand_as(like)
    raise ValueError(
        f"advantages {tuple(advantages.shape)} must be (B,) or (B, T) for "
        f"log-probabilities {tuple(like.shape)}"
    )


def _check_same_shape(a: Tensor, b: Tensor, name: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{name} has shape {tuple(b.shape)}, expected {tuple(a.shape)}")
