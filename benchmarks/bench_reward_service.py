"""Load test of ``codea1 serve-reward`` on 127.0.0.1: requests/s and latency at 1, 8, 64 clients.

The service runs in this process (a thread) on a free port of 127.0.0.1 with one local sandbox.
Requests are OpenRLHF's, one query each as ``SingleTurnAgentExecutor`` sends them: the coder
prompt plus an answer (the GT program or an AST mutant of it, from the scripted MutantCoder,
generated before timing), the prompt, and the bank problem id as label. ``--workload fast``
(default) leaves out the mutants whose calls run into the 2 s call timeout (infinite loops): a
batch lasts as long as its slowest job, so with them every level is bound by timeouts and shows
the sandbox limits rather than the service; ``--workload mixed`` keeps them. Each level sends a
fixed number of requests from N client threads (urllib, a new connection per request, as OpenRLHF's
aiohttp session per request does), bounded in count and in time, and checks that every request
got HTTP 200 with one reward: ``lost`` counts those that did not. A warm-up pass (not timed)
fills the GT cache first.

Prints JSON: per level, requests/s, p50/p99 latency (ms), the service's batches and rows per
batch, and lost requests.

    python benchmarks/bench_reward_service.py [--requests 256] [--opponent gt+mistake_book]
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from agents.integrations.core import PairResult, RewardCore
from agents.integrations.openrlhf import parse_request
from agents.integrations.options import OPPONENTS
from agents.integrations.reward_service import RewardService, make_server
from agents.players.prompts import CODER_PROMPT, PromptTemplate
from codea1_env.baselines.scripted import MutantCoder
from codea1_env.problems import load_source
from codea1_env.sandbox.local import LocalSandbox


def make_bodies(n: int, core: RewardCore, workload: str, seed: int = 0) -> list[bytes]:
    """``n`` request bodies; ``fast``: without the answers whose calls hit the 2 s call timeout."""
    source = load_source("bank")
    ids = source.ids()
    coder = MutantCoder(p_mutant=0.75, seed=seed)
    template = PromptTemplate(CODER_PROMPT)
    bodies = []
    for i in range(n):
        problem = source[ids[i % len(ids)]]
        obs = {"role": 0, "prompt": problem.prompt, "entry_point": problem.entry_point, "code": ""}
        answer = coder.act([obs], [{"problem": problem}])[0]
        prompt = template.render_observation(obs)
        body = {"query": [prompt + answer], "prompts": [prompt], "labels": [problem.task_id]}
        bodies.append(body)
    if workload == "fast":  # two scoring passes (not timed; the first fills the mistake book)
        rows = [parse_request(core, b)[0][0] for b in bodies]
        slow = [False] * len(rows)
        for _ in range(2):
            for i, result in enumerate(core.score(rows)):
                slow[i] = slow[i] or _slow(result)  # type: ignore[arg-type]
        bodies = [b for b, s in zip(bodies, slow) if not s]
    encoded = [json.dumps(b).encode() for b in bodies]
    return [encoded[i % len(encoded)] for i in range(n)]


def _slow(result: PairResult) -> bool:
    info = result.info
    statuses = [v["status"] for v in info["verdicts"] + info["mistake_book_verdicts"]]
    return "timeout" in statuses or "timeout" in info["reasons"]["coder"]


def post(url: str, body: bytes) -> tuple[bool, float]:
    started = time.perf_counter()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            answer = json.loads(reply.read())
            ok = reply.status == 200 and len(answer.get("rewards", [])) == 1
    except (urllib.error.URLError, OSError, ValueError):
        ok = False
    return ok, time.perf_counter() - started


def run_level(url: str, bodies: list[bytes], clients: int, max_seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    failures = 0
    next_index = 0
    lock = threading.Lock()
    deadline = time.monotonic() + max_seconds

    def client() -> None:
        nonlocal next_index, failures
        while time.monotonic() < deadline:
            with lock:
                if next_index >= len(bodies):
                    return
                body = bodies[next_index]
                next_index += 1
            ok, seconds = post(url, body)
            with lock:
                if ok:
                    latencies.append(seconds)
                else:
                    failures += 1

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    latencies.sort()

    def quantile(q: float) -> float:
        return 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    return {
        "clients": clients,
        "sent": next_index,
        "ok": len(latencies),
        "lost": next_index - len(latencies),
        "failures": failures,
        "seconds": round(elapsed, 3),
        "requests_per_s": round(len(latencies) / elapsed, 1) if elapsed else 0.0,
        "p50_ms": round(quantile(0.50), 1) if latencies else None,
        "p99_ms": round(quantile(0.99), 1) if latencies else None,
        "mean_ms": round(1000 * statistics.fmean(latencies), 1) if latencies else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=256, help="requests per level")
    parser.add_argument("--levels", default="1,8,64", help="concurrent clients per level")
    parser.add_argument("--opponent", choices=OPPONENTS, default="gt+mistake_book")
    parser.add_argument("--batch-window-ms", type=float, default=5.0)
    parser.add_argument("--max-batch", type=int, default=256)
    parser.add_argument("--max-seconds", type=float, default=120.0, help="time cap per level")
    parser.add_argument(
        "--workload",
        choices=("fast", "mixed"),
        default="fast",
        help="fast: drop answers that hit the call timeout; mixed: keep them",
    )
    args = parser.parse_args()

    sandbox = LocalSandbox()
    core = RewardCore("bank", opponent=args.opponent, sandbox=sandbox)
    service = RewardService(
        core, batch_window_s=args.batch_window_ms / 1000, max_batch=args.max_batch
    )
    server = make_server(service, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    url = server.url + "/get_reward"
    results = []
    try:
        bodies = make_bodies(args.requests, core, args.workload)
        run_level(url, bodies[:64], 8, args.max_seconds)  # warm-up: GT cache, sandbox workers
        for clients in (int(c) for c in args.levels.split(",")):
            before = dict(service.stats)
            level = run_level(url, bodies, clients, args.max_seconds)
            batches = service.stats["batches"] - before["batches"]
            rows = service.stats["rows"] - before["rows"]
            level["batches"] = int(batches)
            level["rows_per_batch"] = round(rows / batches, 2) if batches else None
            level["scoring_seconds"] = round(
                service.stats["scoring_seconds"] - before["scoring_seconds"], 3
            )
            results.append(level)
        health = service.health()
    finally:
        server.stop()
        thread.join(30)
        sandbox.close()
    print(
        json.dumps(
            {
                "benchmark": "reward_service",
                "host": "127.0.0.1",
                "opponent": args.opponent,
                "requests_per_level": args.requests,
                "workload": args.workload,
                "batch_window_ms": args.batch_window_ms,
                "levels": results,
                "lost_total": sum(level["lost"] for level in results),
                "accepted": health["accepted"],
                "answered": health["answered"],
                "mistake_book_size": health["mistake_book_size"],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
