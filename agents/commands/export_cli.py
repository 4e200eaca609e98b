"""``codea1 export RUN_DIR``: one trained player as a transformers model directory.

Example::

    codea1 export runs/tiny --role coder --out ./coder
    python -m agents.serve --model ./coder --port 8001 --served-model-name coder

Writes ``OUT/`` with ``save_pretrained``'s files (config, weights, tokenizer; a LoRA run's
adapters folded into the base weights) and ``codea1_export.json`` (the run, the checkpoint, the
role, the saved player and the run's prompt style). ``OUT`` is filled in a temporary directory
beside it and renamed into place, so it is either whole or absent; an existing non-empty ``OUT`` is
refused.

A run of a Hub model (``--coder-model Qwen/...``) exports a folder ``vllm serve`` loads as it loads
the Hub model. A run of the built-in tiny models exports their tokenizer as its ``tokenizer.json``;
serve that with ``python -m agents.serve`` (:func:`agents.lm.models.load_tokenizer` reads it as
saved), not with vLLM: ``AutoTokenizer`` builds ``Qwen2Tokenizer`` for a Qwen2 model folder, and its
pre-tokenizer splits text differently than the tiny models were trained on.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

from agents.commands.argtypes import check_output

__all__ = ["EXPORT_RECORD", "add_arguments", "run"]

EXPORT_RECORD = "codea1_export.json"
"""The file in an exported directory that says where its weights came from."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``export`` subcommand's arguments."""
    parser.add_argument(
        "run_dir",
        help="a run directory (its latest complete checkpoint) or one checkpoints/step_N directory",
    )
    parser.add_argument(
        "--role",
        choices=("coder", "tester"),
        default="coder",
        help="which player to export (self-play: both roles are one model; default coder)",
    )
    parser.add_argument("--out", required=True, help="the model directory to write (new or empty)")


def run(args: argparse.Namespace) -> int:
    """Run ``codea1 export``; returns 2 on a bad run directory or output path."""
    out = check_output("--out", args.out, directory=True)
    if out.is_dir() and any(out.iterdir()):
        raise FileExistsError(f"--out {out}: exists and is not empty")
    try:
        from agents.training.saved_players import (
            load_saved_player,
            resolve_checkpoint,
            run_config,
            saved_player_name,
        )
    except ImportError as exc:
        raise ImportError(
            "codea1 export needs the training stack: pip install 'codea1[train]'"
        ) from exc
    from codea1_env.atomic import fsync_dir, fsync_tree, make_temp_dir

    checkpoint, run_dir = resolve_checkpoint(args.run_dir)
    config = run_config(checkpoint, run_dir)
    player = saved_player_name(config, args.role)
    model, tokenizer = load_saved_player(checkpoint, config, args.role, merge_lora=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = make_temp_dir(out.parent, f".{out.name}.export-")
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        record = {
            "run_dir": str(run_dir.resolve()),
            "checkpoint": str(checkpoint.resolve()),
            "role": args.role,
            "player": player,
            "mode": config.mode,
            "prompt_style": config.prompt_style,
            "model": config.tester_model if player == "tester" else config.coder_model,
        }
        (staging / EXPORT_RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        fsync_tree(staging)
        if out.is_dir():
            out.rmdir()  # empty (checked above); the rename needs the name free
        os.replace(staging, out)
        fsync_dir(out.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    print(f"codea1 export: the {args.role} ({player}) of {checkpoint} -> {out}", file=sys.stderr)
    return 0
