"""Sandbox throughput: the Ray pool against the local backend on the same machine, one run.

Workload (the referee's): batches of 64 jobs, each "a correct solution plus 8 calls": the GT
program of a built-in bank problem and 8 call expressions taken from its GT asserts (repeated
when it has fewer). A *run* is one job (one sandboxed program execution with its 8 calls); the
JSON also gives calls/s.

Measured, on this machine, with the same 64-job batch:

* ``local``: :class:`LocalSandbox` with ``--workers`` workers (default: the cores here);
* ``ray_{A}x{W}``: :class:`RaySandbox` with ``A`` actors of ``W`` workers each, same total
  workers as ``local`` (``A x W`` = 2 x 1 and 1 x 2 on a 2-core machine), and 1 x 1.

Batches are timed interleaved (local, ray, local, ray, ...) so a load change on a shared machine
hits every backend alike; the medians are reported. ``overhead_pct`` is the Ray pool's median
batch time over the local backend's, minus 1 (target: under 20%).

Scaling with actors: 1 and 2 actors (of 1 worker) are measured here. Beyond that the JSON gives a
**model**, not a measurement: each one-worker actor on a core of its own runs ``r1`` runs/s
(measured with one actor); the driver and Ray pay ``c`` seconds per chunk (measured: empty
chunks submitted all at once), chunk after chunk, plus one chunk's latency ``l`` (measured: one
empty chunk at a time) to fill and drain the pipeline; the chunk count for ``n`` actors is what
the pool's splitting rule gives for equal-speed actors. One batch of ``B`` jobs then takes
``max(B / (n * r1), chunks(n) * c) + l`` seconds. Rows for ``B`` = 64 and 512.

    python benchmarks/bench_ray.py [--batches 7] [--workers 2]
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

try:
    import ray
except ImportError:
    raise SystemExit("this benchmark needs Ray: pip install 'codea1[ray]'") from None

from codea1_env.problems import load_source
from codea1_env.sandbox.base import Job, JobResult, Sandbox
from codea1_env.sandbox.local import LocalSandbox
from codea1_env.sandbox.ray_backend import CHUNKS_IN_FLIGHT, RaySandbox

BATCH, CALLS = 64, 8
MODEL_ACTORS = (1, 2, 4, 8, 16, 32, 64)


def make_jobs() -> list[Job]:
    """64 jobs: GT programs of bank problems, each with 8 calls from its GT asserts."""
    source = load_source("bank")
    jobs: list[Job] = []
    for task_id in source.ids():
        problem = source[task_id]
        calls = []
        for line in problem.tests:
            test = ast.parse(line).body[0]
            if isinstance(test, ast.Assert) and isinstance(test.test, ast.Compare):
                calls.append(ast.unparse(test.test.left))
        if problem.kind != "function" or not calls:
            continue
        calls = (calls * CALLS)[:CALLS]
        jobs.append(Job(problem.gt_program, calls=tuple(calls), tag=task_id))
        if len(jobs) == BATCH:
            return jobs
    raise SystemExit(f"the bank has only {len(jobs)} usable function problems, need {BATCH}")


def check(results: Sequence[JobResult], jobs: Sequence[Job]) -> None:
    """Every job came back, in order, with all its calls OK (the programs are GT)."""
    assert [r.tag for r in results] == [j.tag for j in jobs], "results out of order"
    bad = [r.tag for r in results if not all(c.ok for c in r.calls)]
    assert not bad, f"GT calls failed for {bad[:5]}"


def time_batch(sandbox: Sandbox, jobs: list[Job]) -> float:
    started = time.perf_counter()
    results = sandbox.run(jobs)
    elapsed = time.perf_counter() - started
    check(results, jobs)
    return elapsed


def chunks_for(batch: int, actors: int, workers: int) -> int:
    """Chunks the pool's splitting rule cuts a batch into when all actors run at one speed."""
    left, chunks = batch, 0
    while left:
        share = math.ceil(left * workers / (actors * workers * CHUNKS_IN_FLIGHT))
        left -= min(left, max(workers, share))
        chunks += 1
    return chunks


def ray_chunk_costs(pool: RaySandbox, repeats: int = 200) -> tuple[float, float]:
    """Seconds per empty chunk through one actor: one at a time (latency), and pipelined.

    Pipelined: ``repeats`` chunks submitted at once and gathered, divided by ``repeats``: what
    each chunk costs the driver and Ray when chunks overlap, as they do in the pool.
    """
    actor = pool.actor_handles()[0]
    ray.get(actor.run.remote([]))
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        ray.get(actor.run.remote([]))
        samples.append(time.perf_counter() - started)
    started = time.perf_counter()
    ray.get([actor.run.remote([]) for _ in range(repeats)])
    pipelined = (time.perf_counter() - started) / repeats
    return statistics.median(samples), pipelined


def summary(times: list[float]) -> dict[str, float]:
    median = statistics.median(times)
    return {
        "batch_s_median": round(median, 4),
        "batch_s_min": round(min(times), 4),
        "runs_per_s": round(BATCH / median, 1),
        "calls_per_s": round(BATCH * CALLS / median, 1),
    }


def interleaved(
    backends: dict[str, Sandbox], jobs: list[Job], batches: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in backends}
    for sandbox in backends.values():
        time_batch(sandbox, jobs)  # warm-up: imports cached in the zygotes, actors placed
    for _ in range(batches):
        for name, sandbox in backends.items():
            times[name].append(time_batch(sandbox, jobs))
    return times


def modelled_runs_per_s(
    batch: int, actors: int, r1: float, cost_s: float, latency_s: float
) -> float:
    """The model's runs/s for one batch on ``actors`` one-worker actors (see the docstring)."""
    chunks = chunks_for(batch, actors, 1)
    return batch / (max(batch / (actors * r1), chunks * cost_s) + latency_s)


def model_table(r1: float, cost_s: float, latency_s: float) -> list[dict[str, Any]]:
    rows = []
    for n in MODEL_ACTORS:
        rows.append(
            {
                "actors": n,
                "chunks_per_64_batch": chunks_for(BATCH, n, 1),
                "runs_per_s_batch_64": round(modelled_runs_per_s(BATCH, n, r1, cost_s, latency_s)),
                "runs_per_s_batch_512": round(modelled_runs_per_s(512, n, r1, cost_s, latency_s)),
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=7, help="timed batches per backend")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    jobs = make_jobs()
    workers = max(1, args.workers)
    started = time.perf_counter()
    # Logical CPUs for Ray: enough to hold every pool below at once (they take turns running).
    ray.init(num_cpus=4 * workers, include_dashboard=False, log_to_driver=False)
    ray_init_s = time.perf_counter() - started
    configs: list[tuple[int, int]] = [(workers, 1), (1, workers), (1, 1)]
    configs = list(dict.fromkeys(configs))
    opened: list[Callable[[], None]] = []
    try:
        local = LocalSandbox(workers=workers)
        opened.append(local.close)
        local_one = LocalSandbox(workers=1)
        opened.append(local_one.close)
        pools: dict[str, RaySandbox] = {}
        startup: dict[str, float] = {"ray_init": round(ray_init_s, 2)}
        for actors, each in configs:
            started = time.perf_counter()
            pool = RaySandbox(actors=actors, workers_per_actor=each)
            opened.append(pool.close)
            name = f"ray_{actors}x{each}"
            pools[name] = pool
            startup[name] = round(time.perf_counter() - started, 2)
        same_size: dict[str, Sandbox] = {"local": local}
        same_size.update((k, v) for k, v in pools.items() if k != "ray_1x1")
        times = interleaved(same_size, jobs, args.batches)
        scale_times = interleaved(
            {"local_1": local_one, "ray_1x1": pools["ray_1x1"]}, jobs, max(3, args.batches // 2)
        )
        latency, chunk_cost = ray_chunk_costs(pools["ray_1x1"])
    finally:
        for close in reversed(opened):
            close()
        ray.shutdown()
    local_median = statistics.median(times["local"])
    results: dict[str, Any] = {name: summary(t) for name, t in {**times, **scale_times}.items()}
    overhead = {
        name: round(100 * (statistics.median(t) / local_median - 1), 1)
        for name, t in times.items()
        if name != "local"
    }
    r1 = BATCH / statistics.median(scale_times["ray_1x1"])
    two = f"ray_{workers}x1"
    out = {
        "benchmark": "sandbox runs/s: Ray pool vs local backend, same machine, one run",
        "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)},
        "workload": {"batch_jobs": BATCH, "calls_per_job": CALLS, "timed_batches": args.batches},
        "startup_s": startup,
        "results": results,
        "overhead_pct_vs_local": overhead,
        "target": "Ray overhead per 64-job batch under 20%",
        "target_met": all(v < 20.0 for v in overhead.values()),
        "ray_chunk_ms": {
            "latency": round(1000 * latency, 3),
            "pipelined_cost": round(1000 * chunk_cost, 3),
        },
        "scaling_measured": [
            {"actors": 1, "workers_per_actor": 1, "runs_per_s": results["ray_1x1"]["runs_per_s"]},
            {
                "actors": workers,
                "workers_per_actor": 1,
                "runs_per_s": results[two]["runs_per_s"],
            },
        ],
        "scaling_model": {
            "label": "MODEL, not measured: n one-worker actors, each on a core of its own at the "
            "measured 1-actor rate r1; the driver pays the measured pipelined cost per chunk",
            "formula": "batch_s = max(B / (n * r1), chunks(n) * chunk_cost) + chunk_latency",
            "r1_runs_per_s": round(r1, 1),
            "note": "a 64-job batch has too few chunks to feed many actors; the trainer's "
            "batches (problems x codes x suites, e.g. 8 x 8 x 8 = 512) are larger",
            "rows": model_table(r1, chunk_cost, latency),
        },
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
