"""Compare testers side by side on the built-in bank: how valid are their tests, how many bugs
do they catch?

The boundary tester reads the code (white-box) and aims at boundaries, the random tester draws
inputs blindly, the trivial tester copies the GT tests. All are scored on the same pool of
candidate codes (the GT or one of its AST mutants) and on every mutant of the GT::

    PYTHONPATH=. python examples/compare_policies.py --problems 20
"""

from __future__ import annotations

import argparse

from agents.evaluation.evaluate import (
    EvalSettings,
    evaluate_policies,
    markdown_table,
    select_problems,
)
from codea1_env.problems import load_source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--samples", type=int, default=2, help="suites per problem")
    args = parser.parse_args()

    problems = select_problems(load_source("bank"), args.problems, seed=0)
    rows = evaluate_policies(
        [
            "boundary=scripted:boundary",
            "random=scripted:random",
            "trivial=scripted:trivial",
            "gt-coder=scripted:gt",
            "mutant-coder=scripted:mutant:0.5",
        ],
        problems,
        EvalSettings(samples=args.samples, ks=(1,), n_candidates=8, max_mutants=48),
    )
    print(markdown_table(rows))
    for row in rows:
        flags = {
            k: v
            for k, v in row["monitor"].items()
            if v
            and k.endswith(
                ("early_exit", "timeout", "not_plain", "trivial_constant", "duplicate_input")
            )
        }
        if flags:
            print(f"monitor, {row['name']}: {flags}")


if __name__ == "__main__":
    main()
