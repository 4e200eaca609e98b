"""``codea1 duel``: scripted players duel on a problem source; prints rewards and verdicts.

The coder answers the GT solution or an AST mutant of it; the tester writes boundary and random
tests (or copies the GT tests, or random inputs only). All episodes run through the batched
vector env, so each batch is one sandbox call. No model is needed.

Example::

    codea1 duel --episodes 32 --source bank --p-mutant 0.75
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from agents.commands.argtypes import check_output, nonnegative_int, positive_int, probability

__all__ = ["add_arguments", "play", "run"]

TESTERS = ("boundary", "random", "trivial")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``duel`` subcommand's arguments."""
    parser.add_argument(
        "--episodes", type=positive_int, default=24, help="number of duels (default 24)"
    )
    parser.add_argument(
        "--source", default="bank", help="problem source: bank, humaneval, procedural, jsonl:PATH"
    )
    parser.add_argument(
        "--seed", type=nonnegative_int, default=0, help="seed for problems and players"
    )
    parser.add_argument(
        "--p-mutant", type=probability, default=0.75, help="chance the coder submits a mutant"
    )
    parser.add_argument("--tester", choices=TESTERS, default="boundary", help="scripted tester")
    parser.add_argument("--batch", type=positive_int, default=8, help="duels per batched step")
    parser.add_argument(
        "--mode", choices=("code-a1", "golden", "self-play"), default="code-a1", help="reward mode"
    )
    parser.add_argument("--json", metavar="PATH", default=None, help="also write results as JSON")
    parser.add_argument("--quiet", action="store_true", help="print only the summary")


def play(
    episodes: int,
    *,
    source: str = "bank",
    seed: int = 0,
    p_mutant: float = 0.75,
    tester: str = "boundary",
    batch: int = 8,
    mode: str = "code-a1",
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Play ``episodes`` scripted duels and return one row per duel."""
    from tqdm import tqdm

    from codea1_env.baselines.scripted import (
        BoundaryTester,
        MutantCoder,
        RandomTester,
        TrivialTester,
    )
    from codea1_env.envs.vector import CodeTestDuelVectorEnv

    if episodes < 1 or batch < 1:
        raise ValueError("--episodes and --batch must be >= 1")
    batch = min(batch, episodes)
    env = CodeTestDuelVectorEnv(num_envs=batch, source=source, reward_mode=mode)
    coder = MutantCoder(p_mutant=p_mutant, seed=seed)
    sandbox = env.referee.sandbox
    testers: dict[str, Any] = {
        "boundary": BoundaryTester(seed=seed, sandbox=sandbox),
        "random": RandomTester(seed=seed, sandbox=sandbox),
        "trivial": TrivialTester(),
    }
    player = testers[tester]
    rows: list[dict[str, Any]] = []
    bar = tqdm(total=episodes, desc="duels", unit="duel", disable=not progress, file=sys.stderr)
    try:
        obs, infos = env.reset(seed=seed)
        while len(rows) < episodes:
            per_env = _split_infos(infos, batch)
            codes = coder.act(_split_obs(obs, batch), per_env)
            mutants = list(coder.last_mutants)
            obs, _, terminated, _, infos = env.step(codes)
            if not terminated.all():
                tests = player.act(_split_obs(obs, batch), _split_infos(infos, batch))
                obs, _, terminated, _, infos = env.step(tests)
            for i, info in enumerate(_split_infos(infos, batch)):
                if len(rows) >= episodes:
                    break
                rows.append(_row(info, mutants[i]))
                bar.update(1)
            rewards = [r["coder_reward"] for r in rows]
            bar.set_postfix(coder=f"{sum(rewards) / len(rewards):.2f}")
            obs, infos = env.reset()
    finally:
        bar.close()
        env.close()
    return rows


def _split_obs(obs: dict[str, Any], n: int) -> list[dict[str, Any]]:
    return [{key: obs[key][i] for key in obs} for i in range(n)]


def _split_infos(infos: dict[str, Any], n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, values in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get("_" + key)
        for i in range(n):
            if mask is not None and not mask[i]:
                continue
            if key == "rewards":
                out[i][key] = {role: float(values[role][i]) for role in values}
            else:
                out[i][key] = values[i]
    return out


def _row(info: dict[str, Any], mutant: Any) -> dict[str, Any]:
    verdicts = info.get("verdicts", [])
    return {
        "task_id": info["task_id"],
        "candidate": "gt" if mutant is None else f"{mutant.operator}@{mutant.line}",
        "tests": len(verdicts),
        "valid": sum(v["valid"] for v in verdicts),
        "failed": sum(not v["passed"] for v in verdicts),
        "gt_pass_rate": float(info.get("gt_pass_rate", 0.0)),
        "coder_reward": float(info["rewards"]["coder"]),
        "tester_reward": float(info["rewards"]["tester"]),
    }


def format_table(rows: list[dict[str, Any]], *, golden: bool = False) -> str:
    """A fixed-width table of duel rows with a summary line (golden: no tester column values)."""
    header = f"{'problem':<28} {'candidate':<18} {'tests':>5} {'valid':>5} {'fail':>5} "
    header += f"{'GT pass':>7} {'coder':>6} {'tester':>6}"
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r['task_id'][:28]:<28} {r['candidate'][:18]:<18} {r['tests']:>5} {r['valid']:>5} "
            f"{r['failed']:>5} {r['gt_pass_rate']:>7.2f} {r['coder_reward']:>6.3f} "
            + (f"{'-':>6}" if golden else f"{r['tester_reward']:>6.3f}")
        )
    lines.append("-" * len(header))
    lines.append(summary(rows, golden=golden))
    return "\n".join(lines)


def summary(rows: list[dict[str, Any]], *, golden: bool = False) -> str:
    """One line: mean rewards and the mutants caught (golden: by the GT tests; no tester)."""

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    mutants = [r for r in rows if r["candidate"] != "gt"]
    # golden: the GT tests are the suite, and a mutant they catch has a GT pass rate below 1
    caught = sum(1 for r in mutants if (r["gt_pass_rate"] < 1.0 if golden else r["failed"] > 0))
    tester = (
        "no tester (golden mode: the GT tests)"
        if golden
        else f"tester {mean([r['tester_reward'] for r in rows]):.3f}"
    )
    return (
        f"{len(rows)} duels: coder {mean([r['coder_reward'] for r in rows]):.3f}, {tester}; "
        f"mutants caught by a {'GT ' if golden else ''}test {caught}/{len(mutants)}"
    )


def run(args: argparse.Namespace) -> int:
    """Run ``codea1 duel``."""
    if args.json:
        check_output("--json", args.json, directory=False)  # before the duels, not after
    started = time.perf_counter()
    rows = play(
        args.episodes,
        source=args.source,
        seed=args.seed,
        p_mutant=args.p_mutant,
        tester=args.tester,
        batch=args.batch,
        mode=args.mode,
        progress=not args.quiet,
    )
    golden = args.mode == "golden"
    print(summary(rows, golden=golden) if args.quiet else format_table(rows, golden=golden))
    print(f"({time.perf_counter() - started:.1f} s)")
    if args.json:
        from codea1_env.atomic import write_text_atomic

        write_text_atomic(args.json, json.dumps(rows, indent=1))
    return 0
