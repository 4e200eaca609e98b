"""Mutation-score evaluation speed: 8 tests against every mutant of every built-in problem.

Each problem's suite is its first 8 GT asserts (valid by construction). All mutants of the GT
(:func:`codea1_env.scoring.mutation.generate_mutants`, every operator) run on the GT inputs plus the
suite's inputs, in batches of problems, each batch one ``Sandbox.run`` (jobs run in the sandbox's
warm fork-server workers, not one interpreter per mutant). Prints JSON: problems per second,
mutants, jobs, the mean mut@8 and the mutant classes.

    PYTHONPATH=. python benchmarks/bench_mutation.py [--batch 32] [--workers N] [--source bank]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from codea1_env.evaluation import SuiteEvaluator, mutation_score
from codea1_env.problems import load_source
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.factory import make_sandbox


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", default="bank")
    parser.add_argument("--batch", type=int, default=32, help="problems per sandbox call")
    parser.add_argument("--tests", type=int, default=8)
    parser.add_argument("--workers", type=int, default=None, help="sandbox workers")
    args = parser.parse_args()

    source = load_source(args.source)
    problems = [p for p in source if p.kind == "function" and p.tests]
    kwargs = {} if args.workers is None else {"workers": args.workers}
    with make_sandbox("local", **kwargs) as sandbox:
        evaluator = SuiteEvaluator(sandbox, max_mutants=None)
        sandbox.run([])  # start the workers before timing
        started = time.perf_counter()
        generated = time.perf_counter()
        for problem in problems:  # fill the per-problem mutant cache (timed separately)
            evaluator.mutant_cache.get(problem.gt_program)
        generation_s = time.perf_counter() - generated
        results = []
        for start in range(0, len(problems), args.batch):
            chunk = problems[start : start + args.batch]
            batch: list[tuple[Problem, list[str], list[str]]] = [
                (p, ["\n".join(p.tests[: args.tests])], []) for p in chunk
            ]
            results += evaluator.evaluate(batch)
        elapsed = time.perf_counter() - started
    scores = [
        s
        for r in results
        if (s := mutation_score(r.suites[0].mutant_kills, args.tests)) is not None
    ]
    mutants = sum(r.n_mutants for r in results)
    print(
        json.dumps(
            {
                "benchmark": "mutation_score",
                "source": args.source,
                "problems": len(problems),
                "tests_per_problem": args.tests,
                "mutants": mutants,
                "crashing": sum(r.n_crashing for r in results),
                "equivalent": sum(r.n_equivalent for r in results),
                f"mean_mut@{args.tests}": round(statistics.fmean(scores), 4) if scores else None,
                "seconds": round(elapsed, 2),
                "mutant_generation_seconds": round(generation_s, 2),
                "problems_per_s": round(len(problems) / elapsed, 2),
                "mutant_runs_per_s": round(mutants / elapsed, 1),
                "batch": args.batch,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
