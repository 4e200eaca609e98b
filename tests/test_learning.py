"""Honest learning test: a short Code-A1 run on an easy family raises both players' rewards.

Fixed seeds; a nano model (~1.4M parameters) built from config; six problems of the procedural
"step" family (``return a if x OP t else b``). A brief supervised warm start teaches the answer
format only; the test then compares the rewards the referee gave in the first RL steps with those
of the last RL steps. Nothing is mocked: generation, the sandbox, the referee and the updates are
the real ones.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from agents.config import from_preset
from agents.trainer import Trainer
from codea1_env.problems import ProceduralSource

pytestmark = pytest.mark.slow

WINDOW = 4


class FixedProblems:
    """Every step trains on the same small set (sample() cycles through it in order)."""

    def __init__(self, problems: list) -> None:  # type: ignore[type-arg]
        self.problems = problems
        self.next = 0

    def sample(self, rng: object) -> object:
        problem = self.problems[self.next % len(self.problems)]
        self.next += 1
        return problem


def run(tmp_path: Path) -> list[dict[str, float]]:
    source = ProceduralSource(seed=0, n=200, families=["step"])
    problems = [source.problem_at(i) for i in range(6)]
    config = from_preset(
        "nano",
        seed=0,
        steps=24,
        problems_per_step=3,
        n_codes=4,
        n_suites=4,
        max_code_tokens=32,
        max_test_tokens=96,
        lr=3e-4,
        warmup_steps=2,
        lr_schedule="constant",
        sft_steps=120,
        sft_tester_steps=60,
        sft_batch_size=16,
        sft_lr=5e-3,
        checkpoint_every=100,
        eval_before_after=False,
        output_dir=str(tmp_path),
    )
    trainer = Trainer(config, train_source=FixedProblems(problems), log=lambda _m: None)
    return trainer.train().history


def test_short_rl_run_raises_both_rewards(tmp_path: Path) -> None:
    history = run(tmp_path)

    def mean(key: str, rows: list[dict[str, float]]) -> float:
        return statistics.fmean(r[key] for r in rows)

    first, last = history[:WINDOW], history[-WINDOW:]
    coder_start, coder_end = mean("coder/reward", first), mean("coder/reward", last)
    tester_start, tester_end = mean("tester/reward", first), mean("tester/reward", last)
    print(
        f"coder {coder_start:.3f} -> {coder_end:.3f}; tester {tester_start:.3f} -> {tester_end:.3f}"
    )
    assert coder_end >= coder_start + 0.15
    assert tester_end >= tester_start + 0.05
