"""The same texts and rewards whatever ``PYTHONHASHSEED`` a process runs under.

A set's iteration order follows the process's string hashes, so everything that renders, encodes
or draws from a set does it in a canonical order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json, warnings
    warnings.filterwarnings("ignore")
    import gymnasium as gym
    import codea1_env
    from codea1_env.baselines.scripted import BoundaryTester, MutantCoder, RandomTester
    from codea1_env.sandbox.worker import plain

    PROBLEM = {
        "task_id": "hash/longest",
        "prompt": 'def longest(words: set) -> int:\\n    \\"\\"\\"Length of the longest word.\\"\\"\\"',
        "entry_point": "longest",
        "canonical_solution": "def longest(words):\\n    return max((len(w) for w in words), default=0)\\n",
        "tests": ["assert longest({'alpha', 'be', 'gam', 'd'}) == 5", "assert longest(set()) == 0"],
    }
    value = {"DELTA", "PI", "RHO", "GAMMA", "ALPHA", "BETA", ("x", "y")}
    out = [plain.to_source(value), plain.to_source(frozenset(value)), plain.dumps(value)]
    env = gym.make("CodeTestDuel-v0", source="bank")
    referee = env.unwrapped.referee
    for tester in (RandomTester(seed=0, sandbox=referee), BoundaryTester(seed=0, sandbox=referee)):
        coder = MutantCoder(p_mutant=1.0, seed=0)
        for _ in range(3):
            obs, info = env.reset(options={"problem": PROBLEM})
            obs, *_, info = env.step(coder.act([obs], [info])[0])
            text = tester.act([obs], [info])[0]
            *_, info = env.step(text)
            out.append([text, info["rewards"]])
    env.close()
    print(json.dumps(out))
    """
)


def test_texts_and_rewards_do_not_follow_the_hash_seed() -> None:
    runs = []
    for seed in ("0", "1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs[0] == runs[1] == runs[2]
    assert runs[0][0] == "{'ALPHA', 'BETA', 'DELTA', 'GAMMA', 'PI', 'RHO', ('x', 'y')}"
