"""Parsing of Test LLM output (codea1_env.scoring.testcases): shapes, inlining, fallbacks, GT grading."""

from __future__ import annotations

import random
import time

import pytest

from codea1_env.problems.problem import IOPair
from codea1_env.scoring.testcases import (
    EMPTY_REASONS,
    REJECT_REASONS,
    Rejected,
    TestCase,
    extract_code,
    extract_fenced_blocks,
    grade_suite,
    parse_io_pairs,
    parse_tests,
)


def calls(text: str, entry: str = "f", inline: str = "arguments") -> list[tuple[str, str]]:
    return [(c.call, c.expected) for c in parse_tests(text, entry, inline=inline).cases]  # type: ignore[arg-type]


def reasons(text: str, entry: str = "f") -> list[str]:
    return [r.reason for r in parse_tests(text, entry).rejected]


# --- accepted and rejected shapes ----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("assert 3 == f(1)", "wrong_shape"),  # the mirror is not accepted (authors' rule)
        ("assert f(1) != 3", "not_equality"),
        ("assert f(1) < 3", "not_equality"),
        ("assert 1 < f(1) == 3", "not_equality"),  # chained comparison
        ("assert f(1)", "not_equality"),
        ("assert not f(1)", "not_equality"),
        ("assert f(1) is None", "not_equality"),
        ("assert g(1) == 3", "wrong_function"),
        ("assert mod.f(1) == 3", "wrong_function"),
        ("assert f == 3", "no_call"),
        ("assert [f(1)] == [3]", "no_call"),
        ("print(f(1))", "not_assert"),
        ("import math", "not_assert"),
        ("for i in range(3):\n    assert f(i) == i", "not_assert"),
    ],
)
def test_rejected_shapes(line: str, reason: str) -> None:
    parsed = parse_tests(line, "f")
    assert parsed.cases == ()
    assert [r.reason for r in parsed.rejected] == [reason]
    assert reason in REJECT_REASONS


def test_shadowing_the_entry_point_is_rejected_when_inlining_anywhere() -> None:
    parsed = parse_tests("f = lambda x: 3", "f", inline="anywhere")
    assert [r.reason for r in parsed.rejected] == ["shadows_entry_point"]
    # the authors' rule only remembers the name (it is never the callee): nothing to reject
    assert parse_tests("f = lambda x: 3", "f").rejected == ()


def test_authors_rule_substitutes_bare_name_arguments_only() -> None:
    text = """
x = [1, 2, 3]
y: int = 4
a = b = 'z'
k = 5
n = 2
n += 3
m = x
assert f(x, y) == a
assert f(x, key=k) == x
assert f(x + [4]) == 1
assert f(*x) == 2
assert f(n) == 3
assert f(m) == 4
"""
    assert calls(text) == [
        ("f([1, 2, 3], y)", "a"),  # annotated and chained assignments are not remembered
        ("f([1, 2, 3], key=5)", "x"),  # keyword values too; never the expected side
        ("f(x + [4])", "1"),  # a name inside an expression stays (the GT run fails on it)
        ("f(*x)", "2"),  # a starred name is not a bare argument
        ("f(2)", "3"),  # ``n += 3`` is not remembered
        ("f(x)", "4"),  # remembered as written: ``m`` becomes ``x``, not its value
    ]
    assert parse_tests(text, "f").rejected == ()


def test_accepted_shape_is_normalized() -> None:
    parsed = parse_tests("assert f( 1,[2 ,3] , k = 'a' ) == ( 4 , )", "f")
    (case,) = parsed.cases
    assert case.call == "f(1, [2, 3], k='a')"
    assert case.expected == "(4,)"
    assert case.line == 1
    assert case.source == "assert f( 1,[2 ,3] , k = 'a' ) == ( 4 , )"
    assert case.assert_source == "assert f(1, [2, 3], k='a') == (4,)"
    assert parsed.reason == ""


def test_message_star_args_and_nested_calls_are_accepted() -> None:
    text = "assert f(1) == 2, 'msg'\nassert f(*[1, 2], **{'a': 1}) == 3\nassert f(len('ab')) == 4"
    assert calls(text) == [
        ("f(1)", "2"),
        ("f(*[1, 2], **{'a': 1})", "3"),
        ("f(len('ab'))", "4"),
    ]


def test_entry_point_name_is_exact() -> None:
    assert calls("assert ff(1) == 2\nassert f(1) == 2", "f") == [("f(1)", "2")]
    assert reasons("assert f(1) == 2", "ff") == ["wrong_function"]


# --- inlining ------------------------------------------------------------------------------


def test_simple_assignments_are_inlined() -> None:
    text = """
x = [1, 2, 3]
y: int = 4
a = b = 'z'
n = 2
n += 3
p, (q, r) = 1, (2, 3)
assert f(x, y) == a
assert f(b) == n
assert f(p, q, r) == [x]
"""
    assert calls(text, inline="anywhere") == [
        ("f([1, 2, 3], 4)", "'z'"),
        ("f('z')", "2 + 3"),
        ("f(1, 2, 3)", "[[1, 2, 3]]"),
    ]


def test_reassignment_uses_latest_value_and_chains() -> None:
    text = "x = 1\nassert f(x) == 1\nx = x + 1\nassert f(x) == 2\ny = [x, x]\nassert f(y) == 3"
    assert calls(text, inline="anywhere") == [
        ("f(1)", "1"),
        ("f(1 + 1)", "2"),
        ("f([1 + 1, 1 + 1])", "3"),
    ]


def test_scoped_names_in_comprehensions_and_lambdas_are_not_inlined() -> None:
    text = """
x = 10
assert f([x for x in range(3)]) == 1
assert f([x + y for y in range(x)]) == 2
assert f(lambda x: x + 1) == 3
assert f(lambda y=x: y) == 4
assert f({x: x for x in 'ab'}) == 5
"""
    assert calls(text, inline="anywhere") == [
        ("f([x for x in range(3)])", "1"),
        ("f([10 + y for y in range(10)])", "2"),
        ("f(lambda x: x + 1)", "3"),
        ("f(lambda y=10: y)", "4"),
        ("f({x: x for x in 'ab'})", "5"),
    ]


def test_remembered_values_are_not_changed_by_later_substitutions() -> None:
    # ``g``'s lambda holds no remembered name when it is assigned, so it is kept as parsed;
    # substituting it (and sharing it between texts) must never rewrite it, e.g. with z = 5.
    text = """
g = lambda y: y + z
z = 5
assert f(g, z) == g
h = [g, z]
assert f(h, g) == h
assert f(z, z) == [z]
"""
    assert calls(text, inline="anywhere") == [
        ("f(lambda y: y + z, 5)", "lambda y: y + z"),
        ("f([lambda y: y + z, 5], lambda y: y + z)", "[lambda y: y + z, 5]"),
        ("f(5, 5)", "[5]"),
    ]
    assert calls(text) == [  # the authors' rule: bare names among the arguments only
        ("f(lambda y: y + z, 5)", "g"),
        ("f([g, z], lambda y: y + z)", "h"),
        ("f(5, 5)", "[z]"),
    ]


@pytest.mark.parametrize(
    "assignment",
    ["a, b = g()", "a, *b = 1, 2, 3", "a += 1", "[a, b] = range(2)", "(a, b) = [1]"],
)
def test_complex_assignments_reject_dependent_asserts(assignment: str) -> None:
    text = f"{assignment}\nassert f(a) == 1\nassert f(2) == 2"
    parsed = parse_tests(text, "f", inline="anywhere")
    assert [(c.call, c.expected) for c in parsed.cases] == [("f(2)", "2")]
    assert [r.reason for r in parsed.rejected] == ["unresolved_name"]
    # the authors' rule ignores such assignments: the name stays, and the GT run fails on it
    assert calls(text) == [("f(a)", "1"), ("f(2)", "2")]


def test_unassigned_names_are_left_for_the_sandbox() -> None:
    # A free name is not an error at parse time: the GT run fails on it and drops the test.
    assert calls("assert f(undefined) == 1") == [("f(undefined)", "1")]


def test_exponential_inlining_is_bounded() -> None:
    lines = ["x0 = [1, 2, 3]"] + [f"x{i + 1} = x{i} + x{i}" for i in range(40)]
    text = "\n".join(lines) + "\nassert f(x40) == 1\nassert f(x2) == 2"
    start = time.perf_counter()
    parsed = parse_tests(text, "f", inline="anywhere")
    assert time.perf_counter() - start < 2.0
    assert [r.reason for r in parsed.rejected] == ["too_long"]
    assert [c.expected for c in parsed.cases] == ["2"]
    # the authors' rule does not chain: x40 becomes ``x39 + x39``
    assert calls(text)[0] == ("f(x39 + x39)", "1")


# --- duplicates, limits, reasons -----------------------------------------------------------


def test_repeated_calls_are_cases_with_equal_keys() -> None:
    # Duplicates are graded (invalid, not kept), not rejected by the parser: they count.
    text = "assert f(1) == 1\nassert f( 1 ) == 2\nx = 1\nassert f(x) == 3\nassert f(2) == 3"
    parsed = parse_tests(text, "f")
    assert [c.call for c in parsed.cases] == ["f(1)", "f(1)", "f(1)", "f(2)"]
    assert parsed.rejected == ()
    keys = [c.key for c in parsed.cases]
    assert keys[0] == keys[1] == keys[2] == TestCase("f(1)", "0", 9, "").key != keys[3]
    # after materialization the written form is the key
    assert TestCase("f((1,))", "0", 1, "", written="f(tuple([1]))").key == "f(tuple([1]))"


def test_max_cases() -> None:
    text = "\n".join(f"assert f({i}) == {i}" for i in range(10))
    parsed = parse_tests(text, "f", max_cases=3)
    assert [c.call for c in parsed.cases] == ["f(0)", "f(1)", "f(2)"]
    assert [r.reason for r in parsed.rejected] == ["too_many"] * 7


def test_max_chars_truncates_at_a_line_break() -> None:
    text = "\n".join(f"assert f({i}) == {i}" for i in range(1000))
    parsed = parse_tests(text, "f", max_chars=100)
    assert parsed.truncated
    assert len(parsed.code) <= 100 and parsed.code.endswith("== 4")
    assert len(parsed.cases) == len(parsed.code.split("\n"))


@pytest.mark.parametrize("inline", ["arguments", "anywhere"])
def test_a_cut_suite_says_where_it_was_cut(inline: str) -> None:
    lines = [f"assert f({i}) == {i}" for i in range(1000)]
    parsed = parse_tests("\n".join(lines), "f", max_chars=100, inline=inline)  # type: ignore[arg-type]
    kept = len(parsed.cases)
    assert parsed.rejected == (Rejected(kept + 1, lines[kept], "cut_off"),)
    assert parsed.n_asserts == kept  # the mark is not an assert
    whole = parse_tests("\n".join(lines[:3]), "f", max_chars=100, inline=inline)  # type: ignore[arg-type]
    assert not whole.truncated and whole.rejected == ()


def test_a_cut_without_a_line_break_keeps_the_line_start() -> None:
    parsed = parse_tests("x" * 300, "f", max_chars=100)
    assert parsed.truncated and len(parsed.code) == 100
    assert parsed.rejected[-1] == Rejected(1, "x" * 200, "cut_off")  # what was left out


def test_io_pairs_cut_drop_the_block_that_reached_the_cut() -> None:
    # The input block is cut inside: a partial stdin must not become a test.
    text = "```input\n1 2\n```\n```output\n3\n```\n```input\n" + "9 " * 200 + "\n8\n```"
    parsed = parse_io_pairs(text, max_chars=len(text) - 5)
    assert parsed.pairs == (IOPair("1 2\n", "3\n"),)
    assert [(r.line, r.reason) for r in parsed.rejected] == [(7, "cut_off"), (9, "cut_off")]
    headers = "\n".join(f"Input: {i}\nOutput: {i}" for i in range(50))
    parsed = parse_io_pairs(headers, max_chars=100)
    assert parsed.rejected[-1].reason == "cut_off"
    assert all(len(p.input) and p.input == p.output for p in parsed.pairs)
    assert parse_io_pairs(headers).rejected == ()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   \n\t ", "empty"),
        ("```python\n\n```", "no_code"),
        ("Sorry, I cannot write tests for this (", "syntax_error"),
        ("x = 1\nprint(x)", "no_asserts"),
        ("assert g(1) == 2\nassert 2 == f(1)", "no_valid_asserts"),
    ],
)
def test_reasons_when_nothing_is_found(text: str, reason: str) -> None:
    parsed = parse_tests(text, "f")
    assert parsed.cases == ()
    assert parsed.reason == reason
    assert reason in EMPTY_REASONS


# --- extraction from prose -----------------------------------------------------------------


def test_python_fences_are_preferred_and_joined_in_order() -> None:
    text = """Here are tests.
```python
assert f(1) == 1
```
Some prose with assert f(9) == 9 inline.
```text
assert f(8) == 8
```
```py
assert f(2) == 2
```
"""
    parsed = parse_tests(text, "f")
    assert [c.call for c in parsed.cases] == ["f(1)", "f(2)"]
    assert parsed.code == "assert f(1) == 1\nassert f(2) == 2"


def test_untagged_fences_then_whole_text() -> None:
    assert calls("Tests:\n```\nassert f(1) == 1\n```\nassert f(2) == 2") == [("f(1)", "1")]
    assert calls("Tests:\nassert f(2) == 2\nDone.") == [("f(2)", "2")]


def test_unclosed_fence_runs_to_the_end() -> None:
    assert calls("```python\nassert f(1) == 1\nassert f(2) == 2") == [("f(1)", "1"), ("f(2)", "2")]


def test_prose_and_bad_lines_do_not_lose_good_asserts() -> None:
    text = """Sure! Here are some tests:
assert f(1) == 2
This one checks the edge case (empty input):
assert f([]) == 0
assert f(3 ==
assert f(
    [1, 2],
) == 3
assert f(4
) == 4
def helper(x):
    return x
    broken(
assert f(5) == 5
"""
    parsed = parse_tests(text, "f")
    assert [c.call for c in parsed.cases] == ["f(1)", "f([])", "f([1, 2])", "f(4)", "f(5)"]
    assert [c.line for c in parsed.cases] == [2, 4, 6, 9, 14]
    bad = [(r.line, r.reason) for r in parsed.rejected]
    assert bad == [
        (1, "syntax_error"),
        (3, "syntax_error"),
        (5, "syntax_error"),
        (11, "syntax_error"),
    ]


def test_extract_code_takes_the_longest_python_block() -> None:
    text = "Solution:\n```python\ndef f(x):\n    return x + 1\n```\nUsage:\n```python\nf(1)\n```"
    assert extract_code(text) == "def f(x):\n    return x + 1"
    assert extract_code("```\ndef f(): pass\n```") == "def f(): pass"
    assert extract_code("def f():\n    return 1\n") == "def f():\n    return 1\n"
    assert extract_code("```python\na = 1\n```\n```python\nb = 2\n```") == "b = 2"  # tie: last
    assert extract_code("```cpp\nint main(){}\n```", language="cpp") == "int main(){}"


def test_extract_fenced_blocks_tags() -> None:
    text = "```Python title\nA\n```\n~~~\nB\n~~~\n````md\nC\n```\nstill C\n````"
    assert extract_fenced_blocks(text) == ["A", "B", "C\n```\nstill C"]
    assert extract_fenced_blocks(text, ("python",)) == ["A"]
    assert extract_fenced_blocks(text, ("",)) == ["B"]


# --- stdin/stdout pairs --------------------------------------------------------------------


def test_io_pairs_with_headers() -> None:
    text = """Edge cases:
**Input:**
```
3
1 2 3
```
**Output:**
```
6
```
Input 2: 5
Output 2: 5
### Input
0

### Output
0
"""
    parsed = parse_io_pairs(text)
    assert parsed.pairs == (
        IOPair("3\n1 2 3\n", "6\n"),
        IOPair("5\n", "5\n"),
        IOPair("0\n", "0\n"),
    )
    assert parsed.rejected == () and parsed.reason == ""


def test_io_pairs_with_tagged_fences_and_errors() -> None:
    text = (
        "```input\n1 2\n```\n```output\n3\n```\n"
        "```output\n9\n```\n"  # no input before it
        "```input\n1 2\n```\n```output\n3\n```\n"  # repeated input: graded as a duplicate
        "```input\n7\n```\n"  # no output after it
    )
    parsed = parse_io_pairs(text)
    assert parsed.pairs == (IOPair("1 2\n", "3\n"), IOPair("1 2\n", "3\n"))
    assert [r.reason for r in parsed.rejected] == ["missing_input", "missing_output"]


def test_io_pairs_limits_and_empty() -> None:
    text = "\n".join(f"Input: {i}\nOutput: {i}" for i in range(5))
    parsed = parse_io_pairs(text, max_cases=2)
    assert [p.input for p in parsed.pairs] == ["0\n", "1\n"]
    assert [r.reason for r in parsed.rejected] == ["too_many"] * 3
    assert parse_io_pairs("").reason == "empty"
    assert parse_io_pairs("Input validation matters.").reason == "no_pairs"


# --- never raises --------------------------------------------------------------------------

_ALPHABET = list("assert f(x) == [1, 'a'] \n\t\r#:=()[]{}\"'\\`~*+-/%<>!,.;@&|^x0y9_") + [
    "```python\n",
    "```\n",
    "assert f(",
    ") == ",
    "x = ",
    "lambda",
    " for ",
    " in ",
    "\x00",
    "\udc80",
    "\u2028",
    "Input:",
    "Output:",
    "    ",
]


def _fuzz_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.6:
            texts.append("".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 200))))
        elif kind < 0.8:
            texts.append("".join(chr(rng.randint(0, 0x10FFFF)) for _ in range(rng.randint(0, 300))))
        else:
            raw = bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 300)))
            texts.append(raw.decode("latin-1"))
    return texts


def test_fuzz_never_raises() -> None:
    for text in _fuzz_texts(seed=1234, count=1500):
        parsed = parse_tests(text, "f")
        assert parsed.reason in EMPTY_REASONS | {""}
        assert all(r.reason in REJECT_REASONS for r in parsed.rejected)
        assert (parsed.reason == "") == bool(parsed.cases)
        io = parse_io_pairs(text)
        assert all(r.reason in REJECT_REASONS for r in io.rejected)
        assert isinstance(extract_code(text), str)


@pytest.mark.parametrize(
    "text",
    [
        "x" * 1_000_000,
        "assert f(1) == 1\n" * 60_000,
        "(" * 200_000,
        "[" * 5000 + "]" * 5000,
        "-" * 50_000 + "1",
        "\x00" * 10_000 + "\nassert f(1) == 1",
        "assert f(" + "not " * 5000 + "1) == 1",
        "```python\n" * 50_000,
        "Input:\n" * 100_000,
        "\n".join("x = (" for _ in range(20_000)),
    ],
    ids=lambda t: repr(t[:12]),
)
def test_hostile_inputs_are_fast_and_safe(text: str) -> None:
    start = time.perf_counter()
    parsed = parse_tests(text, "f")
    io = parse_io_pairs(text)
    extract_code(text)
    assert time.perf_counter() - start < 5.0
    assert parsed.reason in EMPTY_REASONS | {""}
    assert io.reason in {"", "empty", "no_pairs"}


def test_non_str_input_is_an_empty_result() -> None:
    assert parse_tests(b"assert f(1) == 1", "f").reason == "empty"  # type: ignore[arg-type]
    assert parse_io_pairs(None).reason == "empty"  # type: ignore[arg-type]


# --- GT grading bookkeeping ----------------------------------------------------------------


def _cases(*srcs: str) -> list[TestCase]:
    return [TestCase(call=s, expected="0", line=i + 1, source=s) for i, s in enumerate(srcs)]


def test_grade_suite_statuses_in_order() -> None:
    cases = _cases("f(1)", "f(2)", "f(3)", "f(1)", "f(4)", "f(5)")
    grading = grade_suite(
        cases,
        gt_call_ok=[True, False, True, True, True, True],
        gt_values=[10, None, 30, 10, 40, 50],
        expected_ok=[True, True, True, True, False, True],
        expected_values=[10, 0, 31, 10, None, 50],
    )
    statuses = [g.status for g in grading.graded]
    assert statuses == [
        "valid",  # GT 10 == expected 10
        "dropped_gt_error",  # GT raised
        "invalid_kept",  # expected 31 != GT 30: kept with GT value 30, and invalid
        "dropped_duplicate",  # same normalized statement as the first
        "invalid_kept",  # expected failed to evaluate
        "valid",
    ]
    assert [t.gt_value for t in grading.tests] == [10, 30, 40, 50]
    assert grading.valid_mask == (True, False, False, True)
    assert (grading.n_kept, grading.n_invalid, grading.n_valid) == (4, 4, 2)
    assert grading.graded[1].gt_value is None and not grading.graded[1].kept


def test_grade_suite_has_no_cap_and_uses_the_chosen_equality() -> None:
    from codea1_env.sandbox.worker.plain import values_equal

    cases = _cases("f(1)", "f(2)", "f(3)", "f(4)", *(f"f({i})" for i in range(5, 15)))
    n = len(cases)
    gt_values = [None, 1, 2.0, 3, *range(5, 15)]
    expected = [0, True, 2.0 + 1e-12, 3, *range(5, 15)]
    python = grade_suite(cases, [False] + [True] * (n - 1), gt_values, [True] * n, expected)
    # Python's ==: True == 1 holds, 2.0 + 1e-12 != 2.0; all 13 are kept (no cap at K = 8)
    assert [g.status for g in python.graded[:4]] == [
        "dropped_gt_error",
        "valid",
        "invalid_kept",
        "valid",
    ]
    assert (python.n_kept, python.n_invalid) == (13, 2)
    strict = grade_suite(
        cases, [False] + [True] * (n - 1), gt_values, [True] * n, expected, equal=values_equal
    )
    # strict: True is not 1; floats are close
    assert [g.status for g in strict.graded[:4]] == [
        "dropped_gt_error",
        "invalid_kept",
        "valid",
        "valid",
    ]


def test_duplicates_compare_the_written_call_and_the_gt_value() -> None:
    # f(x) with x = 1 and f(1) are the same statement; f(1.0) is not (repr differs)
    cases = [
        TestCase("f(1)", "1", 1, ""),
        TestCase("f(1)", "1", 2, "", written="f(1)"),
        TestCase("f(1.0)", "1", 3, ""),
    ]
    grading = grade_suite(cases, [True] * 3, [1, 1, 1.0], [True] * 3, [1, 1, 1])
    assert [g.status for g in grading.graded] == ["valid", "dropped_duplicate", "valid"]


def test_grade_suite_io_pairs_and_bad_arguments() -> None:
    pairs = [IOPair("1\n", "1\n"), IOPair("1\n", "2\n"), IOPair("2\n", "5\n")]
    grading = grade_suite(
        pairs, [True] * 3, ["1\n", "1\n", "4\n"], [True] * 3, ["1\n", "2\n", "5\n"]
    )
    assert [g.status for g in grading.graded] == ["valid", "dropped_duplicate", "invalid_kept"]
    with pytest.raises(ValueError, match="lengths"):
        grade_suite(pairs, [True], [1], [True], [1])


def test_grade_suite_takes_the_callers_normalized_forms() -> None:
    from codea1_env.scoring.testcases import case_key, grade_suite

    cases = parse_tests("assert f(1) == 2\nassert f(1) == 3\nassert f(2) == 4", "f").cases
    gt_ok, gt_values = [True, True, False], [2, 2, None]
    expected = ([True] * 3, [2, 3, 4])
    plain_grading = grade_suite(cases, gt_ok, gt_values, *expected)
    keys = [case_key(c, v) if ok else None for c, ok, v in zip(cases, gt_ok, gt_values)]
    assert grade_suite(cases, gt_ok, gt_values, *expected, keys=keys) == plain_grading
    assert [t.status for t in plain_grading.graded] == [
        "valid",
        "dropped_duplicate",
        "dropped_gt_error",
    ]
    with pytest.raises(ValueError):
        grade_suite(cases, gt_ok, gt_values, *expected, keys=keys[:2])
