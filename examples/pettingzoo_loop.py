"""The duel as a PettingZoo AEC env: the coder moves, then the tester; both get rewards.

python examples/pettingzoo_loop.py
"""

import codea1_env
from codea1_env.baselines.scripted import BoundaryTester, MutantCoder
from codea1_env.game.policy import Policy

env = codea1_env.pettingzoo_env(source="bank")
players: dict[str, Policy] = {
    "coder": MutantCoder(p_mutant=1.0, seed=1),
    "tester": BoundaryTester(seed=1),
}
env.reset(seed=7)
returns = {"coder": 0.0, "tester": 0.0}
for agent in env.agent_iter():
    obs, reward, terminated, truncated, info = env.last()
    returns[agent] += reward
    action = None if terminated or truncated else players[agent].act([obs], [info])[0]
    env.step(action)
print(env.render())
print("returns:", returns)
env.close()
