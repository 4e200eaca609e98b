"""Stable-Baselines3 PPO trains a token-level tester (Discrete actions, Box observations).

The tester writes `assert f(<int>) == <int>` tokens against mutants of procedural threshold
functions; the sparse reward is CodeTestDuel-Tester-v0's tester reward.

    python examples/sb3_token_tester.py --timesteps 2048
"""

import argparse

from stable_baselines3 import PPO

from codea1_env.envs.tokens import TokenEnv

parser = argparse.ArgumentParser()
parser.add_argument("--timesteps", type=int, default=2048)
args = parser.parse_args()

env = TokenEnv("CodeTestDuel-Tester-v0", source="procedural", max_tokens=16, context_chars=128)
model = PPO("MlpPolicy", env, n_steps=256, batch_size=64, n_epochs=2, seed=0, verbose=0)
model.learn(total_timesteps=args.timesteps)
obs, info = env.reset(seed=123)
done, reward = False, 0.0
while not done:
    action, _state = model.predict(obs, deterministic=True)
    obs, step_reward, terminated, truncated, info = env.step(action)
    reward, done = float(step_reward), terminated or truncated
print("a trained tester's text:", repr(info["text"]), "reward:", reward)
env.close()
