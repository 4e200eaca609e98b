"""A training run's saved players, loaded outside the trainer: to evaluate, serve or export them.

A run directory holds its ``config.json`` and ``checkpoints/step_N/{player}_model.pt``; a player
is ``coder`` and ``tester`` (``shared`` in self-play mode, one model for both roles). This module
resolves a run directory or one checkpoint directory to its checkpoint, names the saved player of
a role, and loads that player's model and tokenizer the way the trainer built them (the model
spec, LoRA when the run used it, then the saved weights).

Used by ``checkpoint:RUN_DIR`` policies (:mod:`agents.evaluation.policies`) and by
``codea1 export`` (:mod:`agents.commands.export_cli`), which writes a player as a transformers
model directory that ``python -m agents.serve`` and ``vllm serve`` load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from agents.training.checkpoint import COMPLETE_MARKER, latest_checkpoint, load_model_weights
from agents.training.config import TrainConfig
from agents.training.player import apply_lora, load_model_spec

__all__ = ["load_saved_player", "resolve_checkpoint", "run_config", "saved_player_name"]

ROLES = ("coder", "tester")


def resolve_checkpoint(path: str | Path) -> tuple[Path, Path]:
    """``(checkpoint directory, run directory)`` of a run directory or of one checkpoint.

    Args:
        path: A run directory (its latest complete checkpoint is used) or a complete
            ``RUN_DIR/checkpoints/step_N`` directory.

    Raises:
        ValueError: ``path`` is neither, or the run has no complete checkpoint (named).

    """
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"no directory {path}")
    if (path / COMPLETE_MARKER).is_file():
        return path, path.parent.parent
    found = latest_checkpoint(path)
    if found is None:
        raise ValueError(f"no complete checkpoint under {path}/checkpoints")
    return found, path


def run_config(checkpoint: Path, run_dir: Path) -> TrainConfig:
    """The run's config: ``run_dir/config.json``, else the copy the checkpoint carries.

    Raises:
        FileNotFoundError: neither file exists (both named).
        ValueError: the file is not a valid config (named).

    """
    for path in (run_dir / "config.json", checkpoint / "config.json"):
        if path.is_file():
            return TrainConfig.load(path)
    raise FileNotFoundError(
        f"no config.json in {run_dir} or in its checkpoint {checkpoint}: the run's settings "
        "(models, LoRA, prompt style) are needed to load its players"
    )


def saved_player_name(config: TrainConfig, role: str) -> str:
    """The saved player that plays ``role`` in a run of ``config``.

    Raises:
        ValueError: an unknown role, or the tester of a golden-mode run (it trains no tester).

    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    if config.mode == "self-play":
        return "shared"
    if role == "tester" and config.mode == "golden":
        raise ValueError("a golden-mode run trains no tester: its checkpoints hold a coder only")
    return role


def load_saved_player(
    checkpoint: Path,
    config: TrainConfig,
    role: str,
    *,
    device: torch.device | None = None,
    merge_lora: bool = False,
) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` of the player that plays ``role``, in eval mode.

    Args:
        checkpoint: A complete checkpoint directory of the run (:func:`resolve_checkpoint`).
        config: The run's config (``TrainConfig.load(run_dir / "config.json")``).
        role: ``"coder"`` or ``"tester"``.
        device: Where to load it (default CPU).
        merge_lora: Fold a LoRA run's adapters into the base weights (a plain transformers model,
            as a server or ``save_pretrained`` wants); otherwise the PEFT model is returned.

    Raises:
        ValueError: see :func:`saved_player_name`.
        CheckpointError: the weights file is damaged, or does not fit the model (named).

    """
    name = saved_player_name(config, role)
    device = device or torch.device("cpu")
    model_spec = config.tester_model if name == "tester" else config.coder_model  # shared: coder's
    model, tokenizer = load_model_spec(model_spec, seed=config.seed, device=device)
    if config.use_lora:
        model = apply_lora(model, config)
    load_model_weights(model, checkpoint / f"{name}_model.pt", name, map_location=device)
    if config.use_lora and merge_lora:
        model = model.merge_and_unload()
    model.eval()
    return model, tokenizer
