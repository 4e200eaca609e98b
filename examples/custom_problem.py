"""Duel on your own problem, given in the JSONL schema through reset options.

python examples/custom_problem.py
"""

import gymnasium as gym

import codea1_env  # noqa: F401

PROBLEM = {
    "task_id": "mine/is_leap",
    "prompt": 'def is_leap(year: int) -> bool:\n    """True for Gregorian leap years."""',
    "entry_point": "is_leap",
    "canonical_solution": (
        "def is_leap(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n"
    ),
    "tests": ["assert is_leap(2000) == True", "assert is_leap(1900) == False"],
}
CANDIDATE = "```python\ndef is_leap(year):\n    return year % 4 == 0\n```"
TESTS = """Let me probe the century rule:
```python
assert is_leap(1900) == False
assert is_leap(2024) == True
y = 2100
assert is_leap(y) == False
assert is_leap(2000) == False   # wrong expectation: kept with the GT value, counted invalid
```"""

env = gym.make("CodeTestDuel-v0")
env.reset(options={"problem": PROBLEM})
env.step(CANDIDATE)
_, reward, _, _, info = env.step(TESTS)
print(env.unwrapped.render())
print("tester reward parts:", info["tester_reward_parts"])
env.close()
