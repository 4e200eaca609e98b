"""The built-in bank, the procedural family and HumanEval: each GT passes its own tests."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codea1_env.problems import BankSource, HumanEvalSource, Problem, ProceduralSource
from codea1_env.sandbox.worker.plain import is_plain, values_equal

ROOT = Path(__file__).resolve().parent.parent
BANK = BankSource()
BANK_PROBLEMS = list(BANK)
CATEGORIES = {"strings", "lists", "math", "dicts", "boundary"}


def run_gt_test(problem: Problem, test: str) -> tuple[Any, Any]:
    """Execute the GT in a fresh namespace; return (GT output, expected) of one assert line."""
    namespace: dict[str, Any] = {}
    exec(problem.gt_program, namespace)
    compare = ast.parse(test).body[0].test  # type: ignore[attr-defined]
    got = eval(ast.unparse(compare.left), namespace)
    expected = eval(ast.unparse(compare.comparators[0]), namespace)
    exec(test, namespace)  # the plain assert passes too
    return got, expected


def assert_call_shape(test: str, entry_point: str) -> None:
    """The test is exactly ``assert entry_point(...) == expected``."""
    module = ast.parse(test)
    assert len(module.body) == 1
    statement = module.body[0]
    assert isinstance(statement, ast.Assert) and statement.msg is None
    compare = statement.test
    assert isinstance(compare, ast.Compare)
    assert len(compare.ops) == 1 and isinstance(compare.ops[0], ast.Eq)
    call = compare.left
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    assert call.func.id == entry_point


# --- the built-in bank ---------------------------------------------------------------------------


def test_bank_size_ids_and_categories() -> None:
    assert len(BANK) >= 64
    ids = BANK.ids()
    assert len(set(ids)) == len(ids)
    assert all(p.task_id == f"bank/{p.entry_point}" for p in BANK_PROBLEMS)
    counts = Counter(tag for p in BANK_PROBLEMS for tag in p.tags)
    for category in CATEGORIES:
        assert counts[category] >= 8, (category, counts)
    assert all(set(p.tags) <= CATEGORIES and p.tags for p in BANK_PROBLEMS)


def test_bank_file_is_generated_by_the_script() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_bank.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("problem", BANK_PROBLEMS, ids=lambda p: p.task_id)
def test_bank_problem_is_well_formed(problem: Problem) -> None:
    header = problem.prompt.splitlines()[0]
    assert header.startswith(f"def {problem.entry_point}(") and header.endswith(":")
    assert header.endswith("):") or header.endswith(":") and "->" in header
    assert problem.prompt.endswith('"""') and not problem.prompt.endswith("\n")
    prompt_tree = ast.parse(problem.prompt)
    (function,) = prompt_tree.body
    assert isinstance(function, ast.FunctionDef) and function.name == problem.entry_point
    assert ast.get_docstring(function) and len(function.body) == 1
    assert problem.canonical_solution.startswith(problem.prompt)
    (solution,) = ast.parse(problem.canonical_solution).body
    assert isinstance(solution, ast.FunctionDef) and solution.name == problem.entry_point
    assert problem.gt_program == problem.canonical_solution
    assert 6 <= len(problem.tests) <= 10
    assert problem.difficulty is not None and 0.1 <= problem.difficulty <= 0.9
    assert problem.kind == "function" and not problem.io_pairs


@pytest.mark.parametrize("problem", BANK_PROBLEMS, ids=lambda p: p.task_id)
def test_bank_gt_passes_its_tests(problem: Problem) -> None:
    calls = set()
    for test in problem.tests:
        assert_call_shape(test, problem.entry_point)
        got, expected = run_gt_test(problem, test)
        assert is_plain(got), (test, got)
        assert values_equal(got, expected), (test, got, expected)
        calls.add(ast.unparse(ast.parse(test).body[0].test.left))  # type: ignore[attr-defined]
    assert len(calls) == len(problem.tests), "duplicate calls among the GT tests"


# --- the procedural family ----------------------------------------------------------------------


def procedural_sample() -> list[Problem]:
    train = ProceduralSource(seed=3, n=2000)
    test = ProceduralSource(seed=3, split="test")
    rng = np.random.default_rng(0)
    return [train.sample(rng) for _ in range(60)] + [test.sample(rng) for _ in range(30)]


PROCEDURAL = procedural_sample()


@pytest.mark.parametrize("problem", PROCEDURAL, ids=lambda p: p.task_id)
def test_procedural_gt_passes_boundary_tests(problem: Problem) -> None:
    assert problem.prompt.startswith("def f(x: int) -> int:\n")
    assert problem.prompt.endswith('."""') and problem.canonical_solution.startswith(problem.prompt)
    assert problem.entry_point == "f" and len(problem.tests) >= 6
    xs = set()
    for test in problem.tests:
        assert_call_shape(test, "f")
        got, expected = run_gt_test(problem, test)
        assert type(got) is int and values_equal(got, expected)
        xs.add(ast.literal_eval(ast.parse(test).body[0].test.left.args[0]))  # type: ignore[attr-defined]
    params = problem.metadata["params"]
    thresholds = [params[k] for k in ("t", "lo", "hi") if k in params]
    for t in thresholds:
        assert {t - 1, t, t + 1} <= xs, (problem.task_id, t, sorted(xs))


FLIPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
}


def mutants(program: str) -> list[str]:
    """Programs with one comparison flipped (< vs <=, > vs >=) or one threshold moved by 1."""

    def compares(tree: ast.AST) -> list[ast.Compare]:
        return [node for node in ast.walk(tree) if isinstance(node, ast.Compare)]

    out = []
    for index, compare in enumerate(compares(ast.parse(program))):
        for op_index in range(len(compare.ops)):
            tree = ast.parse(program)
            target = compares(tree)[index]
            target.ops[op_index] = FLIPS[type(target.ops[op_index])]()
            out.append(ast.unparse(tree))
        operands = [compare.left, *compare.comparators]
        for operand_index, operand in enumerate(operands):
            if isinstance(operand, ast.Name):
                continue
            for delta in (1, -1):
                tree = ast.parse(program)
                target = compares(tree)[index]
                moved = ast.parse(str(ast.literal_eval(operand) + delta), mode="eval").body
                if operand_index == 0:
                    target.left = moved
                else:
                    target.comparators[operand_index - 1] = moved
                out.append(ast.unparse(ast.fix_missing_locations(tree)))
    return out


@pytest.mark.parametrize("problem", PROCEDURAL[:40], ids=lambda p: p.task_id)
def test_procedural_tests_kill_boundary_mutants(problem: Problem) -> None:
    """A wrong comparison or an off-by-one threshold is a real bug that the GT tests catch."""
    programs = mutants(problem.canonical_solution)
    assert len(programs) >= 3
    for mutant in programs:
        assert surviving_tests(mutant, problem.tests) < len(problem.tests), mutant


def surviving_tests(program: str, tests: tuple[str, ...]) -> int:
    namespace: dict[str, Any] = {}
    exec(program, namespace)
    passed = 0
    for test in tests:
        try:
            exec(test, namespace)
        except AssertionError:
            continue
        passed += 1
    return passed


def test_boundary_mutants_survive_tests_without_boundary_points() -> None:
    """The mutant check above can fail: far-away points alone do not catch the mutants."""
    problem = next(p for p in PROCEDURAL if p.metadata["family"] == "step")
    t = problem.metadata["params"]["t"]
    far = tuple(
        test for test in problem.tests if abs(int(test.split("(")[1].split(")")[0]) - t) > 1
    )
    programs = mutants(problem.canonical_solution)
    assert any(surviving_tests(m, far) == len(far) for m in programs)


def test_procedural_is_deterministic_and_splits_are_disjoint() -> None:
    first, again = ProceduralSource(seed=5, n=300), ProceduralSource(seed=5, n=300)
    assert [p.canonical_solution for p in first] == [p.canonical_solution for p in again]
    assert [p.tests for p in first] == [p.tests for p in again]
    other_seed = ProceduralSource(seed=6, n=300)
    assert [p.canonical_solution for p in first] != [p.canonical_solution for p in other_seed]
    held_out = ProceduralSource(seed=5, n=300, split="test")
    assert not set(first.ids()) & set(held_out.ids())
    train_code = {p.canonical_solution.split('"""')[2] for p in first}
    test_code = {p.canonical_solution.split('"""')[2] for p in held_out}
    assert not train_code & test_code
    families = Counter(p.metadata["family"] for p in first)
    assert set(families) == {"step", "range", "linear", "three_way"}


# --- HumanEval ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def humaneval() -> HumanEvalSource:
    return HumanEvalSource()


def test_humaneval_source_converts_all_164_problems(humaneval: HumanEvalSource) -> None:
    source = humaneval
    assert len(source) == 164
    assert source.ids() == [f"HumanEval/{i}" for i in range(164)]
    recorded = {p.task_id for p in source if p.metadata.get("tests_recorded")}
    assert recorded == {"HumanEval/4", "HumanEval/32", "HumanEval/38", "HumanEval/50"}
    for problem in source:
        assert problem.tests and "def check(candidate)" in problem.metadata["test"]
        for test in problem.tests:
            assert_call_shape(test, problem.entry_point)
    first = source["HumanEval/0"]
    assert first.tests[0] == (
        "assert has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True"
    )
    assert first.gt_program == first.prompt + first.canonical_solution


@pytest.mark.parametrize("task", [0, 2, 13, 32, 38, 50, 52, 61, 107, 163])
def test_humaneval_gt_passes_converted_tests(task: int, humaneval: HumanEvalSource) -> None:
    problem = humaneval[f"HumanEval/{task}"]
    for test in problem.tests:
        got, expected = run_gt_test(problem, test)
        assert is_plain(got) and values_equal(got, expected), (test, got)
