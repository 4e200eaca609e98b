"""The tiny preset's toy: the ``edge`` procedural family and the warm start's two options.

``sft_suite_size`` makes the tester's warm-start targets random-length subsets of the GT asserts;
``sft_coder_mutant_share`` makes that share of the coder's targets an AST mutant of the GT.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import Literal

import numpy as np
import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

from agents.training.config import TrainConfig, add_config_arguments, config_from_args, from_preset
from agents.training.trainer import Trainer
from codea1_env.problems import EDGE_TESTS, FAMILIES, ProceduralSource
from codea1_env.problems.problem import Problem
from codea1_env.scoring.mutation import generate_mutants


def _edge(split: Literal["train", "test"] = "train", n: int = 40) -> list[Problem]:
    source = ProceduralSource(seed=3, n=n, split=split, families=["edge"])
    return [source[i] for i in source.ids()]


def test_edge_family_is_opt_in_with_k_tests_around_the_threshold() -> None:
    assert "edge" not in FAMILIES
    assert {p.metadata["family"] for p in ProceduralSource(seed=3, n=200)} <= set(FAMILIES)
    for problem in _edge():
        params = problem.metadata["params"]
        t = params["t"]
        written = [line.split("f(")[1].split(")")[0] for line in problem.tests]
        inputs = [_offset_value(text, t) for text in written]
        assert len(problem.tests) == EDGE_TESTS == len(set(inputs))
        assert inputs == sorted(inputs) and {t - 1, t, t + 1} <= set(inputs)
        assert all(abs(x - t) <= 9 for x in inputs)
        assert problem.prompt.startswith("def f(x):\n") and '"""' in problem.prompt
        assert problem.canonical_solution.startswith("def f(x):\n")
        assert '"""' not in problem.canonical_solution
        # every boundary mutant fails one GT test: the tests pin the threshold and its side
        expected = {x: (params["a"] if _holds(x, params["op"], t) else params["b"]) for x in inputs}
        assert [f"assert f({w}) == {expected[x]}" for w, x in zip(written, inputs)] == list(
            problem.tests
        )
    train = {p.canonical_solution for p in _edge(n=300)}
    held_out = {p.canonical_solution for p in _edge("test", n=300)}
    assert not train & held_out


def _offset_value(text: str, t: int) -> int:
    """The input an edge test writes as ``t``, ``t + d`` or ``t - d`` (d >= 1), checked."""
    node = ast.parse(text, mode="eval").body
    if isinstance(node, ast.BinOp):
        assert isinstance(node.op, (ast.Add, ast.Sub))
        left, right = ast.literal_eval(node.left), ast.literal_eval(node.right)
        assert left == t and isinstance(right, int) and right >= 1
        return int(left + right if isinstance(node.op, ast.Add) else left - right)
    value = ast.literal_eval(node)
    assert value == t
    return int(value)


def _holds(x: int, op: str, t: int) -> bool:
    return {">": x > t, ">=": x >= t, "<": x < t, "<=": x <= t}[op]


def _trainer(tmp_path: Path, **overrides: object) -> Trainer:
    cfg = from_preset(
        "nano",
        output_dir=str(tmp_path / "run"),
        problems="procedural:3:train:edge",
        **overrides,
    )
    return Trainer(cfg, eval_problems=[], log=lambda _m: None)


def _target(trainer: Trainer, role: str, problem: Problem, rng: np.random.Generator) -> str:
    example = trainer.roles.supervised_example(role, problem, rng)
    return str(trainer.roles.players[role].tokenizer.decode(list(example.target_ids)))


def test_tester_warm_start_suites_are_ordered_subsets_of_the_drawn_size(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, sft_suite_size=(2, 5))
    try:
        rng = np.random.default_rng(0)
        sizes = set()
        for problem in _edge(n=30):
            lines = [ln for ln in _target(trainer, "tester", problem, rng).split("\n") if ln]
            asserts = [ln for ln in lines if ln.startswith("assert ")]
            assert 2 <= len(asserts) <= 5
            positions = [problem.tests.index(a) for a in asserts]
            assert positions == sorted(positions) and len(set(positions)) == len(positions)
            sizes.add(len(asserts))
        assert sizes == {2, 3, 4, 5}
    finally:
        trainer.close()
    default = _trainer(tmp_path / "default")
    try:
        problem = _edge(n=1)[0]
        text = _target(default, "tester", problem, np.random.default_rng(0))
        k = default.config.k
        assert [ln for ln in text.split("\n") if ln.startswith("assert ")] == list(
            problem.tests[:k]
        )
    finally:
        default.close()


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_coder_warm_start_mutant_share(tmp_path: Path, share: float) -> None:
    trainer = _trainer(tmp_path, sft_coder_mutant_share=share)
    try:
        rng = np.random.default_rng(1)
        for problem in _edge(n=10):
            body = _target(trainer, "coder", problem, rng).strip().removesuffix("```").strip()
            gt = problem.canonical_solution.strip()
            mutants = {m.source.strip() for m in generate_mutants(gt)}
            if share == 0.0:
                assert body == gt
            else:
                assert body in mutants and body != gt
    finally:
        trainer.close()


@pytest.mark.parametrize(
    "bad",
    [
        {"sft_suite_size": (0, 3)},
        {"sft_suite_size": (5, 2)},
        {"sft_coder_mutant_share": 1.5},
        {"sft_coder_mutant_share": -0.1},
    ],
)
def test_bad_warm_start_options_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        from_preset("nano", **bad)


def test_suite_size_round_trips_through_json_and_the_command_line(tmp_path: Path) -> None:
    cfg = from_preset("tiny")
    assert cfg.sft_suite_size == (2, 5)
    cfg.save(tmp_path / "config.json")
    assert TrainConfig.load(tmp_path / "config.json") == cfg
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    args = parser.parse_args(["--sft-suite-size", "3", "6", "--sft-coder-mutant-share", "0.5"])
    flagged = config_from_args(args, preset="tiny")
    assert flagged.sft_suite_size == (3, 6) and flagged.sft_coder_mutant_share == 0.5
    with pytest.raises(SystemExit):
        parser.parse_args(["--sft-suite-size", "2"])
