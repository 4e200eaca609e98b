"""Every training-stability option, switched on, in the env (and, with --train, the trainer).

    python examples/stability_options.py            # env: one batch of scripted duels
    python examples/stability_options.py --train    # plus a short tiny-preset training run:
                                                    # a brief warm start, 4 RL steps, a small
                                                    # held-out evaluation (minutes on 2 cores;
                                                    # the warm start takes most), written to
                                                    # --output-dir

Options (see codea1_env/stability.py): curriculum, hard-only, code anonymization, a bounded and
refreshed mistake book, trivial-test filtering, and execution limits in one place.
"""

import argparse

import numpy as np

from codea1_env.baselines.scripted import BoundaryTester, MutantCoder, TrivialTester
from codea1_env.envs.vector import CodeTestDuelVectorEnv
from codea1_env.game.policy import Policy
from codea1_env.stability import StabilityOptions

parser = argparse.ArgumentParser()
parser.add_argument("--train", action="store_true", help="also run a short tiny-preset training")
parser.add_argument("--steps", type=int, default=4)
parser.add_argument("--output-dir", default="runs/stability_demo")
args = parser.parse_args()

options = StabilityOptions(
    curriculum=True,  # easy problems first; widens as the coder's GT pass rate rises
    anonymize_code=True,  # the tester reads logic, not names or comments
    book_capacity_per_problem=8,
    book_capacity_total=1500,  # the write-up suggests 1,000-2,000 tests in all
    book_refresh_every=4,  # re-validate stored tests against the GT every 4 batches
    quality_filter=True,  # trivial tests are rejected (counted invalid) instead of scored
    always_pass_after=8,
)
limits = {"call_timeout_s": 2.0, "setup_timeout_s": 5.0, "memory_mb": 512}  # 1-5 s guidance

N = 16
env = CodeTestDuelVectorEnv(num_envs=N, group_size=8, stability=options, limits=limits)
coder = MutantCoder(p_mutant=0.75, seed=0)
testers: list[Policy] = [BoundaryTester(seed=0), TrivialTester()]


def unbatch(obs, infos):
    return (
        [{k: obs[k][i] for k in obs} for i in range(N)],
        [{"problem": infos["problem"][i]} for i in range(N)],
    )


for batch in range(3):
    obs, infos = env.reset(seed=batch)
    obs, _, _, _, infos = env.step(coder.act(*unbatch(obs, infos)))
    o, i = unbatch(obs, infos)
    # in each group of 8 envs (one problem), 4 get a strong tester and 4 a trivial (copying)
    # one, so both attack the same problems and codes
    strong = [k for k in range(N) if k % 8 < 4]
    weak = [k for k in range(N) if k % 8 >= 4]
    tests: list[str] = [""] * N
    for tester, envs in ((testers[0], strong), (testers[1], weak)):
        for k, text in zip(envs, tester.act([o[k] for k in envs], [i[k] for k in envs])):
            tests[k] = text
    obs, rewards, _, _, infos = env.step(tests)
    trivial = sum(
        1 for rows in infos["rejected"] if rows for r in rows if r["reason"].startswith("trivial")
    )
    print(
        f"batch {batch}: tester reward strong {np.mean(rewards[strong]):.3f} "
        f"trivial {np.mean(rewards[weak]):.3f}; trivial tests rejected: {trivial}; "
        f"curriculum level {infos['curriculum/level'][0]:.2f}"
    )
print("what the tester saw (anonymized):\n" + obs["code"][0][:400])
env.close()

if args.train:
    # The same options in the trainer (CPU preset, a few RL steps; see `codea1 train --help`).
    # From Python: from_preset("tiny", stability=options, limits=limits); in the run's
    # config.json they are the "stability" and "limits" objects.
    from agents.commands.cli import main as codea1

    codea1(
        [
            "train", "--preset", "tiny", "--steps", str(args.steps),
            "--output-dir", args.output_dir,
            "--sft-steps", "50", "--sft-tester-steps", "50", "--eval-size", "8",
            "--curriculum", "--anonymize-code", "--quality-filter",
            "--book-capacity-per-problem", "8", "--book-capacity-total", "1500",
            "--book-refresh-every", "4", "--skip-collapsed-groups",
            "--coder-temperature", "1.0", "--tester-temperature", "0.9",
            "--call-timeout-s", "2.0",
        ]
    )  # fmt: skip
