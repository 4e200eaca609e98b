"""A low-precision copy of a trained model for the rollouts: :class:`RolloutWeights`.

The players train float32 master weights (forwards under bf16 autocast). Sampling from those
weights runs every decode step's matrix products in float32 (or TF32); a bfloat16 copy costs two
bytes per parameter more and samples faster on a GPU. On one H200 at 1.5B (``scripts/gpu_check.sh``,
``docs/performance.md``, "On one GPU") it sampled 1.23x as many tokens a second as the float32
model and 1.96x as many as a LoRA model with its adapters, and a Code-A1 step went from 11.2 to
9.7 s (full fine-tuning) and from 16.1 to 12.1 s (LoRA). Autocast is no way round it: it casts
every weight at every token and samples slower than plain float32.

The copy is frozen (no gradients, eval mode) and refreshed from the trained weights after every
update, in place (:meth:`RolloutWeights.refresh`): a trained parameter is copied and cast; a LoRA
model's copy is the plain model with the adapters merged in (``W + scale * B @ A``, computed in the
master precision), so sampling pays neither the adapters' extra products nor ``peft``'s wrappers.
Parameters that never train (a LoRA model's base weights) are copied once. An FSDP-sharded
model's copy is a whole, unsharded model of the same config on every rank, refreshed with the
parameters all-gathered once per refresh (collective): the rollouts then sample from it without
gathering the float32 parameters, so a rank holds a bf16 replica of each player all along instead
of gathering a float32 one for each generation call.

The rollouts then sample from weights rounded to bfloat16 while the update scores the same tokens
under the float32 weights: the same gap as vLLM rollouts in bf16. The trainer's GRPO ratios use
the trained model's own log-probabilities (never the sampler's), so the gap shows only as
slightly off-policy samples.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

__all__ = ["RolloutWeights", "rollout_dtype"]

_DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def rollout_dtype(name: str) -> torch.dtype:
    """The torch dtype of a ``TrainConfig.rollout_dtype`` name.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    if name not in _DTYPES:
        raise ValueError(f"unknown rollout dtype {name!r}; known: {', '.join(_DTYPES)}")
    return _DTYPES[name]


def _lora_layers(model: Any) -> dict[str, Any]:
    """``name -> LoRA layer`` of a ``peft`` model, named as in its base model (empty otherwise)."""
    get_base = getattr(model, "get_base_model", None)
    if not callable(get_base):
        return {}
    from peft.tuners.lora import LoraLayer

    return {
        name: module for name, module in get_base().named_modules() if isinstance(module, LoraLayer)
    }


def _merged_weight(layer: Any) -> torch.Tensor:
    """A LoRA layer's effective weight: its base weight plus every active adapter's delta."""
    weight = layer.get_base_layer().weight.detach()
    for adapter in layer.active_adapters:
        if adapter in layer.lora_A or adapter in getattr(layer, "lora_embedding_A", {}):
            weight = weight + layer.get_delta_weight(adapter).to(weight.dtype)
    return weight


def _unsharded_twin(model: Any, dtype: torch.dtype) -> Any:
    """A whole model of ``model``'s config on its device, parameters in ``dtype`` (not filled).

    Its buffers keep the dtype the config gives them (rotary frequencies in float32); tied
    weights stay tied.
    """
    from transformers import AutoModelForCausalLM

    device = next(model.parameters()).device
    with torch.device(device):
        twin = AutoModelForCausalLM.from_config(copy.deepcopy(model.config))
    for p in twin.parameters():  # one object per tied pair: cast once, still shared
        p.data = p.data.to(dtype)
    twin.generation_config = copy.deepcopy(model.generation_config)
    twin.eval()
    twin.requires_grad_(False)
    return twin


class RolloutWeights:
    """A frozen copy of ``model`` in ``dtype`` that the rollouts sample from.

    Args:
        model: The trained model (a ``transformers`` causal LM, or a ``peft`` model over one).
        dtype: The copy's parameter dtype (buffers keep theirs: rotary frequencies stay float32).

    Attributes:
        model: The copy (a plain ``transformers`` model, also for a LoRA ``model``).
        source: The trained model it follows.

    With a sharded ``model`` (FSDP2) construction and :meth:`refresh` are collective: every rank
    calls them.

    Example:
        >>> from agents.lm.models import build_tiny_model
        >>> from agents.lm.tokenizer import load_tiny_tokenizer
        >>> live = build_tiny_model("nano", load_tiny_tokenizer())
        >>> weights = RolloutWeights(live, torch.bfloat16)
        >>> next(weights.model.parameters()).dtype
        torch.bfloat16

    """

    def __init__(self, model: Any, dtype: torch.dtype) -> None:
        from agents.training.distributed import is_sharded

        self.source = model
        self.dtype = dtype
        self.sharded = is_sharded(model)
        self._merged: list[tuple[torch.nn.Parameter, Any]] = []
        self._trained: list[tuple[torch.nn.Parameter, torch.nn.Parameter]] = []
        if self.sharded:
            self.model = _unsharded_twin(model, dtype)
            self._named = dict(self.model.named_parameters())
            self.refresh()
            return
        # every parameter is cast on its way into the copy (one copy of the weights in memory,
        # never a float32 duplicate); shared (tied) parameters stay shared
        memo: dict[int, Any] = {
            id(p): torch.nn.Parameter(p.detach().to(dtype, copy=True), requires_grad=False)
            for p in model.parameters()
        }
        twin = copy.deepcopy(model, memo)
        lora = _lora_layers(model)
        if lora:
            twin = twin.merge_and_unload()
        twin.eval()
        twin.requires_grad_(False)
        self.model = twin
        mine = dict(twin.named_parameters())
        self._merged = [(mine[f"{name}.weight"], layer) for name, layer in lora.items()]
        in_lora = {id(p) for layer in lora.values() for p in layer.parameters()}
        base = model.get_base_model() if lora else model
        self._trained = [
            (mine[name], p)
            for name, p in base.named_parameters()
            if p.requires_grad and id(p) not in in_lora
        ]
        self.refresh()

    @torch.no_grad()
    def refresh(self) -> None:
        """Copy the trained weights into the copy (cast to its dtype), in place.

        Copies every parameter that trains (all of them in full fine-tuning) and re-merges every
        LoRA layer; the frozen rest stays as copied at construction. A sharded model's parameters
        are all-gathered for it (collective).
        """
        if self.sharded:
            from agents.training.distributed import full_parameters

            with full_parameters(self.source):
                for name, full in self.source.named_parameters():
                    self._named[name].copy_(full.detach())
            return
        for mine, layer in self._merged:
            mine.copy_(_merged_weight(layer))
        for mine, theirs in self._trained:
            mine.copy_(theirs.detach())

    def __repr__(self) -> str:
        return (
            f"RolloutWeights({self.dtype}, {len(self._trained)} trained tensors, "
            f"{len(self._merged)} merged LoRA layers)"
        )
