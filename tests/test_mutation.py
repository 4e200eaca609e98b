"""AST mutation operators, mutant generation and the per-program cache."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from codea1_env.scoring.mutation import OPERATORS, Mutant, MutantCache, generate_mutants


def sources(program: str, operator: str) -> list[str]:
    return [m.source for m in generate_mutants(program, operators=[operator])]


# --- each operator, expected mutants listed by hand ---------------------------------------------


def test_comparison_boundary_negation_and_mirror() -> None:
    assert sources("def f(x):\n    return x < 3\n", "comparison") == [
        "def f(x):\n    return x <= 3",
        "def f(x):\n    return x >= 3",
        "def f(x):\n    return x > 3",
    ]
    assert sources("def f(x):\n    return x >= 3\n", "comparison") == [
        "def f(x):\n    return x > 3",
        "def f(x):\n    return x < 3",
        "def f(x):\n    return x <= 3",
    ]


def test_comparison_equality_membership_identity() -> None:
    program = "def f(x, xs):\n    return x == 1 or x in xs or x is None\n"
    assert sources(program, "comparison") == [
        "def f(x, xs):\n    return x != 1 or x in xs or x is None",
        "def f(x, xs):\n    return x == 1 or x not in xs or x is None",
        "def f(x, xs):\n    return x == 1 or x in xs or x is not None",
    ]


def test_comparison_chained_mutates_each_operator() -> None:
    got = sources("def f(x):\n    return 0 <= x != 5\n", "comparison")
    assert got == [
        "def f(x):\n    return 0 < x != 5",
        "def f(x):\n    return 0 > x != 5",
        "def f(x):\n    return 0 >= x != 5",
        "def f(x):\n    return 0 <= x == 5",
    ]


def test_off_by_one_constants() -> None:
    assert sources("def f(x):\n    return x + 1\n", "off_by_one") == [
        "def f(x):\n    return x + 2",
        "def f(x):\n    return x + 0",
    ]


def test_off_by_one_negative_literal_is_one_site() -> None:
    assert sources("def f(xs):\n    return xs[-1]\n", "off_by_one") == [
        "def f(xs):\n    return xs[0]",
        "def f(xs):\n    return xs[-2]",
    ]


def test_off_by_one_range_bounds_and_slices() -> None:
    assert sources("def f(n):\n    return list(range(n))\n", "off_by_one") == [
        "def f(n):\n    return list(range(n + 1))",
        "def f(n):\n    return list(range(n - 1))",
    ]
    assert sources("def f(s, k):\n    return s[1:k]\n", "off_by_one") == [
        "def f(s, k):\n    return s[2:k]",
        "def f(s, k):\n    return s[0:k]",
        "def f(s, k):\n    return s[1:k + 1]",
        "def f(s, k):\n    return s[1:k - 1]",
    ]


def test_off_by_one_skips_booleans() -> None:
    assert sources("def f(x):\n    return True\n", "off_by_one") == []


def test_boolean_operator_not_and_constants() -> None:
    assert sources("def f(a, b):\n    return a and not b\n", "boolean") == [
        "def f(a, b):\n    return a or not b",
        "def f(a, b):\n    return a and b",
    ]
    assert sources("def f():\n    ok = False\n    return ok or True\n", "boolean") == [
        "def f():\n    ok = True\n    return ok or True",
        "def f():\n    ok = False\n    return ok and True",
        "def f():\n    ok = False\n    return ok or False",
    ]


def test_arithmetic_operators_in_source_order() -> None:
    assert sources("def f(a, b):\n    return a * b - a % b\n", "arithmetic") == [
        "def f(a, b):\n    return a // b - a % b",
        "def f(a, b):\n    return a * b + a % b",
        "def f(a, b):\n    return a * b - a // b",
    ]


def test_arithmetic_augmented_assignment_and_unary_minus() -> None:
    program = "def f(x):\n    x += 2\n    return -x / 2\n"
    assert sources(program, "arithmetic") == [
        "def f(x):\n    x -= 2\n    return -x / 2",
        "def f(x):\n    x += 2\n    return x / 2",
        "def f(x):\n    x += 2\n    return -x * 2",
    ]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("[x]", ["None", "[]"]),
        ("(x, x)", ["None", "()"]),
        ("{x: 1}", ["None", "{}"]),
        ("{x}", ["None", "set()"]),
        ("f'{x}'", ["None", "''"]),
        ("x > 1", ["None", "not x > 1"]),
        ("len(x)", ["None", "0", "-len(x)"]),
        ("x", ["None", "0"]),
        ("1 if x else 2", ["None", "0", "-(1 if x else 2)"]),
    ],
)
def test_return_value_by_obvious_kind(expr: str, expected: list[str]) -> None:
    got = sources(f"def f(x):\n    return {expr}\n", "return_value")
    assert got == [f"def f(x):\n    return {e}" for e in expected]


def test_return_value_leaves_bare_and_none_returns() -> None:
    assert sources("def f(x):\n    if x:\n        return\n    return None\n", "return_value") == []


# --- scope, validity, dedupe ----------------------------------------------------------------------


def test_only_function_bodies_are_mutated() -> None:
    program = (
        "LIMIT = 10\n"
        "\n"
        "\n"
        "@decorate(3)\n"
        "def f(x, k=3):\n"
        '    """Return 1 when x < 10 (a docstring, left alone)."""\n'
        "    return x < LIMIT\n"
        "\n"
        "\n"
        "class C:\n"
        "    SIZE = 2\n"
        "\n"
        "    def m(self, y: int = 4) -> int:\n"
        '        """Doc."""\n'
        "        return y * 5\n"
    )
    mutants = generate_mutants(program)
    assert mutants
    for mutant in mutants:
        tree = ast.parse(mutant.source)
        f, cls = tree.body[1], tree.body[2]
        assert ast.unparse(tree.body[0]) == "LIMIT = 10"
        assert isinstance(f, ast.FunctionDef) and isinstance(cls, ast.ClassDef)
        assert ast.unparse(f.decorator_list[0]) == "decorate(3)"
        assert ast.unparse(f.args) == "x, k=3"
        assert ast.get_docstring(f) == "Return 1 when x < 10 (a docstring, left alone)."
        assert ast.unparse(cls.body[0]) == "SIZE = 2"
        method = cls.body[1]
        assert isinstance(method, ast.FunctionDef)
        assert ast.unparse(method.args) == "self, y: int=4"
    assert {m.line for m in mutants} == {7, 15}


def test_nested_functions_are_mutated_once() -> None:
    program = "def outer(x):\n    def inner(y):\n        return y + 1\n    return inner(x)\n"
    mutants = generate_mutants(program, operators=["arithmetic"])
    assert [m.source for m in mutants] == [
        "def outer(x):\n\n    def inner(y):\n        return y - 1\n    return inner(x)"
    ]
    assert mutants[0].line == 3


def test_mutants_are_valid_distinct_and_differ_from_original() -> None:
    program = (
        "def clamp(x, lo, hi):\n"
        "    if x < lo:\n"
        "        return lo\n"
        "    if x > hi:\n"
        "        return hi\n"
        "    return x\n"
        "\n"
        "def count(xs):\n"
        "    n = 0\n"
        "    for i in range(len(xs) - 1):\n"
        "        if xs[i] == xs[i + 1] and not xs[i] is None:\n"
        "            n += 1\n"
        "    return n\n"
    )
    mutants = generate_mutants(program)
    texts = [m.source for m in mutants]
    assert len(texts) == len(set(texts)) > 30
    original = ast.unparse(ast.parse(program))
    assert original not in texts and program not in texts
    for mutant in mutants:
        compile(mutant.source, "<mutant>", "exec")
        assert mutant.operator in OPERATORS
        assert 1 <= mutant.line <= 13
        assert mutant.description


def test_dedupe_keeps_the_first_operator() -> None:
    # True -> False comes from "boolean" and from "return_value"; kept once, as "boolean".
    mutants = generate_mutants("def f():\n    return True\n")
    assert [(m.source, m.operator) for m in mutants] == [
        ("def f():\n    return False", "boolean"),
        ("def f():\n    return None", "return_value"),
    ]


@pytest.mark.parametrize(
    "bad",
    ["def f(:\n", "", "x = 1 < 2\n", "\x00", "def f(x):\n  return x\n return 1\n", None, 42],
)
def test_bad_or_function_free_source_gives_no_mutants(bad: object) -> None:
    assert generate_mutants(bad) == []  # type: ignore[arg-type]


def test_deeply_nested_source_gives_no_mutants_instead_of_raising() -> None:
    program = "def f(x):\n    return " + "(" * 300 + "x" + ")" * 300 + " + 1\n"
    assert isinstance(generate_mutants(program), list)
    assert generate_mutants("def f(x):\n    return " + "-" * 100000 + "x\n") == []


def test_unknown_operator_and_bad_max_raise_value_error() -> None:
    with pytest.raises(ValueError, match="unknown mutation operator"):
        generate_mutants("def f(x):\n    return x\n", operators=["swap_everything"])
    with pytest.raises(ValueError, match="max_mutants"):
        generate_mutants("def f(x):\n    return x\n", max_mutants=-1)


def test_operator_order_follows_the_operators_argument() -> None:
    program = "def f(x):\n    return x + 1 > 2\n"
    first = generate_mutants(program, operators=["arithmetic", "comparison"])
    assert [m.operator for m in first] == ["arithmetic", "comparison", "comparison", "comparison"]


# --- determinism and sampling ---------------------------------------------------------------------

PROGRAM = (
    "def f(xs, k):\n"
    "    total = 0\n"
    "    for i in range(1, len(xs)):\n"
    "        if xs[i] > k and xs[i - 1] <= k:\n"
    "            total += xs[i] * 2\n"
    "    return total % 7\n"
)


def test_generation_is_deterministic() -> None:
    assert generate_mutants(PROGRAM) == generate_mutants(PROGRAM)


def test_max_mutants_without_rng_is_a_prefix() -> None:
    every = generate_mutants(PROGRAM)
    assert generate_mutants(PROGRAM, max_mutants=5) == every[:5]
    assert generate_mutants(PROGRAM, max_mutants=0) == []
    assert generate_mutants(PROGRAM, max_mutants=10_000) == every


def test_max_mutants_with_rng_is_a_seeded_ordered_subset() -> None:
    every = generate_mutants(PROGRAM)
    a = generate_mutants(PROGRAM, max_mutants=6, rng=np.random.default_rng(1))
    b = generate_mutants(PROGRAM, max_mutants=6, rng=np.random.default_rng(1))
    c = generate_mutants(PROGRAM, max_mutants=6, rng=np.random.default_rng(2))
    assert a == b and a != c and len(a) == 6
    positions = [every.index(m) for m in a]
    assert positions == sorted(positions) and positions != list(range(6))


# --- cache ----------------------------------------------------------------------------------------


def test_cache_computes_once_per_program_and_operators() -> None:
    cache = MutantCache()
    first = cache.get(PROGRAM)
    again = cache.get(PROGRAM)
    assert first == again == generate_mutants(PROGRAM)
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)
    only = cache.get(PROGRAM, operators=["comparison"])
    assert only == generate_mutants(PROGRAM, operators=["comparison"])
    assert len(cache) == 2 and MutantCache.key(PROGRAM) in cache
    assert MutantCache.key(PROGRAM) != MutantCache.key(PROGRAM, ["comparison"])
    again.clear()  # callers get copies: the cached entry is unaffected
    assert cache.get(PROGRAM) == first != []


def test_cache_sampling_and_eviction() -> None:
    cache = MutantCache(max_entries=2)
    sample = cache.get(PROGRAM, max_mutants=3, rng=np.random.default_rng(0))
    assert sample == generate_mutants(PROGRAM, max_mutants=3, rng=np.random.default_rng(0))
    cache.get("def g(x):\n    return x + 1\n")
    cache.get("def h(x):\n    return x - 1\n")
    assert len(cache) == 2 and MutantCache.key(PROGRAM) not in cache
    assert cache.get("not python (") == []
    cache.clear()
    assert len(cache) == 0 and cache.hits == cache.misses == 0
    with pytest.raises(ValueError):
        MutantCache(max_entries=0)


def test_mutant_is_a_frozen_record() -> None:
    mutant = generate_mutants("def f(x):\n    return x + 1\n", operators=["arithmetic"])[0]
    assert mutant == Mutant("def f(x):\n    return x - 1", "arithmetic", 2, "'+' -> '-'")
    with pytest.raises(AttributeError):
        mutant.line = 3  # type: ignore[misc]
