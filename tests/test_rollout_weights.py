"""``TrainConfig.rollout_dtype``: the rollouts sample from a low-precision copy that follows training.

The copy must hold exactly the trained weights (cast) after every update, never alias them, keep
tied weights tied, and for a LoRA model compute what the adapted model computes with the adapters
merged in. The trainer must sample from it and refresh it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import torch

from agents.lm.interfaces import SamplingParams
from agents.lm.models import build_tiny_model
from agents.lm.tokenizer import load_tiny_tokenizer
from agents.lm.transformers_lm import TransformersLM
from agents.training import rollout_weights as rw
from agents.training.config import PRESETS, TrainConfig, from_preset
from agents.training.player import apply_lora
from agents.training.rollout_weights import RolloutWeights, rollout_dtype
from agents.training.trainer import Trainer

IDS = torch.tensor([[5, 17, 42, 9, 33, 8]])


def _model(seed: int = 0) -> Any:
    return build_tiny_model("nano", load_tiny_tokenizer(), seed=seed)


def _logits(model: Any) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=IDS).logits.float()


def _perturb(model: Any, scale: float = 0.05, *, trainable_only: bool = False) -> None:
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad or not trainable_only:
                p.add_(torch.randn(p.shape, generator=gen) * scale)


def _equal_cast(weights: RolloutWeights, live: Any) -> list[str]:
    """Names of the copy's parameters that differ from the live ones cast to the copy's dtype."""
    theirs = dict(live.named_parameters())
    return [
        name
        for name, mine in weights.model.named_parameters()
        if not torch.equal(mine, theirs[name].detach().to(mine.dtype))
    ]


def test_the_copy_is_cast_frozen_separate_and_keeps_ties() -> None:
    live = _model()
    weights = RolloutWeights(live, torch.bfloat16)
    copy = weights.model
    assert copy is not live and not copy.training
    assert all(p.dtype == torch.bfloat16 and not p.requires_grad for p in copy.parameters())
    assert all(p.dtype == torch.float32 and p.requires_grad for p in live.parameters())
    assert _equal_cast(weights, live) == []
    # tied input and output embeddings stay one tensor in the copy
    assert copy.get_output_embeddings().weight is copy.get_input_embeddings().weight
    # no storage is shared with the live model
    live_ptrs = {p.data_ptr() for p in live.parameters()}
    assert not live_ptrs & {p.data_ptr() for p in copy.parameters()}


def test_refresh_follows_the_trained_weights_and_nothing_else() -> None:
    live = _model()
    weights = RolloutWeights(live, torch.bfloat16)
    before = {n: p.clone() for n, p in weights.model.named_parameters()}
    _perturb(live)
    assert _equal_cast(weights, live)  # stale until refreshed
    weights.refresh()
    assert _equal_cast(weights, live) == []
    assert any(not torch.equal(before[n], p) for n, p in weights.model.named_parameters())
    # writing to the copy never reaches the trained model
    reference = _logits(live)
    with torch.no_grad():
        for p in weights.model.parameters():
            p.zero_()
    assert torch.equal(_logits(live), reference)


def test_a_float32_copy_computes_what_the_model_computes() -> None:
    live = _model()
    weights = RolloutWeights(live, torch.float32)
    assert torch.equal(_logits(weights.model), _logits(live))


def _lora_model() -> Any:
    pytest.importorskip("peft")
    cfg = TrainConfig(use_lora=True, lora_r=4, lora_dropout=0.0)
    model = apply_lora(_model(), cfg)
    _perturb(model, 0.2, trainable_only=True)  # B starts at zero: give the adapters an effect
    return model


def test_a_lora_copy_is_the_plain_model_with_the_adapters_merged() -> None:
    from peft.tuners.lora import LoraLayer

    live = _lora_model()
    with live.disable_adapter():
        base_logits = _logits(live)
    adapted = _logits(live)
    assert not torch.allclose(adapted, base_logits, atol=1e-4)  # the adapters matter
    weights = RolloutWeights(live, torch.float32)
    assert not any(isinstance(m, LoraLayer) for m in weights.model.modules())
    assert not hasattr(weights.model, "get_base_model")
    torch.testing.assert_close(_logits(weights.model), adapted, atol=1e-4, rtol=1e-4)
    # an update moves only the adapters; the refreshed copy follows it
    _perturb(live, 0.2, trainable_only=True)
    moved = _logits(live)
    assert not torch.allclose(moved, adapted, atol=1e-4)
    weights.refresh()
    torch.testing.assert_close(_logits(weights.model), moved, atol=1e-4, rtol=1e-4)
    assert repr(weights).startswith("RolloutWeights(torch.float32, 0 trained tensors, ")


def test_a_bf16_lora_copy_is_the_exact_merge_rounded_once() -> None:
    # the merge is computed in float32 and rounded to bf16 once: the bf16 copy is the float32
    # copy (which computes what the adapted model computes, above) cast, tensor for tensor
    live = _lora_model()
    exact = RolloutWeights(live, torch.float32).model
    weights = RolloutWeights(live, torch.bfloat16)
    theirs = dict(exact.named_parameters())
    mine = dict(weights.model.named_parameters())
    assert set(mine) == set(theirs)
    for name, p in mine.items():
        assert p.dtype == torch.bfloat16
        assert torch.equal(p, theirs[name].to(torch.bfloat16)), name


def test_a_resumed_run_takes_rollout_dtype_from_the_command_line() -> None:
    from agents.training.run_setup import merge_saved_config

    saved = from_preset("nano", rollout_dtype="float32", lr=1e-4)
    given = from_preset("nano", rollout_dtype="bfloat16", lr=5e-4)
    lines: list[str] = []
    merged = merge_saved_config(saved, given, lines.append)
    assert merged.rollout_dtype == "bfloat16" and merged.lr == 1e-4
    assert lines == ["resume: keeping the saved config; ignoring changed fields: lr"]


def test_dtype_names_and_config_values() -> None:
    assert rollout_dtype("bfloat16") is torch.bfloat16
    assert rollout_dtype("float32") is torch.float32
    with pytest.raises(ValueError, match="unknown rollout dtype 'float16'; known: float32, bf"):
        rollout_dtype("float16")
    with pytest.raises(ValueError, match="TrainConfig.rollout_dtype = 'float16' is invalid"):
        TrainConfig(rollout_dtype="float16")  # type: ignore[arg-type]
    assert TrainConfig().rollout_dtype == "float32"
    for name in PRESETS:
        cfg = from_preset(name)
        expected = "float32" if cfg.device == "cpu" else "bfloat16"
        assert cfg.rollout_dtype == expected, name
    assert rw.__all__ == ["RolloutWeights", "rollout_dtype"]


def test_sampling_from_the_copy_is_seeded_and_well_formed() -> None:
    tok = load_tiny_tokenizer()
    weights = RolloutWeights(_model(), torch.bfloat16)
    lm = TransformersLM(weights.model, tok)
    params = SamplingParams(max_new_tokens=6, seed=3)
    first = lm.generate(["def f(x):", "assert f("], params)
    again = lm.generate(["def f(x):", "assert f("], params)
    assert [g.completion_ids for g in first] == [g.completion_ids for g in again]
    assert all(len(g.completion_ids) == len(g.logprobs) <= 6 for g in first)
    assert all(lp <= 0.0 for g in first for lp in g.logprobs)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["code-a1", "self-play"])
def test_the_trainer_samples_from_copies_it_refreshes(tmp_path: Path, mode: str) -> None:
    cfg = from_preset(
        "nano",
        mode=mode,
        rollout_dtype="bfloat16",
        steps=2,
        sft_steps=2,
        sft_lr=1e-2,
        output_dir=str(tmp_path),
    )
    trainer = Trainer(cfg, log=lambda _m: None)
    try:
        roles = trainer.roles
        players = {id(p): p for p in roles.players.values()}
        assert len(roles.rollout_weights) == len(players) == (2 if mode == "code-a1" else 1)
        for role, player in roles.players.items():
            sampler = roles.lms[role].model
            assert sampler is not player.model
            assert any(
                w.model is sampler and w.source is player.model for w in roles.rollout_weights
            )
        start = [dict(w.model.named_parameters()) for w in roles.rollout_weights]
        start = [{n: p.clone() for n, p in params.items()} for params in start]
        updates: list[str] = []
        for player in players.values():
            # every RL update also moves the weights by a known amount (the nano runs' rewards
            # are all 0, so their own updates may not move them)
            def moved_update(samples: Any, update: Any = player.update, model: Any = player.model):
                out = update(samples)
                _perturb(model, 0.01)
                updates.append(type(model).__name__)
                return out

            player.update = moved_update  # type: ignore[method-assign]
        trainer.train()
        assert len(updates) == 2 * len(players)
        for weights, before in zip(roles.rollout_weights, start, strict=True):
            assert _equal_cast(weights, weights.source) == []  # refreshed after the last update
            assert all(not torch.equal(p, before[n]) for n, p in weights.model.named_parameters())
    finally:
        trainer.close()


def test_float32_rollouts_sample_from_the_trained_model(tmp_path: Path) -> None:
    cfg = from_preset("nano", steps=0, output_dir=str(tmp_path))
    trainer = Trainer(cfg, log=lambda _m: None)
    try:
        assert trainer.roles.rollout_weights == []
        assert trainer.roles.lms["coder"].model is trainer.coder.model
    finally:
        trainer.close()


def test_sampling_on_cuda_keeps_cudnn_attention_out_and_restores_it() -> None:
    from agents.lm.transformers_lm import decode_attention

    cuda = torch.backends.cuda
    before = (cuda.cudnn_sdp_enabled(), cuda.flash_sdp_enabled(), cuda.mem_efficient_sdp_enabled())
    with decode_attention("cuda"):
        assert not cuda.cudnn_sdp_enabled()
        assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
    assert (
        cuda.cudnn_sdp_enabled(),
        cuda.flash_sdp_enabled(),
        cuda.mem_efficient_sdp_enabled(),
    ) == before
    with decode_attention(torch.device("cpu")):  # nothing changes off CUDA
        assert cuda.cudnn_sdp_enabled() == before[0]


class _FakeEngine:
    """Records what a vLLM engine would be built with and the weights it would receive."""

    def __init__(self, spec: str, **options: Any) -> None:
        self.spec, self.options, self.loads = spec, options, 0

    def load_weights(self, named: Any) -> None:
        self.loads += 1
        assert all(isinstance(t, torch.Tensor) for _, t in named)


def test_engines_and_copies_are_made_once_per_player(monkeypatch: pytest.MonkeyPatch) -> None:
    from agents.lm import vllm
    from agents.training.player import build_player
    from agents.training.roles import RolePolicies

    monkeypatch.setattr(vllm, "VLLMLM", _FakeEngine)
    monkeypatch.setattr(vllm, "select_generation_backend", lambda choice: "vllm")
    cfg = from_preset("nano", rollout_dtype="bfloat16")
    cpu = torch.device("cpu")
    coder = build_player("coder", "builtin:nano", cfg, seed=0, lr=1e-4, device=cpu)
    tester = build_player("tester", "builtin:nano", cfg, seed=1, lr=1e-4, device=cpu)

    two = RolePolicies(coder, tester, cfg, specs={"coder": "dir/a", "tester": "dir/b"})
    assert [two.lms[r].spec for r in ("coder", "tester")] == ["dir/a", "dir/b"]
    assert two.lms["coder"].options["gpu_memory_utilization"] == pytest.approx(0.2)
    assert two.rollout_weights == []  # vLLM holds its own weights: no bf16 copy
    two.sync()
    assert two.lms["coder"].loads == two.lms["tester"].loads == 1

    shared = RolePolicies(coder, coder, cfg, specs={"coder": "dir/a", "tester": "dir/a"})
    assert shared.lms["coder"] is shared.lms["tester"]
    assert shared.lms["coder"].options["gpu_memory_utilization"] == pytest.approx(0.4)
    shared.sync()
    assert shared.lms["coder"].loads == 1
    with pytest.raises(ValueError, match="model directory or hub name for the tester"):
        RolePolicies(coder, tester, cfg, specs={"coder": "dir/a", "tester": "builtin:nano"})

    monkeypatch.setattr(vllm, "select_generation_backend", lambda choice: "transformers")
    copies = RolePolicies(coder, coder, cfg)
    assert len(copies.rollout_weights) == 1 and copies.lms["coder"] is copies.lms["tester"]
    # sampling from a copy gathers nothing; from the trained model, its full parameters
    assert isinstance(copies.sampling_parameters(coder), contextlib.nullcontext)
    plain = RolePolicies(coder, tester, from_preset("nano"))
    assert plain.lms["coder"].model is coder.model
    assert not isinstance(plain.sampling_parameters(coder), contextlib.nullcontext)
