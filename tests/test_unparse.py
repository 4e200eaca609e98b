"""The fast unparse writes what ast.unparse writes and counts what ast.walk counts."""

from __future__ import annotations

import ast
import random
from typing import Any, cast

import pytest

from codea1_env.problems import load_source
from codea1_env.scoring.inliner import TOO_LARGE
from codea1_env.scoring.testcases import parse_tests
from codea1_env.scoring.unparse import node_count, unparse, unparse_counted


def _expressions(source: str) -> list[ast.AST]:
    """Every expression node of every assert in ``source`` (whole tests and their parts)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [node for node in ast.walk(tree) if isinstance(node, ast.expr)]


def _corpus() -> list[ast.AST]:
    nodes: list[ast.AST] = []
    for spec in ("bank", "humaneval"):
        src = load_source(spec)
        for task_id in src.ids():
            problem = src[task_id]
            for test in problem.tests:
                nodes.extend(_expressions(test))
    return nodes


def _check(node: ast.AST) -> None:
    text, count = unparse_counted(node)
    assert text == ast.unparse(node)
    assert count == sum(1 for _ in ast.walk(node)) == node_count(node)
    assert unparse(node) == text


def test_same_as_ast_on_every_bank_and_humaneval_test() -> None:
    nodes = _corpus()
    assert len(nodes) > 10_000
    for node in nodes:
        _check(node)


_ATOMS = [
    "0",
    "-1",
    "+2",
    "~3",
    "10**400 if False else 1",  # not in the subset: falls back
    "1.5",
    "-0.0",
    "1e309",
    "-1e309",
    "1e-7",
    "2j",
    "-3.5j",
    "'a'",
    '"it\'s"',
    "'\\n\\t\\x00'",
    "'\\u00e9\\U0001f600'",
    "b'\\xff'",
    "r'\\d'",
    "u'x'",
    "True",
    "None",
    "...",
    "x",
    "float('nan')",
    "f(*a)",
    "f(**k)",
    "a.b",
    "a[0]",
    "[*a]",
    "{**d}",
    "{}",
    "()",
    "[]",
    "set()",
    "not x",
    "-(not x)",
    "-(1, 2)",
    "(lambda y: y)(1)",
    "[i for i in range(3)]",
    "a + b",
]


def _random_expression(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(_ATOMS)
    parts = [_random_expression(rng, depth - 1) for _ in range(rng.randint(0, 4))]
    shape = rng.randrange(8)
    if shape == 0:
        return f"[{', '.join(parts)}]"
    if shape == 1:
        return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
    if shape == 2 and parts:
        return f"{{{', '.join(parts)}}}"
    if shape == 3:
        return "{" + ", ".join(f"{p}: {q}" for p, q in zip(parts, reversed(parts))) + "}"
    if shape == 4:
        return f"-{_random_expression(rng, depth - 1)}"
    if shape == 5:
        keywords = [f"k{i}={p}" for i, p in enumerate(parts)]
        return f"g({', '.join(parts[:1] + keywords[1:])})"
    if shape == 6:
        return f"~({_random_expression(rng, depth - 1)})"
    return f"f({', '.join(parts)})"


@pytest.mark.parametrize("seed", range(4))
def test_same_as_ast_on_generated_expressions(seed: int) -> None:
    rng = random.Random(seed)
    checked = 0
    for _ in range(1500):
        text = _random_expression(rng, 4)
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.expr):
                _check(node)
                checked += 1
    assert checked > 5000


def test_nodes_built_by_hand_match_too() -> None:
    # what the parser's argument substitution builds: keywords without positions, a bare Name
    call = ast.Call(
        func=ast.Name("f", ast.Load()),
        args=[ast.Constant(1), ast.Name("x")],
        keywords=[ast.keyword(arg="k", value=ast.Constant("v"))],
    )
    _check(call)
    _check(ast.Constant(float("nan")))
    _check(ast.Constant(float("-inf")))
    _check(ast.Set(elts=[]))  # ast writes {*()}
    _check(ast.Constant(cast(Any, (1, 2))))  # typeshed allows no tuple; a tree may hold one


def test_too_long_integer_raises_like_ast() -> None:
    node = ast.Constant(10**5000)
    with pytest.raises(ValueError):
        ast.unparse(node)
    with pytest.raises(ValueError):
        unparse(node)


def _slow(node: ast.AST) -> tuple[str, int]:
    return ast.unparse(node), sum(1 for _ in ast.walk(node))


def test_parser_output_is_what_ast_alone_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    from codea1_env.scoring import testcases

    suites = []
    for spec in ("bank", "humaneval"):
        src = load_source(spec)
        for task_id in src.ids():
            problem = src[task_id]
            suites.append((problem.entry_point, "\n".join(problem.tests)))
    edge = [
        "x = [1, 2]",
        "assert f(x) == [2, 1]",
        "assert f(" + "1 + " * 700 + "1) == 1",  # over the node budget after nothing
        "big = [" + ", ".join(["1"] * 1200) + "]",
        "assert f(big, big) == 0",  # over the budget after substitution
        "assert f(" + ", ".join(["-1"] * 700) + ") == 1",  # over the budget as written
        "assert f(" + "-" * 50 + "1) == -1",
        "assert f(float('inf'), k=-2) == (1,)",
        "assert f({1: 'a'}, {2}, ()) == {}",
    ]
    suites.append(("f", "\n".join(edge)))
    fast = [parse_tests(text, entry) for entry, text in suites]
    monkeypatch.setattr(testcases, "unparse_counted", _slow)
    monkeypatch.setattr(testcases, "unparse", ast.unparse)
    slow = [parse_tests(text, entry) for entry, text in suites]
    assert fast == slow
    # the 700-deep sum (recursion), and the two over the node budget
    assert [(r.line, r.reason) for r in fast[-1].rejected] == [(n, TOO_LARGE) for n in (3, 5, 6)]
    assert len(fast[-1].cases) == 4


def test_monitor_counts_are_what_ast_dump_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    from codea1_env.scoring import monitor

    suites = [
        ("f", "assert f(1) == 0\nassert f(2) == 0\nassert f(3) == (0)"),
        ("f", "assert f(1) == f(1)\nassert f(2) == [f( 2 ), 1]\nassert f(3) == g(f(3))"),
        ("f", "assert f(1) == 0\nassert f(1) == 1\nassert f(x) == 2\nassert g(1) == 1"),
        ("f", "assert f([1,2]) == [1, 2]\nassert f([1, 2]) == [1,2]"),
    ]
    for spec in ("bank", "humaneval"):
        src = load_source(spec)
        for task_id in src.ids()[:40]:
            problem = src[task_id]
            suites.append((problem.entry_point, "\n".join(problem.tests)))
    parsed = [(parse_tests(text, entry), entry) for entry, text in suites]
    fast = [monitor.scan_suite(p.cases, p.rejected, entry) for p, entry in parsed]

    def dump_normal(source: str) -> str:
        try:
            return ast.dump(ast.parse(source, mode="eval").body)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return source.strip()

    monkeypatch.setattr(monitor, "_normal", dump_normal)
    monkeypatch.setattr(monitor, "unparse", ast.dump)
    monkeypatch.setattr(monitor, "_all_same", lambda xs: len({dump_normal(x) for x in xs}) == 1)
    slow = [monitor.scan_suite(p.cases, p.rejected, entry) for p, entry in parsed]
    assert fast == slow
    assert fast[0].trivial_constant == 3 and fast[1].trivial_tautology == 3
