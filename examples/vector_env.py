"""64 duels per step with one sandbox call: 8 problems x (8 duels sharing each problem).

python examples/vector_env.py
"""

import gymnasium as gym
import numpy as np

import codea1_env  # noqa: F401
from codea1_env.baselines.scripted import BoundaryTester, MutantCoder

N, GROUP = 64, 8
envs = gym.make_vec(
    "CodeTestDuel-v0", num_envs=N, vectorization_mode="vector_entry_point", group_size=GROUP
)
coder, tester = MutantCoder(p_mutant=0.75, seed=0), BoundaryTester(seed=0)


def unbatch(obs, infos):
    o = [{k: obs[k][i] for k in obs} for i in range(N)]
    return o, [{"problem": infos["problem"][i]} for i in range(N)]


obs, infos = envs.reset(seed=0)
obs, _, _, _, infos = envs.step(coder.act(*unbatch(obs, infos)))
obs, rewards, terminated, _, infos = envs.step(tester.act(*unbatch(obs, infos)))
print("tester reward per group:", np.round(rewards.reshape(-1, GROUP).mean(axis=1), 3))
print("coder reward per group: ", np.round(infos["rewards"]["coder"].reshape(-1, GROUP).mean(1), 3))
envs.close()
