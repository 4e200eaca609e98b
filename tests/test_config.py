"""TrainConfig, presets, CLI flags, checkpoint atomicity and the metrics log."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from agents.commands.train_cli import add_arguments, build_config
from agents.training.checkpoint import (
    capture_rng_state,
    latest_checkpoint,
    list_checkpoints,
    restore_rng_state,
    write_checkpoint,
)
from agents.training.config import PRESETS, TrainConfig, field_docs, from_preset
from agents.training.metrics import MetricsLogger, read_metrics


def parse(argv: list[str]) -> TrainConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return build_config(parser.parse_args(argv))


def test_defaults_are_the_papers_gpu_hyperparameters() -> None:
    cfg = TrainConfig()
    assert cfg.mode == "code-a1"
    assert (cfg.clip_low, cfg.clip_high, cfg.loss_aggregation) == (0.20, 0.28, "token-mean")
    assert (cfg.kl_coef, cfg.lr, cfg.lr_schedule, cfg.warmup_steps) == (0.001, 1e-6, "cosine", 10)
    assert (cfg.weight_decay, cfg.max_grad_norm) == (0.1, 1.0)
    assert (cfg.n_codes, cfg.n_suites, cfg.temperature, cfg.tester_group) == (8, 8, 1.0, "update_n")
    assert (cfg.alpha, cfg.k) == (0.5, 8)


def test_every_field_is_documented() -> None:
    docs = field_docs()
    names = [f.name for f in dataclasses.fields(TrainConfig)]
    assert [n for n in names if not docs.get(n)] == []


def test_presets_build_and_validate() -> None:
    for name in PRESETS:
        cfg = from_preset(name)
        assert isinstance(cfg, TrainConfig)
    assert from_preset("tiny").coder_model == "builtin:nano"
    assert from_preset("7b").coder_model == "Qwen/Qwen2.5-Coder-7B-Instruct"
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        from_preset("huge")


@pytest.mark.parametrize(
    ("field", "value"),
    [("mode", "solo"), ("n_codes", 0), ("alpha", 1.5), ("top_p", 0.0), ("clip_low", 1.0)],
)
def test_bad_values_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"TrainConfig.{field}"):
        TrainConfig(**{field: value})  # type: ignore[arg-type]


def test_json_round_trip_and_errors(tmp_path: Path) -> None:
    cfg = from_preset("tiny", lr=3e-5, adam_betas=(0.8, 0.95))
    cfg.save(tmp_path / "c.json")
    again = TrainConfig.load(tmp_path / "c.json")
    assert again == cfg and again.diff(cfg) == {}
    (tmp_path / "bad.json").write_text('{"lr": 1e-3, "warp_speed": 9}')
    with pytest.raises(ValueError, match=r"bad.json: unknown TrainConfig field\(s\): warp_speed"):
        TrainConfig.load(tmp_path / "bad.json")
    (tmp_path / "broken.json").write_text("{nope")
    with pytest.raises(ValueError, match="broken.json: not valid JSON"):
        TrainConfig.load(tmp_path / "broken.json")


def test_cli_flags_override_the_preset() -> None:
    cfg = parse(
        [
            "--preset",
            "tiny",
            "--lr",
            "1e-5",
            "--mode",
            "golden",
            "--steps",
            "50",
            "--output-dir",
            "runs/x",
            "--coder-model",
            "/m/c",
            "--no-bf16",
            "--tester-lr",
            "none",
        ]
    )
    assert (cfg.lr, cfg.mode, cfg.steps, cfg.output_dir, cfg.coder_model) == (
        1e-5,
        "golden",
        50,
        "runs/x",
        "/m/c",
    )
    assert cfg.bf16 is False and cfg.tester_lr is None
    assert cfg.n_codes == PRESETS["tiny"]["n_codes"]  # untouched preset value
    assert parse([]).lr == 1e-6  # no preset: the paper's defaults


def test_cli_config_file_then_flags(tmp_path: Path) -> None:
    from_preset("nano", steps=7).save(tmp_path / "c.json")
    cfg = parse(["--config", str(tmp_path / "c.json"), "--seed", "3"])
    assert (cfg.steps, cfg.seed, cfg.coder_model) == (7, 3, "builtin:nano")
    with pytest.raises(ValueError, match="either --config or --preset"):
        parse(["--config", str(tmp_path / "c.json"), "--preset", "tiny"])


def test_cli_rejects_bad_choice(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(["--mode", "solo"])
    assert "invalid choice" in capsys.readouterr().err


def test_checkpoints_are_atomic_and_pruned(tmp_path: Path) -> None:
    def writer(value: str):  # type: ignore[no-untyped-def]
        return lambda d: (d / "payload.txt").write_text(value)

    for step in (1, 2, 3):
        write_checkpoint(tmp_path, step, writer(f"s{step}"), keep=2)
    assert [s for s, _ in list_checkpoints(tmp_path)] == [2, 3]
    latest = latest_checkpoint(tmp_path)
    assert latest is not None and (latest / "payload.txt").read_text() == "s3"

    # A write that dies midway leaves the previous checkpoint as the latest one.
    def crash(d: Path) -> None:
        (d / "payload.txt").write_text("partial")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        write_checkpoint(tmp_path, 4, crash, keep=2)
    assert latest_checkpoint(tmp_path) == latest
    assert not list((tmp_path / "checkpoints").glob(".tmp_*"))

    # A stale pointer (the pointed directory lost) falls back to the newest complete one;
    # a directory without the COMPLETE marker is ignored.
    (tmp_path / "checkpoints" / "latest").write_text("step_99\n")
    (tmp_path / "checkpoints" / "step_50").mkdir()
    assert latest_checkpoint(tmp_path) == latest


def test_rng_state_round_trip() -> None:
    import random

    import numpy as np
    import torch

    state = capture_rng_state()
    first = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    restore_rng_state(state)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == first


def test_metrics_jsonl_resume_drops_later_steps(tmp_path: Path) -> None:
    with MetricsLogger(tmp_path, tensorboard=False) as log:
        for step in (1, 2, 3, 4):
            log.log(step, {"coder/reward": step / 10, "bad": float("nan"), "text": "x"})
    with (tmp_path / "metrics.jsonl").open("a") as fh:
        fh.write('{"step": 5, "coder/rew')  # a torn line from a kill mid-write
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [1, 2, 3, 4]
    with MetricsLogger(tmp_path, resume_step=2, tensorboard=True) as log:
        log.log(3, {"coder/reward": 0.33})
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert rows[-1] == {"step": 3, "coder/reward": 0.33}
    assert "bad" not in rows[0] and "text" not in rows[0]
    assert any((tmp_path / "tb").iterdir())
    assert json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])["step"] == 1
