"""Rollout samples as token sequences, and their log-probabilities under a model.

A :class:`Sample` is one completion the trainer learns from: the prompt's token ids, the
completion's token ids, its GRPO advantage and which role produced it. :func:`pack` right-pads a
list of samples into ``prompt + completion`` tensors with a mask that is 1 exactly where the
*next* token is a completion token, so ``token_logprobs(logits[:, :-1], ids[:, 1:], mask)`` gives
the completion's log-probabilities and the loss ignores prompts and padding.
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

try:
    import torch
    from torch import Tensor
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("agents.training.rollout needs PyTorch: pip install 'codea1[train]'") from exc

from agents.lm.transformers_lm import accepts_logits_to_keep
from agents.training.grpo import token_logprobs

__all__ = [
    "Batch",
    "Sample",
    "autocast",
    "balanced_partition",
    "budget_groups",
    "effective_length",
    "micro_batches",
    "pack",
    "sequence_logprobs",
]


@dataclass
class Sample:
    """One completion to learn from.

    Attributes:
        prompt_ids: Token ids of the prompt (what the model was conditioned on).
        completion_ids: Token ids the model sampled (stop/eos tokens included when sampled).
        advantage: GRPO advantage of the completion (same for each of its tokens).
        role: ``"coder"`` or ``"tester"``.
        old_logprobs: Log-probabilities under the sampling policy, per completion token (filled
            by the trainer before a multi-update PPO pass; ``None`` means "use the current
            policy's values", which is exact for a single on-policy update).
        ref_logprobs: Log-probabilities under the frozen reference, per completion token.

    """

    prompt_ids: list[int]
    completion_ids: list[int]
    advantage: float
    role: str = "coder"
    old_logprobs: list[float] | None = None
    ref_logprobs: list[float] | None = None

    @property
    def n_tokens(self) -> int:
        """Number of completion tokens."""
        return len(self.completion_ids)


@dataclass
class Batch:
    """Packed samples.

    Attributes:
        input_ids: ``(B, L)`` prompt + completion ids, right-padded.
        attention_mask: ``(B, L)`` 1 on real tokens.
        loss_mask: ``(B, L - 1)`` 1 where position ``t`` predicts a completion token ``t + 1``.
        advantages: ``(B,)``.
        old_logprobs: ``(B, L - 1)`` aligned with ``loss_mask`` (zeros where unknown).
        ref_logprobs: ``(B, L - 1)`` aligned with ``loss_mask`` (zeros where unknown).
        has_old: Whether every sample carried ``old_logprobs``.
        has_ref: Whether every sample carried ``ref_logprobs``.

    """

    input_ids: Tensor
    attention_mask: Tensor
    loss_mask: Tensor
    advantages: Tensor
    old_logprobs: Tensor
    ref_logprobs: Tensor
    has_old: bool
    has_ref: bool

    def to(self, device: torch.device | str) -> Batch:
        """Move every tensor to ``device``."""
        return Batch(
            self.input_ids.to(device),
            self.attention_mask.to(device),
            self.loss_mask.to(device),
            self.advantages.to(device),
            self.old_logprobs.to(device),
            self.ref_logprobs.to(device),
            self.has_old,
            self.has_ref,
        )


def pack(samples: Sequence[Sample], pad_id: int) -> Batch:
    """Right-pad ``samples`` into a :class:`Batch`.

    Raises:
        ValueError: when ``samples`` is empty or a sample has no prompt token.

    """
    if not samples:
        raise ValueError("pack: no samples")
    length = max(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    n = len(samples)
    ids = torch.full((n, length), pad_id, dtype=torch.long)
    attention = torch.zeros((n, length), dtype=torch.long)
    loss_mask = torch.zeros((n, length - 1), dtype=torch.float32)
    old = torch.zeros((n, length - 1), dtype=torch.float32)
    ref = torch.zeros((n, length - 1), dtype=torch.float32)
    for row, sample in enumerate(samples):
        if not sample.prompt_ids:
            raise ValueError("pack: a sample has an empty prompt")
        p, c = len(sample.prompt_ids), len(sample.completion_ids)
        ids[row, : p + c] = torch.tensor(sample.prompt_ids + sample.completion_ids)
        attention[row, : p + c] = 1
        loss_mask[row, p - 1 : p - 1 + c] = 1.0
        if sample.old_logprobs is not None:
            old[row, p - 1 : p - 1 + c] = torch.tensor(sample.old_logprobs[:c])
        if sample.ref_logprobs is not None:
            ref[row, p - 1 : p - 1 + c] = torch.tensor(sample.ref_logprobs[:c])
    advantages = torch.tensor([s.advantage for s in samples], dtype=torch.float32)
    return Batch(
        ids,
        attention,
        loss_mask,
        advantages,
        old,
        ref,
        all(s.old_logprobs is not None for s in samples),
        all(s.ref_logprobs is not None for s in samples),
    )


def effective_length(sample: Sample) -> int:
    """Tokens a sample occupies in a forward pass: its prompt plus its completion (no padding).

    What a token budget (``micro_batch_max_tokens``) counts, as verl's ``use_dynamic_bsz``
    counts a row's ``attention_mask``; the padded forward passes are bounded separately
    (:func:`padded_passes`).
    """
    return len(sample.prompt_ids) + sample.n_tokens


def budget_groups(lengths: Sequence[int], max_tokens: int) -> int:
    """How many micro-batches a token budget makes of samples of ``lengths``.

    ``ceil(sum(lengths) / max_tokens)`` (verl's ``rearrange_micro_batches``), at least 1 and at
    most ``len(lengths)``; 0 for no samples.

    Raises:
        ValueError: ``max_tokens < 1``.

    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    if not lengths:
        return 0
    return min(len(lengths), max(1, -(-sum(lengths) // max_tokens)))


def balanced_partition(lengths: Sequence[int], groups: int) -> list[list[int]]:
    """Split indices ``0 .. len(lengths) - 1`` into ``groups`` groups of similar total length.

    Greedy longest-processing-time (LPT): the indices in order of decreasing length (ties: the
    lower index first) each go to the group with the smallest total so far (ties: fewer samples,
    then the lower group). Deterministic; every index lands in exactly one group; with ``groups
    <= len(lengths)`` no group is empty. With ``groups = ceil(sum /
    budget)`` a sample longer than the budget is alone in its group: a later sample joins it only
    if every other group already holds more than the budget, which would make the total exceed
    ``groups * budget``. verl partitions with Karmarkar-Karp (largest differencing) instead, so
    which samples share a group can differ from verl's. Each group's indices are returned sorted
    by ``(length, index)`` (the order :func:`pack` pads least in); groups in group order, empty
    ones left out.

    Raises:
        ValueError: ``groups < 1``.

    """
    if groups < 1:
        raise ValueError(f"groups must be >= 1, got {groups}")
    groups = min(groups, max(1, len(lengths)))
    heap = [(0, 0, g) for g in range(groups)]  # (total length, samples, group)
    members: list[list[int]] = [[] for _ in range(groups)]
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        total, count, g = heapq.heappop(heap)
        members[g].append(i)
        heapq.heappush(heap, (total + lengths[i], count + 1, g))
    return [sorted(m, key=lambda i: (lengths[i], i)) for m in members if m]


def padded_passes(micro: Sequence[Sample], max_tokens: int) -> list[list[Sample]]:
    """Cut one micro-batch into forward passes whose padded size stays within ``max_tokens``.

    A token budget counts each sample's own tokens (:func:`effective_length`), as verl does for
    its forward without padding; :func:`pack` pads every row of a pass to the longest, so a
    micro-batch that holds long and short samples (what :func:`balanced_partition` makes) would
    pad to many times the budget. The samples are taken in order of ``(effective length,
    position)`` and a pass takes the next one while its rows times its longest row stay within
    ``max_tokens``; a sample longer than the budget runs alone. Every sample lands in exactly one
    pass. The micro-batch's loss does not change: the caller weights each pass by its share of
    the micro-batch (its tokens under ``token-mean``, its sequences otherwise).

    Raises:
        ValueError: ``max_tokens < 1``.

    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    order = sorted(range(len(micro)), key=lambda i: (effective_length(micro[i]), i))
    passes: list[list[Sample]] = []
    current: list[Sample] = []
    for i in order:
        longest = effective_length(micro[i])  # ascending: the newest row is the longest
        if current and (len(current) + 1) * longest > max_tokens:
            passes.append(current)
            current = []
        current.append(micro[i])
    if current:
        passes.append(current)
    return passes


def micro_batches(
    samples: Sequence[Sample],
    size: int,
    *,
    max_tokens: int | None = None,
    groups: Mapping[str, int] | None = None,
) -> Iterator[list[Sample]]:
    """Split ``samples`` into micro-batches, one role per micro-batch, roles in sorted order.

    Keeping roles apart lets each micro-batch use its role's sampling temperature (self-play
    mixes both roles); the order is deterministic.

    Without ``max_tokens``: chunks of at most ``size`` samples in order of ``(length, index)``
    (each chunk pads little). With ``max_tokens`` (a token budget, ``size`` ignored): each
    role's samples form :func:`budget_groups` of their :func:`effective_length` micro-batches,
    or ``groups[role]`` when that is larger (a data-parallel trainer passes the largest count
    over ranks, as verl does; capped by the role's sample count), balanced by token count with
    :func:`balanced_partition`. A sample longer than the budget forms its own micro-batch. Such
    a micro-batch is a unit of the loss's weighting, not of memory: run it in
    :func:`padded_passes`.
    """
    for role in sorted({s.role for s in samples}):
        members = [i for i in range(len(samples)) if samples[i].role == role]
        if max_tokens is not None:
            lengths = [effective_length(samples[i]) for i in members]
            count = budget_groups(lengths, max_tokens)
            if groups is not None and role in groups:
                count = min(len(members), max(count, groups[role]))
            for part in balanced_partition(lengths, count):
                yield [samples[members[j]] for j in part]
            continue
        order = sorted(members, key=lambda i: (effective_length(samples[i]), i))
        for start in range(0, len(order), size):
            yield [samples[i] for i in order[start : start + size]]


def autocast(device: torch.device, enabled: bool) -> contextlib.AbstractContextManager[Any]:
    """bfloat16 autocast on ``device`` when ``enabled``, else a no-op context."""
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def sequence_logprobs(
    model: Any, batch: Batch, *, temperature: float = 1.0, bf16: bool = False
) -> Tensor:
    """Log-probabilities ``(B, L - 1)`` of each next token (zero outside ``loss_mask``).

    The LM head and the softmax run only from the first position any row's mask needs (the
    shortest prompt's last token) when the model takes ``logits_to_keep``: prompt positions
    before it are never scored, and on the tiny preset's prompts the head over the whole
    vocabulary is a large part of a step. Runs with gradients when the caller has them enabled.
    """
    device = batch.input_ids.device
    length = batch.input_ids.shape[1]
    needed = torch.nonzero(batch.loss_mask.any(dim=0)).flatten()
    start = int(needed[0]) if needed.numel() and accepts_logits_to_keep(model) else 0
    kwargs: dict[str, Any] = {"logits_to_keep": length - start} if start > 0 else {}
    with autocast(device, bf16):
        out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, **kwargs)
    logits = out.logits[:, -(length - start) :, :][:, :-1, :]
    logp = token_logprobs(
        logits, batch.input_ids[:, start + 1 :], batch.loss_mask[:, start:], temperature
    )
    if start == 0:
        return logp
    return torch.cat([logp.new_zeros((logp.shape[0], start)), logp], dim=1)
