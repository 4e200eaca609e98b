"""``TrainConfig.tf32``: the GPU presets turn it on, and it changes torch only for CUDA."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import torch

from agents.training.config import PRESETS, TrainConfig, from_preset
from agents.training.player import enable_tf32


@pytest.fixture
def matmul_precision() -> Iterator[str]:
    """torch's float32 matmul precision before the test; restored after it."""
    matmul = torch.backends.cuda.matmul
    before = str(matmul.fp32_precision)
    try:
        yield before
    finally:
        matmul.fp32_precision = before


def test_the_gpu_presets_turn_tf32_on_and_the_cpu_ones_leave_it_off() -> None:
    assert TrainConfig().tf32 is False  # torch's own default stays unless asked
    for name in PRESETS:
        cfg = from_preset(name)
        assert cfg.tf32 is (cfg.device != "cpu"), name
    assert from_preset("1.5b").tf32 and not from_preset("tiny").tf32


def test_tf32_is_set_for_a_cuda_device(matmul_precision: str) -> None:
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    assert enable_tf32(torch.device("cuda", 0)) is True
    assert torch.backends.cuda.matmul.fp32_precision == "tf32"


def test_a_cpu_run_leaves_torchs_setting_alone(matmul_precision: str) -> None:
    torch.backends.cuda.matmul.fp32_precision = "ieee"
    assert enable_tf32(torch.device("cpu")) is False
    assert torch.backends.cuda.matmul.fp32_precision == "ieee"
