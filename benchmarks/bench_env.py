"""Env throughput: single env vs the natively batched vector env, same episodes, one run.

Workload (the trainer's): for each problem, 8 candidate programs (the GT or AST mutants of it,
from the scripted MutantCoder) each tested by 8 suites (scripted BoundaryTester, different
seeds): 64 duels per problem. The actions are generated first (not timed); then the same
episodes are played (a) one by one through a single ``CodeTestDuelEnv`` and (b) through
``CodeTestDuelVectorEnv(num_envs=64, group_size=64)``, one batched step per problem. Both share one
warm local sandbox and start with a cold GT cache and an empty mistake book.

Prints JSON: episodes/s and env steps/s for both, and the ratio (target: vector >= 5x single).

    python benchmarks/bench_env.py [--problems 6]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from codea1_env.baselines.scripted import BoundaryTester, MutantCoder
from codea1_env.envs.duel_env import CodeTestDuelEnv
from codea1_env.envs.vector import CodeTestDuelVectorEnv
from codea1_env.problems import load_source
from codea1_env.sandbox.local import LocalSandbox

CODES, SUITES = 8, 8


def make_episodes(sandbox: Any, n_problems: int) -> list[tuple[Any, list[str], list[list[str]]]]:
    source = load_source("bank")
    problems = [source[task_id] for task_id in source.ids()[:n_problems]]
    coder = MutantCoder(p_mutant=0.875, seed=0)
    testers = [BoundaryTester(seed=s, sandbox=sandbox) for s in range(SUITES)]
    episodes = []
    for problem in problems:
        info = {"problem": problem}
        obs = {"role": 0, "prompt": problem.prompt, "entry_point": problem.entry_point, "code": ""}
        codes = coder.act([obs] * CODES, [info] * CODES)
        suites = []
        for code in codes:
            tobs = dict(obs, role=1, code=code)
            suites.append([t.act([tobs], [info])[0] for t in testers])
        episodes.append((problem, codes, suites))
    return episodes


def run_single(sandbox: Any, episodes: list[Any]) -> tuple[float, list[float]]:
    env = CodeTestDuelEnv(sandbox=sandbox)
    rewards = []
    start = time.perf_counter()
    for problem, codes, suites in episodes:
        for code, row in zip(codes, suites):
            for suite in row:
                env.reset(options={"problem": problem})
                env.step(code)
                _, reward, _, _, _ = env.step(suite)
                rewards.append(float(reward))
    elapsed = time.perf_counter() - start
    env.close()
    return elapsed, rewards


def run_vector(sandbox: Any, episodes: list[Any]) -> tuple[float, list[float]]:
    n = CODES * SUITES
    venv = CodeTestDuelVectorEnv(num_envs=n, group_size=n, sandbox=sandbox)
    rewards: list[float] = []
    start = time.perf_counter()
    for problem, codes, suites in episodes:
        venv.reset(options={"problem": problem})
        venv.step([codes[i // SUITES] for i in range(n)])
        _, reward, _, _, _ = venv.step([suites[i // SUITES][i % SUITES] for i in range(n)])
        rewards.extend(float(r) for r in reward)
    elapsed = time.perf_counter() - start
    venv.close()
    return elapsed, rewards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--problems", type=int, default=6)
    args = parser.parse_args()
    with LocalSandbox() as sandbox:
        episodes = make_episodes(sandbox, args.problems)
        n_episodes = sum(len(c) * len(s[0]) for _, c, s in episodes)
        run_vector(sandbox, episodes[:1])  # warm-up (imports, worker page-in)
        single_s, single_r = run_single(sandbox, episodes)
        vector_s, vector_r = run_vector(sandbox, episodes)
        isolation = str(sandbox.isolation())
    # rewards differ in detail: the single env's mistake book grows episode by episode,
    # the vector env's once per batch; the mean is reported as a sanity check.
    result = {
        "workload": f"{args.problems} problems x {CODES} codes x {SUITES} suites",
        "episodes": n_episodes,
        "single_env": {
            "seconds": round(single_s, 3),
            "episodes_per_s": round(n_episodes / single_s, 1),
            "steps_per_s": round(2 * n_episodes / single_s, 1),
        },
        "vector_env": {
            "seconds": round(vector_s, 3),
            "episodes_per_s": round(n_episodes / vector_s, 1),
            "steps_per_s": round(2 * n_episodes / vector_s, 1),
        },
        "vector_over_single": round(single_s / vector_s, 2),
        "target_vector_over_single": 5.0,
        "mean_tester_reward": {
            "single": round(sum(single_r) / len(single_r), 4),
            "vector": round(sum(vector_r) / len(vector_r), 4),
        },
        "sandbox": isolation,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
