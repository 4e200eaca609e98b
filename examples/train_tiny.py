"""The CPU preset from Python: what ``codea1 train --preset tiny`` runs, as a script to copy.

A small Qwen2 model built from config (no download), the procedural integer-threshold family, a
short supervised warm start, then Code-A1 RL (coder and tester, two models), with a before/after
table on held-out problems. Rerun the same command to resume after an interruption.

    python examples/train_tiny.py --output-dir runs/tiny
    python examples/train_tiny.py --output-dir runs/tiny-golden --mode golden   # the baseline row
"""

from __future__ import annotations

import argparse
import json

from agents.training.config import MODES, from_preset
from agents.training.trainer import Trainer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output-dir", default="runs/tiny")
    parser.add_argument("--mode", default="code-a1", choices=MODES)
    parser.add_argument("--steps", type=int, default=None, help="RL steps (default: the preset's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    overrides = {"output_dir": args.output_dir, "mode": args.mode, "seed": args.seed}
    if args.steps is not None:
        overrides["steps"] = args.steps
    config = from_preset("tiny", **overrides)
    result = Trainer(config).train()
    print(
        json.dumps(
            {"run_dir": str(result.run_dir), "before": result.before, "after": result.after},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
