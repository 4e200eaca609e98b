"""``codea1 export``: a trained player as a transformers model directory, the same model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.requires("torch", "transformers", "peft")


@pytest.fixture(scope="module", params=[False, True], ids=["full", "lora"])
def run_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agents.training.config import from_preset
    from agents.training.trainer import Trainer

    path = tmp_path_factory.mktemp("run") / "run"
    config = from_preset(
        "nano",
        steps=1,
        sft_steps=2,
        sft_tester_steps=2,
        output_dir=str(path),
        use_lora=request.param,
    )
    Trainer(config, log=lambda _m: None).train()
    return path


def _logits(model: Any, tokenizer: Any) -> Any:
    import torch

    ids = tokenizer("def add(a, b):\n    return", return_tensors="pt").input_ids
    with torch.no_grad():
        return model(ids).logits


@pytest.mark.parametrize("role", ["coder", "tester"])
def test_the_exported_directory_is_the_trained_player(
    run_dir: Path, tmp_path: Path, role: str
) -> None:
    import torch

    from agents.commands.cli import main
    from agents.lm.models import load_model, load_tokenizer
    from agents.training.config import TrainConfig
    from agents.training.player import load_model_spec
    from agents.training.saved_players import load_saved_player, resolve_checkpoint

    out = tmp_path / "exported"
    assert main(["export", str(run_dir), "--role", role, "--out", str(out)]) == 0
    record = json.loads((out / "codea1_export.json").read_text())
    assert record["role"] == role and record["player"] == role
    checkpoint, _ = resolve_checkpoint(run_dir)
    config = TrainConfig.load(run_dir / "config.json")
    trained, tokenizer = load_saved_player(checkpoint, config, role)
    exported = load_model(out)
    assert not any("lora" in name for name, _ in exported.named_parameters())
    theirs = _logits(trained, tokenizer)
    ours = _logits(exported, load_tokenizer(out))
    assert torch.allclose(ours, theirs, atol=1e-4)
    # the weights moved from the model spec's initial ones: the trained player, not a fresh one
    fresh, _ = load_model_spec(config.coder_model, seed=config.seed, device=torch.device("cpu"))
    assert not torch.allclose(_logits(fresh, tokenizer), ours, atol=1e-6)


def test_an_output_that_is_not_empty_or_a_run_without_checkpoints_is_refused(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agents.commands.cli import main

    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    assert main(["export", str(run_dir), "--out", str(taken)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    empty_run = tmp_path / "empty_run"
    empty_run.mkdir()
    assert main(["export", str(empty_run), "--out", str(tmp_path / "o")]) == 2
    assert "no complete checkpoint under" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    assert not [p for p in tmp_path.iterdir() if ".export-" in p.name]  # no staging left


def test_a_golden_run_has_no_tester_to_export() -> None:
    from agents.training.config import from_preset
    from agents.training.saved_players import saved_player_name

    with pytest.raises(ValueError, match="golden-mode run trains no tester"):
        saved_player_name(from_preset("nano", mode="golden"), "tester")
    assert saved_player_name(from_preset("nano", mode="self-play"), "tester") == "shared"


def test_a_run_that_lost_its_config_json_loads_with_the_checkpoints(
    run_dir: Path, tmp_path: Path
) -> None:
    import shutil

    from agents.commands.cli import main
    from agents.evaluation.policies import EvalSettings, load_policy

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    (copy / "config.json").unlink()  # the checkpoint carries its own copy
    policy = load_policy(f"checkpoint:{copy}", None, EvalSettings())  # type: ignore[arg-type]
    assert policy.coder is not None and policy.tester is not None
    assert main(["export", str(copy), "--out", str(tmp_path / "coder")]) == 0
    for step in (copy / "checkpoints").glob("step_*"):
        (step / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="no config.json in"):
        load_policy(f"checkpoint:{copy}", None, EvalSettings())  # type: ignore[arg-type]
