"""Play CodeTestDuel-v0 with scripted players in a plain Gymnasium loop.

python examples/quickstart.py
"""

import gymnasium as gym

import codea1_env  # noqa: F401  (registers CodeTestDuel-v0)
from codea1_env.baselines.scripted import BoundaryTester, MutantCoder

env = gym.make("CodeTestDuel-v0", source="bank")
coder = MutantCoder(p_mutant=0.8, seed=0)  # the GT solution or an AST mutant of it
# Boundary inputs read from the candidate's comparisons; their GT outputs are computed in the
# env's own sandbox (shared through its referee), never in this process.
tester = BoundaryTester(seed=0, sandbox=env.get_wrapper_attr("referee"))

for episode in range(3):
    obs, info = env.reset(seed=episode)
    obs, reward, terminated, truncated, info = env.step(coder.act([obs], [info])[0])
    assert obs["role"] == 1  # the tester now sees the coder's program
    obs, reward, terminated, truncated, info = env.step(tester.act([obs], [info])[0])
    print(env.unwrapped.render())
    print(info["rewards"], "\n")
env.close()
