"""The canonical fast paths (suites, literal calls, normal forms) agree with the ast paths."""

from __future__ import annotations

import ast
import random
import string
from typing import Any

import pytest

from codea1_env.problems import load_source
from codea1_env.sandbox.worker import plain
from codea1_env.scoring import testcases
from codea1_env.scoring.arguments import arguments_expression
from codea1_env.scoring.canonical import canonical_cases
from codea1_env.scoring.literal_grammar import (
    is_canonical_expression,
    is_literal_call,
    simple_value,
)
from codea1_env.scoring.testcases import ParsedTests, parse_tests


def _by_ast(monkeypatch: pytest.MonkeyPatch, text: str, entry: str, max_cases: int) -> ParsedTests:
    with monkeypatch.context() as patch:
        patch.setattr(testcases, "canonical_cases", lambda *args: None)
        return parse_tests(text, entry, max_cases=max_cases)


def _fast(code: str, entry: str = "f", max_cases: int = 64) -> bool:
    found = canonical_cases(
        code, entry, max_cases, testcases.MAX_EXPRESSION_NODES, testcases.MAX_STATEMENT_CHARS
    )
    return found is not None


def _agree(
    monkeypatch: pytest.MonkeyPatch, code: str, entry: str = "f", max_cases: int = 64
) -> bool:
    """Assert both paths give the same result; return whether the fast path answered."""
    text = f"```python\n{code}\n```"
    assert parse_tests(text, entry, max_cases=max_cases) == _by_ast(
        monkeypatch, text, entry, max_cases
    ), code
    return _fast(code, entry, max_cases)


CANONICAL = [
    "assert f() == None",
    "assert f(1, -2, 0) == 3",
    "assert f([1, 2, 3], 'ab') == [3, 2, 1]",
    "assert f((), (1,), (1, 2)) == {}",
    "assert f({1, 2}, {'a': [1.5, -0.0]}) == {(1, 2): None}",
    'assert f("it\'s") == \'say "hi"\'',
    "assert f(0.1, 0.0001, 123456789012345.6) == 1.0",
    "assert f(0.30000000000000004) == 0.1",
    "assert f([[[]]], [[1], [2, [3]]]) == True",
    "assert f('a == b') == 'x == y'",
    "assert f(12345678901234567890) == -1",
    "# a comment\nassert f(1) == 1\n\nassert f(2) == 2  ",
]

NOT_CANONICAL = [
    "assert f(1,2) == 3",
    "assert f( 1) == 1",
    'assert f("abc") == 1',
    "assert f('it\\'s') == 1",
    "assert f('a\\nb') == 1",
    "assert f(1.50) == 1",
    "assert f(00) == 0",
    "assert f(1_000) == 1",
    "assert f(1e5) == 1",
    "assert f(0.00001) == 1",
    "assert f(12345678901234567.0) == 1",
    "assert f(0.1000000000000000055511) == 1",
    "assert f(- 1) == 1",
    "assert f(--1) == 1",
    "assert f((1)) == 1",
    "assert f([1, 2,]) == 1",
    "assert f({1: 2, 3}) == 1",
    "assert f(x) == 1",
    "assert f(n=1) == 1",
    "assert f(*[1]) == 1",
    "assert f(1) == 1, 'message'",
    "assert f(1) == 1  # comment",
    "assert f(1) == 1 == 1",
    "assert f(1) != 1",
    "assert g(1) == 1",
    "assert f(1)[0] == 1",
    "assert f(1) == f(1)",
    "  assert f(1) == 1",
    "assert\tf(1) == 1",
    "assert f('\u00e9') == 1",
    "assert f(1) == 1\r\nassert f(2) == 2",
    "x = 1\nassert f(x) == 1",
    "assert f(1) == 1; assert f(2) == 2",
    "assert f(1, ') == ') == 1",
    "assert f('a' 'b') == 1",
    "assert f('a') == 'x) == y'",
    "assert f(True(1)) == 1",
    "assert f(1)(2) == 1",
    "assert f([1] [0]) == 1",
    "assert f([1, 2) == 1",
    "assert f(1) == [1",
    "assert f(1) ==",
    "assert f(1 == 1",
    "def f(x):\n    return x\nassert f(1) == 1",
    "assert f(" + "[" * 40 + "]" * 40 + ") == 1",
    "assert f(" + "9" * 700 + ") == 1",
]


@pytest.mark.parametrize("code", CANONICAL)
def test_canonical_suites_take_the_fast_path_and_agree(
    monkeypatch: pytest.MonkeyPatch, code: str
) -> None:
    assert _agree(monkeypatch, code)


@pytest.mark.parametrize("code", NOT_CANONICAL)
def test_other_suites_go_to_ast_and_agree(monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    assert not _agree(monkeypatch, code)


def test_too_many_cases_are_rejected_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    code = "\n".join(f"assert f({i}) == {i}" for i in range(6))
    assert _agree(monkeypatch, code, max_cases=4)
    parsed = parse_tests(code, "f", max_cases=4)
    assert [r.reason for r in parsed.rejected] == ["too_many", "too_many"]


def test_a_statement_too_long_is_rejected_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    long_line = "assert f('" + "a" * 4100 + "') == 1"
    code = "\n".join(["assert f(1) == 1", long_line, "assert f(2) == 2"])
    assert _agree(monkeypatch, code)
    parsed = parse_tests(code, "f")
    assert [r.reason for r in parsed.rejected] == ["too_long"] and len(parsed.cases) == 2
    assert not _agree(monkeypatch, long_line)  # no case at all: the ast path says why
    assert not _agree(monkeypatch, "assert f('" + "a" * 4100 + "' == 1")  # not an assert


def test_a_call_too_large_for_the_node_limit_goes_to_ast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(testcases, "MAX_EXPRESSION_NODES", 40)
    small, large = "assert f([1, 2]) == 1", "assert f(" + repr(list(range(-30, 0))) + ") == 1"
    assert _agree(monkeypatch, small)
    assert not _agree(monkeypatch, large)
    assert parse_tests(large, "f").rejected[0].reason == "too_long"


def test_an_entry_point_that_is_not_a_name_goes_to_ast(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not _agree(monkeypatch, "assert None(1) == 1", entry="None")
    assert not _agree(monkeypatch, "assert f.g(1) == 1", entry="f.g")


def _normalized_asserts(test: str, entry: str) -> list[str]:
    """Each ``assert CALL == EXPECTED`` of a problem's test, as ``ast.unparse`` writes it."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return []
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Call):
            call = ast.Call(ast.Name(entry, ast.Load()), node.left.args, node.left.keywords)
            lines.append(f"assert {ast.unparse(call)} == {ast.unparse(node.comparators[0])}")
    return lines


def test_every_bank_and_humaneval_test_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = slow = 0
    for spec in ("bank", "humaneval"):
        source = load_source(spec)
        for task_id in source.ids():
            problem = source[task_id]
            lines = [
                line
                for test in problem.tests
                for line in _normalized_asserts(test, problem.entry_point)
            ]
            for at in range(0, len(lines), 8):  # suites of up to 8 tests, as a tester writes
                if _agree(monkeypatch, "\n".join(lines[at : at + 8]), problem.entry_point):
                    fast += 1
                else:
                    slow += 1
    assert fast > 250 and slow > 5  # 291 and 12 when written


# ------------------------------------------------------------------ generated suites
_TEXT_CHARS = string.printable + "\u00e9\u4e2d\x00\x7f"
_FLOATS = [0.0, -0.0, 0.1, 0.5, 1e-4, 1e-5, 9.999e-5, 1e15, 1e16, 1.5e16, 0.1 + 0.2, 1 / 3, 2.5]


def _value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(10 if depth < 3 else 5)
    if kind == 0:
        return rng.choice([0, 1, -1, 7, 10**20, -(10**18), rng.randrange(-1000, 1000)])
    if kind == 1:
        return rng.choice(_FLOATS + [rng.uniform(-1e6, 1e6), rng.uniform(-1, 1) * 1e-6])
    if kind == 2:
        return "".join(rng.choice(_TEXT_CHARS) for _ in range(rng.randrange(6)))
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return rng.randrange(100)
    items = [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind in (5, 6):
        return items
    if kind == 7:
        return tuple(items)
    hashable = [i for i in items if isinstance(i, (int, float, str, tuple, type(None)))]
    try:
        if kind == 8:
            return set(hashable) or [1]
        return {key: rng.choice(items or [0]) for key in hashable}
    except TypeError:  # a tuple holding a list
        return items


def _line(rng: random.Random) -> str:
    arguments = ", ".join(repr(_value(rng, 0)) for _ in range(rng.randrange(4)))
    return f"assert f({arguments}) == {_value(rng, 0)!r}"


def _perturbed(rng: random.Random, line: str) -> str:
    at = rng.randrange(len(line))
    change = rng.randrange(4)
    if change == 0:
        return line[:at] + line[at + 1 :]
    if change == 1:
        return line[:at] + rng.choice(" ,()[]{}:'\"-.0e_#x\\") + line[at:]
    if change == 2:
        return line[:at] + line[at].swapcase() + line[at + 1 :]
    return line.replace(", ", ",", 1)


def test_generated_suites_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20261204)
    fast = slow = 0
    for _ in range(600):
        lines = [_line(rng) for _ in range(rng.randrange(1, 5))]
        if rng.random() < 0.5:
            pick = rng.randrange(len(lines))
            lines[pick] = _perturbed(rng, lines[pick])
        if _agree(monkeypatch, "\n".join(lines)):
            fast += 1
        else:
            slow += 1
    assert fast > 100 and slow > 100  # both paths were exercised


# ------------------------------------------------------------------ literal calls, normal forms
def _literal_arguments_by_ast(text: str) -> bool:
    """The ast answer: a call by name whose every argument ast.literal_eval accepts (plain)."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.keywords:
        return False
    for argument in node.args:
        try:
            value = ast.literal_eval(argument)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
        if not plain.is_plain(value):
            return False
    return True


def _expressions(rng: random.Random) -> list[str]:
    arguments = ", ".join(repr(_value(rng, 0)) for _ in range(rng.randrange(4)))
    texts = [f"f({arguments})", repr(_value(rng, 0))]
    texts += [_perturbed(rng, text) for text in texts if text]
    unhashable = rng.choice(["[1]", "{1: 2}", "{3}", "(1, [2])"])
    texts += [f"f({{{unhashable}: 1}})", f"f({{{unhashable}}})", f"f(({unhashable},))"]
    return texts


def test_literal_calls_and_normal_forms_agree_with_ast() -> None:
    rng = random.Random(4)
    calls = normal = 0
    for _ in range(1500):
        for text in _expressions(rng):
            if is_literal_call(text):
                calls += 1
                assert _literal_arguments_by_ast(text), text
                assert arguments_expression(text) is None
            if is_canonical_expression(text):
                normal += 1
                assert ast.unparse(ast.parse(text, mode="eval").body) == text, text
    assert calls > 500 and normal > 1000
    assert not is_literal_call("f({[1]: 2})") and not is_literal_call("f({(1, [2])})")
    assert is_literal_call("f({(1, (2,)): [3]}, ((1, [2]),))")


def test_simple_values_are_what_literal_eval_gives() -> None:
    rng = random.Random(5)
    known = 0
    texts = [
        "True",
        "None",
        "-0",
        "-0.0",
        "0.0001",
        "[]",
        "[1, -2.5, 0.30000000000000004]",
        "'a\"b'",
    ]
    for _ in range(3000):
        value = rng.choice([_value(rng, 2), [rng.choice(_FLOATS) for _ in range(3)]])
        texts += [repr(value), _perturbed(rng, repr(value) or "0")]
    for text in texts:
        ok, value = simple_value(text)
        if ok:
            known += 1
            expected = ast.literal_eval(text)
            assert type(value) is type(expected) and repr(value) == repr(expected), text
    assert known > 1500
    assert simple_value("[1, 'a']") == (False, None) and simple_value("1e-05") == (False, None)
