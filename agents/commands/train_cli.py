"""``codea1 train``: the trainer's command line (flags generated from :class:`TrainConfig`).

Examples::

    codea1 train --preset tiny --output-dir runs/tiny        # the CPU preset (resumable)
    codea1 train --preset 3b --mode golden --steps 50        # a paper baseline row on a GPU
    codea1 train --config runs/x/config.json --lr 1e-5       # a saved config, one change

Order of precedence: ``--config`` file (or ``--preset``), then every flag given. Running the same
command again with the same ``--output-dir`` resumes from the last checkpoint in it.
"""

from __future__ import annotations

import argparse
import sys

from agents.training.config import (
    PRESETS,
    TrainConfig,
    add_config_arguments,
    config_from_args,
)

__all__ = ["add_arguments", "build_config", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``train`` subcommand's arguments to ``parser``."""
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default=None,
        help="start from a preset: tiny (CPU, minutes), nano (smoke tests), 1.5b/3b/7b (GPU, "
        "the paper's hyperparameters). Without it: the paper's defaults.",
    )
    parser.add_argument(
        "--config",
        dest="config_file",
        default=None,
        metavar="PATH",
        help="start from a config JSON (as written to run_dir/config.json); flags override it",
    )
    parser.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved config as JSON and exit",
    )
    add_config_arguments(parser)


def build_config(args: argparse.Namespace) -> TrainConfig:
    """Resolve the config from ``--config``/``--preset`` and the flags.

    Raises:
        ValueError: both ``--config`` and ``--preset``, or a bad value (named).

    """
    config_file = getattr(args, "config_file", None)
    preset = getattr(args, "preset", None)
    if config_file and preset:
        raise ValueError("give either --config or --preset, not both")
    if config_file:
        try:
            saved = TrainConfig.load(config_file)
        except OSError as exc:  # missing, a directory, no permission
            raise ValueError(
                f"--config {config_file}: cannot read it ({exc.strerror or exc})"
            ) from None
        return config_from_args(args, base=saved.to_dict())
    return config_from_args(args, preset)


def run(args: argparse.Namespace) -> int:
    """Run ``codea1 train``; returns the process exit code (0 ok, 2 bad config)."""
    try:
        config = build_config(args)
    except (ValueError, OSError) as exc:  # a bad value, or a --config file that cannot be read
        print(f"codea1 train: error: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "print_config", False):
        import json

        print(json.dumps(config.to_dict(), indent=2, sort_keys=True))
        return 0
    from agents.training.trainer import Trainer

    trainer = Trainer(config)
    main_rank = trainer.dist.is_main  # under torchrun only rank 0 talks
    if main_rank:
        print(f"codea1 train: run directory {trainer.run_dir}", file=sys.stderr, flush=True)
    result = trainer.train()
    if main_rank:
        print(
            f"codea1 train: done, {result.steps} steps; "
            f"metrics in {result.run_dir / 'metrics.jsonl'}",
            file=sys.stderr,
            flush=True,
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point (``python -m agents.commands.train_cli``); as ``codea1 train``."""
    parser = argparse.ArgumentParser(prog="codea1 train", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
