"""One trained player: its model, optimizer, schedule and frozen reference, and its GRPO update.

Code-A1 trains two players (the coder and the tester), each a :class:`Player` with its own model
and optimizer; the Self-Play baseline uses one player for both roles; the Golden baseline only
the coder. :meth:`Player.update` is the paper's update: PPO-clip with asymmetric and dual
clipping and token-mean aggregation plus ``kl_coef`` x low-variance KL to the frozen reference,
gradient accumulation over micro-batches, gradient clipping, one scheduler step per RL step.
``loss_weighting`` picks how micro-batches' losses combine: ``global`` (the exact aggregate of
the global mini-batch) or ``authors`` (verl's: each micro-batch's own aggregate times its share of
the rank's samples, averaged over ranks); ``micro_batch_max_tokens`` forms micro-batches by a
token budget (verl's ``use_dynamic_bsz``) instead of ``micro_batch_size``, each run in forward
passes whose padded size stays within the budget (``padded_passes``; the weighting is the
micro-batch's). As in
verl (``dp_actor.py``), a mini-batch whose gradient norm is not finite takes no optimizer step (its
gradients are dropped, counted in ``skipped_updates`` and warned about); the schedule still steps.
"""

from __future__ import annotations

import copy
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import torch
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("the trainer needs PyTorch: pip install 'codea1[train]'") from exc

from agents.training.checkpoint import (
    check_weights_fit,
    load_checkpoint_file,
    load_model_weights,
    load_state_into,
)
from agents.training.config import TrainConfig
from agents.training.distributed import (
    SINGLE,
    Distributed,
    full_model_state,
    full_optimizer_state,
    full_parameters,
    is_sharded,
    load_full_model_state,
    load_full_optimizer_state,
    shard_model,
)
from agents.training.grpo import grpo_loss
from agents.training.rollout import (
    Sample,
    budget_groups,
    effective_length,
    micro_batches,
    pack,
    padded_passes,
    sequence_logprobs,
)

__all__ = [
    "Player",
    "apply_lora",
    "build_player",
    "enable_tf32",
    "load_model_spec",
    "lr_lambda",
    "resolve_device",
]

BUILTIN_PREFIX = "builtin:"


def enable_tf32(device: torch.device) -> bool:
    """On CUDA, let float32 matrix products use TF32 tensor cores, process-wide.

    Uses torch's ``fp32_precision`` setting where it exists (torch 2.9 and later refuse a mix of
    it and the older ``allow_tf32`` flag), else the older flag.

    Returns:
        Whether it was set: ``False`` (and torch untouched) for any other device.
    """
    if device.type != "cuda":
        return False
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        matmul.fp32_precision = "tf32"
    else:  # pragma: no cover - torch < 2.9
        matmul.allow_tf32 = True
    return True


def resolve_device(spec: str) -> torch.device:
    """``auto`` -> CUDA when available else CPU; anything else as given."""
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(spec)


def load_model_spec(spec: str, *, seed: int, device: torch.device) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` for a model spec.

    ``builtin:nano|tiny|small`` builds a Qwen2 model from config with the package tokenizer
    (seeded by ``seed``: the same spec and seed give the same weights); anything else is a local
    directory or hub name loaded with ``agents.lm.models.load_model`` (float32 master weights;
    bf16 autocast is applied at run time).
    """
    from agents.lm.models import build_tiny_model, load_model, load_tokenizer
    from agents.lm.tokenizer import load_tiny_tokenizer

    if spec.startswith(BUILTIN_PREFIX):
        size = spec[len(BUILTIN_PREFIX) :]
        tokenizer = load_tiny_tokenizer()
        model: Any = build_tiny_model(size, tokenizer, seed=seed)  # type: ignore[arg-type]
        return model.to(device), tokenizer
    loaded = load_model(spec, dtype=torch.float32, device=str(device))
    return loaded, load_tokenizer(spec)


def lr_lambda(
    step: int, *, warmup: int, total: int, schedule: str, from_zero: bool = False
) -> float:
    """Learning-rate multiplier: linear warm-up over ``warmup`` steps, then the schedule.

    The warm-up is ``step / warmup`` with ``from_zero`` (verl's
    ``get_cosine_schedule_with_warmup`` and ``get_constant_schedule_with_warmup``, which the
    authors' runs use: the first step at lr 0, the full lr at step ``warmup``), else
    ``(step + 1) / warmup`` (the full lr at step ``warmup - 1``; the supervised warm start's).
    After it, ``cosine`` is ``0.5 * (1 + cos(pi * progress))`` with ``progress = (step - warmup)
    / (total - warmup)`` (verl's with ``min_lr_ratio = 0`` and ``num_cycles = 0.5``, the
    authors' settings), ``linear`` is ``1 - progress`` and ``constant`` is 1. Past ``total``
    ``progress`` stays at 1 (verl's cosine would rise again there; a run never steps past
    ``total``), and with ``total <= warmup`` the multiplier after the warm-up is 1.

    Args:
        step: The scheduler's step (0 for the first update).
        warmup: Warm-up steps (0: none).
        total: The schedule's length (the run's steps).
        schedule: ``"cosine"``, ``"linear"`` or ``"constant"``.
        from_zero: Start the warm-up at 0 (verl) instead of at ``1 / warmup``.

    Returns:
        The multiplier of the base learning rate.
    """
    if warmup > 0 and step < warmup:
        return (step if from_zero else step + 1) / warmup
    if schedule == "constant" or total <= warmup:
        return 1.0
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    if schedule == "linear":
        return max(0.0, 1.0 - progress)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


@dataclass
class Player:
    """A trained model with its optimizer, LR schedule and frozen reference.

    Attributes:
        name: ``"coder"``, ``"tester"`` or ``"shared"`` (self-play).
        model: The trained causal LM (a peft model when LoRA is on).
        tokenizer: Its tokenizer.
        optimizer: AdamW over the trainable parameters.
        scheduler: ``LambdaLR`` stepped once per RL step.
        reference: Frozen copy of the starting policy (``None`` without KL, or with LoRA where
            the reference is the model with its adapters disabled).
        config: The run's config.
        device: Where the model lives.
        lr: This player's base learning rate.
        stats: Scratch stats of the last update.
        dist: The data-parallel group (:data:`agents.training.distributed.SINGLE` for one process).
            With several ranks each rank updates on its own samples, the loss is normalised by the
            global token (or sequence) count and the gradients are summed over ranks, so every
            replica takes the single-process step of the global batch (``loss_weighting =
            "global"``; under ``"authors"`` each rank's loss is normalised by its own sample
            count and the gradients are averaged over ranks, as verl does). With
            ``distributed_strategy="fsdp"`` (:meth:`shard_parameters`) the model and optimizer
            are sharded, FSDP reduces the gradients and every rank runs the same number of
            forwards (see :mod:`agents.training.distributed`).

    """

    name: str
    model: Any
    tokenizer: Any
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    reference: Any
    config: TrainConfig
    device: torch.device
    lr: float
    stats: dict[str, float] = field(default_factory=dict)
    dist: Distributed = SINGLE

    # ------------------------------------------------------------------------------------------
    @property
    def pad_id(self) -> int:
        """Padding token id."""
        pad = self.tokenizer.pad_token_id
        return int(pad if pad is not None else self.tokenizer.eos_token_id)

    def reset_optimizer(self) -> None:
        """Fresh AdamW and schedule (after the supervised warm start)."""
        self.optimizer = _make_optimizer(self.model, self.config, self.lr)
        self.scheduler = _make_scheduler(self.optimizer, self.config)

    def shard_parameters(self) -> None:
        """Shard the model with FSDP2 when the run is data-parallel with ``fsdp`` (else no-op).

        Collective (every rank calls it). The optimizer and schedule are rebuilt on the shards;
        the frozen reference, already snapshotted, stays a replicated unsharded copy.

        Raises:
            ValueError: ``fsdp`` with LoRA (not supported: use ``ddp``).

        """
        if not self.dist.enabled or self.config.distributed_strategy != "fsdp":
            return
        if self.config.use_lora:
            raise ValueError("distributed_strategy='fsdp' does not support LoRA; use 'ddp'")
        shard_model(self.model)
        self.reset_optimizer()

    def full_parameters(self) -> Any:
        """Context manager: the model's full parameters for generation (see ``distributed``)."""
        return full_parameters(self.model)

    def snapshot_reference(self) -> None:
        """Make the current weights the frozen KL reference (after the warm start).

        A sharded model's reference is refreshed from its full weights (collective).
        """
        if self.config.kl_coef == 0 or self.config.use_lora:
            self.reference = None
            return
        if is_sharded(self.model) and self.reference is not None:
            self.reference.load_state_dict(full_model_state(self.model), strict=False)
            return
        self.reference = _frozen_copy(self.model)

    def freeze_reference(self, path: Path, *, write: bool) -> None:
        """Snapshot the KL reference, start a fresh optimizer, and save the reference to ``path``.

        Args:
            path: Where the reference's weights go (written atomically, when there is one).
            write: Whether this process writes the file (rank 0); the snapshot is collective.
        """
        self.snapshot_reference()
        self.reset_optimizer()
        if self.reference is not None and write:
            tmp = path.with_suffix(".tmp")
            self.save_reference(tmp)
            os.replace(tmp, path)

    def _rounds(self, count: int) -> int:
        """Forwards every rank runs for ``count`` local ones (the most over ranks under FSDP)."""
        return self.dist.max(count) if is_sharded(self.model) else count

    def _idle_pass(self, *, backward: bool) -> None:
        """A zero-weight forward (and backward) that only joins FSDP's collectives."""
        pad = self.pad_id
        batch = pack([Sample([pad], [pad], 0.0, "coder")], pad).to(self.device)
        logp = sequence_logprobs(self.model, batch, bf16=self.config.bf16)
        if backward:
            (logp.sum() * 0.0).backward()

    def _chunks(self, samples: Sequence[Sample]) -> list[list[Sample]]:
        """This rank's micro-batches of ``samples``: ``micro_batch_size`` chunks or a token budget.

        With ``micro_batch_max_tokens`` and several ranks, each role's micro-batch count is the
        largest over ranks (capped by this rank's samples of the role), as verl's
        ``rearrange_micro_batches`` syncs it; collective then (every rank calls it, for the same
        mini-batch).
        """
        cfg = self.config
        budget = cfg.micro_batch_max_tokens
        if budget is None:
            return list(micro_batches(samples, cfg.micro_batch_size))
        groups: dict[str, int] | None = None
        if self.dist.enabled:
            groups = {}
            for role in _ROLES:  # the same collectives on every rank, whatever roles it holds
                lengths = [effective_length(s) for s in samples if s.role == role]
                groups[role] = self.dist.max(budget_groups(lengths, budget))
        return list(micro_batches(samples, cfg.micro_batch_size, max_tokens=budget, groups=groups))

    def _passes(self, micros: Sequence[list[Sample]]) -> list[tuple[list[Sample], list[Sample]]]:
        """The forward passes of ``micros``, each with the micro-batch it belongs to.

        Under a token budget each micro-batch runs in :func:`padded_passes` (the padded size of
        a pass within the budget); otherwise a micro-batch is one pass.
        """
        budget = self.config.micro_batch_max_tokens
        if budget is None:
            return [(micro, micro) for micro in micros]
        return [(part, micro) for micro in micros for part in padded_passes(micro, budget)]

    # ------------------------------------------------------------------------------------------
    @torch.no_grad()
    def _fill_logprobs(self, samples: Sequence[Sample], *, reference: bool) -> None:
        cfg = self.config
        chunks = [part for part, _micro in self._passes(self._chunks(samples))]
        if not reference or cfg.use_lora:  # forwards of the (maybe sharded) trained model
            for _ in range(self._rounds(len(chunks)) - len(chunks)):
                self._idle_pass(backward=False)
        for chunk in chunks:
            batch = pack(chunk, self.pad_id).to(self.device)
            if reference:
                if cfg.use_lora:
                    with self.model.disable_adapter():
                        logp = sequence_logprobs(
                            self.model,
                            batch,
                            temperature=cfg.rollout_temperature(chunk[0].role),
                            bf16=cfg.bf16,
                        )
                else:
                    logp = sequence_logprobs(
                        self.reference,
                        batch,
                        temperature=cfg.rollout_temperature(chunk[0].role),
                        bf16=cfg.bf16,
                    )
            else:
                logp = sequence_logprobs(
                    self.model,
                    batch,
                    temperature=cfg.rollout_temperature(chunk[0].role),
                    bf16=cfg.bf16,
                )
            for row, sample in enumerate(chunk):
                p = len(sample.prompt_ids)
                values = logp[row, p - 1 : p - 1 + sample.n_tokens].float().cpu().tolist()
                if reference:
                    sample.ref_logprobs = values
                else:
                    sample.old_logprobs = values

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        """One GRPO update on ``samples`` (all roles this player plays), then a scheduler step.

        Samples with no completion token are skipped. A mini-batch whose gradient norm is NaN or
        infinite takes no optimizer step: its gradients are dropped, a :class:`RuntimeWarning`
        says so and ``skipped_updates`` counts it (verl's ``dp_actor``); the scheduler steps
        either way, as verl's does.

        Each micro-batch's loss is weighted by ``loss_weighting``: ``global``, its share of the
        global mini-batch's completion tokens (``token-mean``) or sequences (``seq-mean-*``),
        gradients summed over ranks: the exact aggregate of the global mini-batch, whatever the
        micro-batching; ``authors`` (verl's ``dp_actor``), its share of this rank's samples of the
        mini-batch, gradients averaged over the ranks holding samples of it.

        Returns:
            Loss statistics averaged over the mini-batches (``pg_loss``, ``kl``,
            ``clip_fraction``, ``clip_fraction_dual``, ``ratio_mean``, ``approx_kl``,
            ``grad_norm``, not finite when one mini-batch's was), the number of skipped
            optimizer steps (``skipped_updates``), ``lr`` and ``tokens``. Within a mini-batch
            the micro-batches' statistics are weighted as their losses are: under ``global`` the
            ``pg_loss`` and ``kl`` are the global mini-batch's aggregates; under ``authors`` they
            are the value of the authors' objective (micro-batch aggregates weighted by sample
            share, averaged over ranks), and the fractions and ratios likewise.
        """
        cfg = self.config
        samples = [s for s in samples if s.n_tokens > 0]
        stats: dict[str, float] = {"lr": float(self.scheduler.get_last_lr()[0])}
        if not self.dist.sum([len(samples)])[0]:
            # Nothing to learn from (e.g. every group collapsed): keep the schedule in step with
            # the run's steps without an optimizer step.
            self._step_schedule()
            return stats
        use_ref = cfg.kl_coef > 0 and (cfg.use_lora or self.reference is not None)
        self.model.eval()
        if use_ref:
            self._fill_logprobs(samples, reference=True)
        if cfg.ppo_epochs * cfg.mini_batches > 1:
            self._fill_logprobs(samples, reference=False)
        self.model.train()
        sums: dict[str, float] = {}
        counts = skipped = 0
        sharded = is_sharded(self.model)
        authors = cfg.loss_weighting == "authors"
        for _epoch in range(cfg.ppo_epochs):
            for mini in self._mini_batches(samples):
                # token and sequence counts of the global mini-batch (all ranks' parts), and how
                # many ranks hold a part of it
                total_tokens, total_seqs, ranks = self.dist.sum(
                    [sum(s.n_tokens for s in mini), len(mini), 1 if mini else 0]
                )
                if total_seqs == 0:
                    continue
                if authors:
                    # verl: gradients averaged over ranks (FSDP averages them itself; the
                    # summed ddp gradients are divided here), over the ranks that hold samples
                    scale = (self.dist.world_size if sharded else 1) / ranks
                else:
                    # FSDP averages the gradients over ranks: undo it to sum them as ddp does
                    scale = self.dist.world_size if sharded else 1
                part_sums: dict[str, float] = dict.fromkeys(_LOSS_STATS, 0.0)
                self.optimizer.zero_grad(set_to_none=True)
                passes = self._passes(self._chunks(mini))
                for _ in range(self._rounds(len(passes)) - len(passes)):
                    self._idle_pass(backward=True)
                for chunk, micro in passes:
                    batch = pack(chunk, self.pad_id).to(self.device)
                    logp = sequence_logprobs(
                        self.model,
                        batch,
                        temperature=cfg.rollout_temperature(chunk[0].role),
                        bf16=cfg.bf16,
                    )
                    old = batch.old_logprobs if batch.has_old else logp.detach()
                    ref = batch.ref_logprobs if (use_ref and batch.has_ref) else None
                    loss, part = grpo_loss(
                        logp,
                        old,
                        batch.advantages,
                        batch.loss_mask,
                        logp_ref=ref,
                        kl_coef=cfg.kl_coef,
                        clip_low=cfg.clip_low,
                        clip_high=cfg.clip_high,
                        aggregation=cfg.loss_aggregation,
                        clip_ratio_c=cfg.clip_ratio_c,
                    )
                    if authors:  # the micro-batch's own aggregate x its share of the rank's
                        # samples; a pass of it counts for its share of the micro-batch
                        weight = len(micro) / len(mini)
                        if cfg.loss_aggregation == "token-mean":
                            weight *= sum(s.n_tokens for s in chunk) / sum(
                                s.n_tokens for s in micro
                            )
                        else:
                            weight *= len(chunk) / len(micro)
                    elif cfg.loss_aggregation == "token-mean":
                        weight = sum(s.n_tokens for s in chunk) / total_tokens
                    else:
                        weight = len(chunk) / total_seqs
                    (loss * (weight * scale)).backward()
                    for key in _LOSS_STATS:
                        part_sums[key] += part[key] * weight
                reduced = self.dist.sum(list(part_sums.values()))
                for key, value in zip(_LOSS_STATS, reduced):
                    sums[key] = sums.get(key, 0.0) + (value / ranks if authors else value)
                params = [p for p in self.model.parameters() if p.requires_grad]
                if not sharded:  # FSDP has reduce-scattered them in backward
                    self.dist.sum_gradients(params)
                if cfg.max_grad_norm > 0:
                    norm = torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
                else:
                    norm = torch.nn.utils.clip_grad_norm_(params, float("inf"))
                full_norm = getattr(norm, "full_tensor", None)  # a DTensor under FSDP
                if callable(full_norm):
                    norm = full_norm()
                grad_norm = float(norm)
                sums["grad_norm"] = sums.get("grad_norm", 0.0) + grad_norm
                if math.isfinite(grad_norm):
                    self.optimizer.step()
                else:  # verl: skip the step, drop the gradients (the same norm on every rank)
                    self.optimizer.zero_grad(set_to_none=True)
                    skipped += 1
                    warnings.warn(
                        f"{self.name}: the gradient norm of update "
                        f"{self.scheduler.last_epoch + 1} is {grad_norm}: optimizer step skipped",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                counts += 1
        self.optimizer.zero_grad(set_to_none=True)
        self._step_schedule()
        self.model.eval()
        stats.update({k: v / max(1, counts) for k, v in sums.items()})
        stats["skipped_updates"] = float(skipped)
        stats["tokens"] = self.dist.sum([sum(s.n_tokens for s in samples)])[0]
        return stats

    def _step_schedule(self) -> None:
        """One scheduler step, also after an update that took no optimizer step.

        Torch warns when the scheduler steps before the optimizer ever has (no samples, or a
        non-finite gradient norm on the first update): harmless here, so silenced.
        """
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step")
            self.scheduler.step()

    def _mini_batches(self, samples: Sequence[Sample]) -> list[list[Sample]]:
        """This rank's parts of the mini-batches.

        Data-parallel, every rank gets exactly ``mini_batches`` parts (some maybe empty), so
        all ranks take the same optimizer steps.
        """
        if not self.dist.enabled:
            return _split(samples, self.config.mini_batches)
        parts = self.config.mini_batches
        size = math.ceil(len(samples) / parts) if samples else 0
        return [list(samples[i * size : (i + 1) * size]) for i in range(parts)]

    # ------------------------------------------------------------------------------------------
    def trainable_state(self) -> dict[str, torch.Tensor]:
        """The trainable parameters (all weights, or only the LoRA adapters), on CPU.

        Full tensors also for a sharded model (then collective: every rank calls it).
        """
        if is_sharded(self.model):
            return full_model_state(self.model)
        return {
            name: p.detach().cpu().clone()
            for name, p in self.model.named_parameters()
            if p.requires_grad
        }

    def checkpoint_state(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Full weights and optimizer state of a sharded model (``None`` when not sharded).

        Collective: every rank calls it before rank 0 writes the checkpoint with :meth:`save`;
        the result is in the single-process layout (rank 0 holds it, the others empty dicts).
        """
        if not is_sharded(self.model):
            return None
        weights = full_model_state(self.model, rank0_only=True)
        return weights, full_optimizer_state(self.model, self.optimizer)

    def save(
        self, directory: Path, state: tuple[dict[str, Any], dict[str, Any]] | None = None
    ) -> None:
        """Write weights, optimizer and scheduler states to ``directory/{name}_*.pt``.

        ``state`` is :meth:`checkpoint_state`'s result for a sharded model (required then).
        """
        if state is None:
            state = self.trainable_state(), self.optimizer.state_dict()
        torch.save(state[0], directory / f"{self.name}_model.pt")
        torch.save(state[1], directory / f"{self.name}_optimizer.pt")
        torch.save(self.scheduler.state_dict(), directory / f"{self.name}_scheduler.pt")

    def load(self, directory: Path) -> None:
        """Restore what :meth:`save` wrote.

        Raises:
            FileNotFoundError: a file of the checkpoint is missing.
            CheckpointError: a file of the checkpoint is damaged (it names the file), or
                the weights do not fit the model (a different model spec, a file
                swapped or damaged), or a state file is not the optimizer's or scheduler's.

        """
        model_file = directory / f"{self.name}_model.pt"
        optimizer_file = directory / f"{self.name}_optimizer.pt"
        if is_sharded(self.model):  # every rank loads the full state and keeps its shard
            weights = load_checkpoint_file(model_file, map_location=self.device)
            check_weights_fit(self.model, weights, model_file, self.name)
            optimizer = load_checkpoint_file(optimizer_file, map_location=self.device)
            load_full_model_state(self.model, weights)
            load_full_optimizer_state(self.model, self.optimizer, optimizer)
        else:
            load_model_weights(self.model, model_file, self.name, map_location=self.device)
            load_state_into(
                self.optimizer, optimizer_file, f"{self.name} optimizer", map_location=self.device
            )
        load_state_into(
            self.scheduler, directory / f"{self.name}_scheduler.pt", f"{self.name} scheduler"
        )

    def save_reference(self, path: Path) -> None:
        """Write the frozen reference's weights (no-op without a separate reference)."""
        if self.reference is not None:
            state = {k: v.detach().cpu() for k, v in self.reference.state_dict().items()}
            torch.save(state, path)

    def load_reference(self, path: Path) -> None:
        """Load reference weights written by :meth:`save_reference` (when the file exists)."""
        if self.reference is not None and path.is_file():
            load_model_weights(
                self.reference, path, f"{self.name} reference", map_location=self.device
            )


_ROLES = ("coder", "tester")
"""The roles whose micro-batch counts data-parallel ranks sync under a token budget."""

_LOSS_STATS = ("pg_loss", "kl", "clip_fraction", "clip_fraction_dual", "ratio_mean", "approx_kl")


def _split(samples: Sequence[Sample], parts: int) -> list[list[Sample]]:
    parts = max(1, min(parts, len(samples)))
    size = math.ceil(len(samples) / parts)
    return [list(samples[i : i + size]) for i in range(0, len(samples), size)]


def _frozen_copy(model: Any) -> Any:
    ref = copy.deepcopy(model)
    ref.eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref


def _make_optimizer(model: Any, cfg: TrainConfig, lr: float) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(
        params, lr=lr, betas=cfg.adam_betas, weight_decay=cfg.weight_decay, eps=1e-8
    )


def _make_scheduler(
    optimizer: torch.optim.Optimizer, cfg: TrainConfig
) -> torch.optim.lr_scheduler.LambdaLR:
    warmup, total, schedule = cfg.warmup_steps, cfg.steps, cfg.lr_schedule
    from_zero = cfg.warmup_from_zero

    def factor(step: int) -> float:
        return lr_lambda(step, warmup=warmup, total=total, schedule=schedule, from_zero=from_zero)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def apply_lora(model: Any, cfg: TrainConfig) -> Any:
    """``model`` wrapped with the run's LoRA adapters (one setup for training and reloading).

    The adapters follow ``lora_r``, ``lora_alpha``, ``lora_dropout`` and ``lora_target_modules``.

    Raises:
        ImportError: peft is not installed.
    """
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as exc:
        raise ImportError("--use-lora needs peft: pip install 'codea1[train]'") from exc
    lora = LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=list(cfg.lora_target_modules),
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora)


def build_player(
    name: str, spec: str, cfg: TrainConfig, *, seed: int, lr: float, device: torch.device
) -> Player:
    """Load the model for ``spec``, wrap it with LoRA when asked, and build its optimizer."""
    model, tokenizer = load_model_spec(spec, seed=seed, device=device)
    if cfg.use_lora:
        model = apply_lora(model, cfg)
    if cfg.gradient_checkpointing:
        enable = getattr(model, "activation_checkpointing_enable", None)  # transformers >= 5
        (enable or model.gradient_checkpointing_enable)()
        if cfg.use_lora:
            model.enable_input_require_grads()
    model.eval()
    optimizer = _make_optimizer(model, cfg, lr)
    player = Player(
        name=name,
        model=model,
        tokenizer=tokenizer,
        optimizer=optimizer,
        scheduler=_make_scheduler(optimizer, cfg),
        reference=None,
        config=cfg,
        device=device,
        lr=lr,
    )
    player.snapshot_reference()
    return player
