"""The problem schema, assert extraction, layout adapters, JSONL loading and problem sources."""

from __future__ import annotations

import gzip
import json
import pickle
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codea1_env.problems import (
    BankSource,
    DatasetUnreachable,
    HFSource,
    HumanEvalSource,
    IOPair,
    JsonlSource,
    ListSource,
    Problem,
    ProblemFormatError,
    ProblemSource,
    ProceduralSource,
    adapt_record,
    load_source,
    problem_from_dict,
    problem_to_dict,
    read_problems,
    write_problems,
)
from codea1_env.problems.asserts import check_assert_line, extract_simple_asserts

DATA = Path(__file__).resolve().parent / "data"

GOOD: dict[str, Any] = {
    "task_id": "t/clamp",
    "prompt": 'def clamp(x: int, lo: int, hi: int) -> int:\n    """Limit x to [lo, hi]."""',
    "entry_point": "clamp",
    "canonical_solution": "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))",
    "tests": ["assert clamp(5, 0, 3) == 3", "assert clamp(-1, 0, 3) == 0"],
}
STDIO: dict[str, Any] = {
    "task_id": "t/sum",
    "prompt": "Print the sum of two integers.",
    "entry_point": "",
    "canonical_solution": "print(sum(map(int, input().split())))",
    "io_pairs": [{"input": "1 2\n", "output": "3\n"}],
}


def write_lines(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


# --- schema -------------------------------------------------------------------------------------


def test_schema_round_trip_for_every_kind_of_problem() -> None:
    problems = [
        problem_from_dict(GOOD),
        problem_from_dict({**STDIO, "difficulty": 1, "tags": ["io"], "metadata": {"k": [1]}}),
        *JsonlSource(DATA / "problems_codea1.jsonl"),
        *JsonlSource(DATA / "kodcode_sample.jsonl", "kodcode"),
        *list(BankSource())[:5],
        ProceduralSource(n=3).problem_at(2),
    ]
    for problem in problems:
        record = json.loads(json.dumps(problem_to_dict(problem)))
        again = problem_from_dict(record)
        assert again == problem and again.metadata == problem.metadata


def test_schema_fields_and_unknown_fields_go_to_metadata() -> None:
    problem = problem_from_dict(
        {**GOOD, "difficulty": 0.5, "tags": ["math"], "source": "me", "metadata": {"a": 1}}
    )
    assert problem.tests == tuple(GOOD["tests"]) and problem.kind == "function"
    assert problem.difficulty == 0.5 and problem.tags == ("math",)
    assert problem.metadata == {"a": 1, "source": "me"}
    stdio = problem_from_dict(STDIO)
    assert stdio.kind == "stdio" and stdio.io_pairs == (IOPair("1 2\n", "3\n"),)
    assert stdio.gt_program == STDIO["canonical_solution"]


def test_humaneval_fallback_converts_check_function() -> None:
    record = {
        "task_id": "HumanEval/x",
        "prompt": 'def inc(n):\n    """Add one."""\n',
        "entry_point": "inc",
        "canonical_solution": "    return n + 1\n",
        "test": (
            "def check(candidate):\n"
            "    assert candidate(1) == 2, 'message'\n"
            "    assert abs(candidate(0.5) - 1.5) < 1e-6\n"
            "    assert 0 == candidate(-1)\n"
        ),
    }
    problem = problem_from_dict(record)
    assert problem.tests == ("assert inc(1) == 2", "assert inc(-1) == 0")
    assert problem.metadata["test"] == record["test"]
    assert problem.gt_program == record["prompt"] + record["canonical_solution"]


def without(record: dict[str, Any], field: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != field}


ONE_TEST = "assert clamp(1, 0, 2) == 1"
LOOP_CHECK = (
    "def check(candidate):\n    for i in range(3):\n        assert candidate(i, 0, 9) == i\n"
)
GT = "canonical_solution"

BAD_RECORDS: list[tuple[str, Any, str | None, str]] = [
    ("not an object", ["x"], None, "expected a JSON object"),
    ("missing task_id", without(GOOD, "task_id"), "task_id", "missing"),
    ("task_id not a string", {**GOOD, "task_id": 7}, "task_id", "expected a string"),
    ("blank prompt", {**GOOD, "prompt": "  "}, "prompt", "must not be empty"),
    ("missing entry_point", without(GOOD, "entry_point"), "entry_point", "missing"),
    ("bad entry_point", {**GOOD, "entry_point": "not valid"}, "entry_point", "identifier"),
    ("empty entry_point", {**GOOD, "entry_point": ""}, "entry_point", "identifier"),
    ("no GT", {**GOOD, GT: None}, GT, "missing"),
    ("GT syntax", {**GOOD, GT: "def clamp(:"}, GT, "does not parse"),
    ("GT lacks entry", {**GOOD, GT: "def other():\n    return 1"}, GT, "does not define 'clamp'"),
    ("tests a string", {**GOOD, "tests": ONE_TEST}, "tests", "expected a list of strings"),
    ("tests hold a number", {**GOOD, "tests": [ONE_TEST, 3]}, "tests", "expected a list of str"),
    ("tests empty", {**GOOD, "tests": []}, "tests", "must not be empty"),
    ("not an assert", {**GOOD, "tests": [ONE_TEST, "clamp(1, 0, 2)"]}, "tests[1]", "single assert"),
    ("two statements", {**GOOD, "tests": [ONE_TEST + "; x = 1"]}, "tests[0]", "single assert"),
    ("test syntax", {**GOOD, "tests": ["assert clamp(1, 0, 2) =="]}, "tests[0]", "does not parse"),
    ("other function", {**GOOD, "tests": ["assert max(1, 2) == 2"]}, "tests[0]", "call 'clamp'"),
    ("tests and io_pairs", {**GOOD, "io_pairs": STDIO["io_pairs"]}, "io_pairs", "not both"),
    ("no tests at all", without(GOOD, "tests"), "tests", "missing"),
    ("io_pairs an object", {**STDIO, "io_pairs": {"input": "1"}}, "io_pairs", "expected a list"),
    ("io_pairs empty", {**STDIO, "io_pairs": []}, "io_pairs", "must not be empty"),
    ("pair lacks output", {**STDIO, "io_pairs": [{"input": "1"}]}, "io_pairs[0]", "expected"),
    ("output int", {**STDIO, "io_pairs": [{"input": "1", "output": 1}]}, "io_pairs[0]", "strings"),
    ("stdio GT syntax", {**STDIO, GT: "print(("}, GT, "does not parse"),
    ("difficulty too big", {**GOOD, "difficulty": 1.5}, "difficulty", "[0, 1]"),
    ("difficulty a word", {**GOOD, "difficulty": "hard"}, "difficulty", "[0, 1]"),
    ("difficulty a bool", {**GOOD, "difficulty": True}, "difficulty", "[0, 1]"),
    ("difficulty nan", {**GOOD, "difficulty": float("nan")}, "difficulty", "[0, 1]"),
    ("tags a string", {**GOOD, "tags": "math"}, "tags", "list of strings"),
    ("metadata a list", {**GOOD, "metadata": [1]}, "metadata", "object"),
    ("field twice", {**GOOD, "origin": 1, "metadata": {"origin": 2}}, "origin", "both"),
    ("nothing convertible", {**without(GOOD, "tests"), "test": LOOP_CHECK}, "test", "no simple"),
]


@pytest.mark.parametrize(
    ("record", "field", "fragment"),
    [case[1:] for case in BAD_RECORDS],
    ids=[case[0] for case in BAD_RECORDS],
)
def test_schema_errors_name_file_line_and_field(
    record: Any, field: str | None, fragment: str
) -> None:
    with pytest.raises(ProblemFormatError) as caught:
        problem_from_dict(record, where="bank.jsonl", line=12)
    error = caught.value
    assert (error.path, error.line, error.field) == ("bank.jsonl", 12, field)
    prefix = "bank.jsonl:12:" + (f" field {field!r}:" if field else "")
    assert str(error).startswith(prefix + " ")
    assert fragment in error.message


def test_format_error_reads_like_the_documented_example_and_pickles() -> None:
    error = ProblemFormatError("bank.jsonl", 12, "tests", "expected a list of strings")
    assert str(error) == "bank.jsonl:12: field 'tests': expected a list of strings"
    assert isinstance(error, ValueError)
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) and again.field == "tests"
    assert str(ProblemFormatError("f.jsonl", None, None, "no problems")) == "f.jsonl: no problems"


# --- assert extraction --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("assert candidate(1) == 2", ["assert f(1) == 2"]),
        ("assert candidate(x=1) == 2, 'msg'", ["assert f(x=1) == 2"]),
        ("assert 2 == candidate(1)", ["assert f(1) == 2"]),
        ("assert candidate('a') is None", ["assert f('a') == None"]),
        ("assert candidate([1])", ["assert f([1]) == True"]),
        ("assert not candidate([])", ["assert f([]) == False"]),
        ("assert tuple(candidate([2, 1])) == tuple([1, 2])", ["assert f([2, 1]) == [1, 2]"]),
        ("xs = [1, 2]\n    assert candidate(xs) == 3", ["assert f([1, 2]) == 3"]),
        ("xs = [1, 2]\n    xs.append(3)\n    assert candidate(xs) == 3", []),
        ("xs = [1]\n    for xs in [[2]]:\n        pass\n    assert candidate(xs) == 3", []),
        (
            "assert candidate(list(range(3))) == sorted([2, 1])",
            ["assert f(list(range(3))) == sorted([2, 1])"],
        ),
        ("assert candidate(helper(1)) == 2", []),
        ("assert candidate(1) != 2", []),
        ("assert candidate(1) == candidate(2)", []),
        ("assert abs(candidate(1.0) - 1.0) < 1e-6", []),
        ("for i in range(3):\n        assert candidate(i) == i", []),
        ("assert candidate(1) == 2\n    assert candidate(1) == 2", ["assert f(1) == 2"]),
        ("assert candidate(-1) == -(2)", ["assert f(-1) == -2"]),
    ],
)
def test_extract_simple_asserts(body: str, expected: list[str]) -> None:
    source = f"def check(candidate):\n    {body}\n"
    found = extract_simple_asserts(
        source, call_name="candidate", entry_point="f", functions=lambda n: n == "check"
    )
    assert found == expected


def test_extract_reads_only_selected_functions_and_survives_bad_source() -> None:
    source = "def test_a():\n    assert g(1) == 1\n\ndef helper():\n    assert g(2) == 2\n"
    found = extract_simple_asserts(
        source, call_name="g", entry_point="g", functions=lambda n: n.startswith("test")
    )
    assert found == ["assert g(1) == 1"]
    assert extract_simple_asserts("def (", call_name="g", entry_point="g", functions=bool) == []


def test_check_assert_line() -> None:
    assert check_assert_line("assert f(1) == 2", "f") is None
    assert check_assert_line("assert abs(f(1) - 2) < 1e-6", "f") is None
    assert check_assert_line("f(1) == 2", "f") == "is not a single assert statement"
    assert check_assert_line("assert g(1) == 2", "f") == "does not call 'f'"
    reason = check_assert_line("assert f(1 ==", "f")
    assert reason is not None and reason.startswith("does not parse")


# --- layout adapters on their fixtures ----------------------------------------------------------


def test_codea1_fixture() -> None:
    source = JsonlSource(DATA / "problems_codea1.jsonl")
    assert source.ids() == ["demo/add", "demo/echo_sum", "demo/is_even"]
    assert source["demo/add"].metadata == {"source": "handwritten"}
    assert source["demo/echo_sum"].kind == "stdio"
    assert source["demo/is_even"].tests == (
        "assert is_even(2) == True",
        "assert is_even(3) == False",
        "assert is_even(0) == True",
    )


def test_kodcode_fixture() -> None:
    source = JsonlSource(DATA / "kodcode_sample.jsonl", "kodcode")
    assert source.ids() == ["kodcode/Leetcode_1_I", "kodcode/Prefill_7_C", "kodcode/Apps_3_I"]
    first = source["kodcode/Leetcode_1_I"]
    assert first.entry_point == "count_above_average"
    assert first.tests == (
        "assert count_above_average([]) == 0",
        "assert count_above_average([1, 2, 3, 4]) == 2",
        "assert count_above_average([5, 5, 5]) == 0",
    )
    assert first.prompt.endswith("empty list.\n\ndef count_above_average(nums):")
    assert first.difficulty == 0.25 and first.tags == ("kodcode", "Leetcode", "instruct")
    assert first.metadata["gpt_pass_percentage"] == 1.0
    assert first.metadata["test"].startswith("from solution import")
    second = source[
        "kodcode/Prefill_7_C"
    ]  # test_info as an object, `test_code`, header in question
    assert second.entry_point == "join_reversed" and second.difficulty == 0.5
    assert second.tests == (
        "assert join_reversed(['a', 'b']) == 'b-a'",
        "assert join_reversed(['x']) == 'x'",
    )
    assert second.prompt.count("def join_reversed(") == 1
    third = source["kodcode/Apps_3_I"]  # no test_info: entry point from the solution's def
    assert third.entry_point == "largest_digit" and third.difficulty is None
    assert third.prompt.endswith("\n\ndef largest_digit(n):")


def test_mbpp_fixture() -> None:
    source = JsonlSource(DATA / "mbpp_sample.jsonl", "mbpp")
    first = source["mbpp/901"]
    assert first.entry_point == "count_upper"
    docstring = '"""Write a function to count the uppercase letters in a string."""'
    assert first.prompt == f"def count_upper(s):\n    {docstring}"
    assert first.tests[0] == "assert count_upper('Hello World') == 2" and len(first.tests) == 3
    assert first.metadata == {"challenge_test_list": []}
    second = source["mbpp/902"]  # sanitized layout: `prompt` instead of `text`
    assert second.entry_point == "product" and second.metadata == {"source_file": "handwritten"}


def test_stdio_fixture() -> None:
    source = JsonlSource(DATA / "stdio_sample.jsonl", "stdio")
    contest = source["stdio/9001_A. Double it"]
    assert contest.kind == "stdio" and contest.entry_point == ""
    assert contest.canonical_solution == "print(2 * int(input()))"  # the PYTHON3 solution
    assert [p.input for p in contest.io_pairs] == ["3\n", "-4\n", "0\n"]  # public + private
    assert contest.tags == ("stdio", "math", "implementation")
    assert contest.metadata == {"difficulty": 7, "cf_rating": 800}
    cure = source["stdio/cure-17"]
    assert cure.io_pairs == (IOPair("a b c\n", "c b a\n"), IOPair("x\n", "x\n"))
    apps = source["stdio/4242"]
    assert apps.io_pairs == (IOPair("1 2 3\n", "6\n"), IOPair("10\n", "10\n"))


KOD = {"question_id": "x", "question": "q"}
MB = {"task_id": 1, "text": "t", "code": "def f(x): return x"}
IO = {"name": "n", "description": "d", "solution": "print(1)"}
PYTEST = "def test_a():\n    assert f() == 1"
ADAPTER_ERRORS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "kodcode",
        {"question": "q", "solution": "def f(): pass", "test": ""},
        "question_id",
        "missing (required id)",  # one field: not "one of these fields"
    ),
    ("kodcode", {**KOD, "solution": "def f(:", "test": PYTEST}, "solution", "does not parse"),
    ("kodcode", {**KOD, "solution": "x = 1", "test": "assert 1"}, "test_info", "no function name"),
    ("mbpp", {**MB, "test_list": []}, "test_list", "non-empty list"),
    ("mbpp", {**MB, "code": "def f(:", "test_list": ["assert f(1) == 1"]}, "code", "not parse"),
    (
        "mbpp",
        {**MB, "test_list": ["assert f(1) == 1"], "test_imports": ["import math"]},
        "test_imports",
        "not supported",
    ),
    ("mbpp", {**MB, "code": "g = 1", "test_list": ["assert f(1) == 1"]}, "code", "not define 'f'"),
    ("mbpp", {**MB, "test_list": ["assert len('a') == 1"]}, "test_list", "cannot tell"),
    (
        "stdio",
        {**IO, "public_tests": {"input": ["1"], "output": []}},
        "public_tests",
        "1 inputs but 0 outputs",
    ),
    ("stdio", {**IO, "tests": [["1", 1]]}, "tests[0]", "must be strings"),
    ("stdio", IO, "public_tests", "no input/output pairs"),
    (
        "stdio",
        {**IO, "input_output": '{"fn_name": "f", "inputs": [], "outputs": []}'},
        "input_output",
        "stdin style",
    ),
    ("stdio", without(IO, "name"), "name / id / task_id / problem_id", "missing"),
]


@pytest.mark.parametrize(("layout", "record", "field", "fragment"), ADAPTER_ERRORS)
def test_adapter_errors_use_the_layouts_field_names(
    layout: str, record: dict[str, Any], field: str, fragment: str
) -> None:
    with pytest.raises(ProblemFormatError) as caught:
        adapt_record(record, layout, where="data.jsonl", line=4)
    assert (caught.value.line, caught.value.field) == (4, field)
    assert fragment in caught.value.message
    assert str(caught.value).startswith(f"data.jsonl:4: field {field!r}:")


def test_unknown_layout() -> None:
    with pytest.raises(ValueError, match="unknown layout 'csv'"):
        adapt_record(GOOD, "csv")
    with pytest.raises(ValueError, match="unknown layout"):
        JsonlSource(DATA / "problems_codea1.jsonl", "csv")


# --- JSONL loading: all or nothing --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "layout", "line", "field", "fragment"),
    [
        ("bad_json.jsonl", "codea1", 3, None, "not valid JSON"),
        ("bad_tests_field.jsonl", "codea1", 2, "tests", "expected a list of strings"),
        ("bad_duplicate_id.jsonl", "codea1", 2, "task_id", "duplicate task_id 'ok/one'"),
        ("bad_kodcode.jsonl", "kodcode", 1, "test", "no simple 'assert size(...) == ...'"),
        ("bad_mbpp.jsonl", "mbpp", 1, "test_setup_code", "not supported"),
        ("bad_stdio.jsonl", "stdio", 1, "solutions", "no Python 3 solution"),
    ],
)
def test_negative_fixtures(
    name: str, layout: str, line: int, field: str | None, fragment: str
) -> None:
    path = DATA / name
    with pytest.raises(ProblemFormatError) as caught:
        JsonlSource(path, layout)
    error = caught.value
    assert (error.path, error.line, error.field) == (str(path), line, field)
    assert str(error).startswith(f"{path}:{line}:") and fragment in str(error)


def test_a_bad_last_line_loads_nothing(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.jsonl", [GOOD, STDIO, {**GOOD, "task_id": "t/3", "tags": 1}])
    with pytest.raises(ProblemFormatError, match=r"p\.jsonl:3: field 'tags'"):
        read_problems(path)
    with pytest.raises(ProblemFormatError):
        load_source(str(path))


def test_skip_invalid_keeps_the_good_records(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.jsonl", [{**GOOD, "tests": 1}, GOOD, "", STDIO])
    source = JsonlSource(path, skip_invalid=True)
    assert source.ids() == ["t/clamp", "t/sum"]
    assert [(e.line, e.field) for e in source.skipped] == [(1, "tests")]
    only_bad = write_lines(tmp_path / "bad.jsonl", [{**GOOD, "tests": 1}])
    with pytest.raises(ProblemFormatError, match="no problems \\(1 invalid records skipped\\)"):
        JsonlSource(only_bad, skip_invalid=True)


def test_file_level_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    with pytest.raises(ProblemFormatError, match="empty.jsonl: no problems"):
        JsonlSource(empty)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(GOOD).encode() + b"\n\xff\n")
    with pytest.raises(ProblemFormatError, match="latin.jsonl:2: not valid UTF-8"):
        JsonlSource(latin)
    fake_gz = tmp_path / "fake.jsonl.gz"
    fake_gz.write_text("plain text")
    with pytest.raises(ProblemFormatError, match="not a gzip file"):
        JsonlSource(fake_gz)
    with pytest.raises(FileNotFoundError):
        JsonlSource(tmp_path / "missing.jsonl")


def test_gzip_and_write_round_trip(tmp_path: Path) -> None:
    bank = list(BankSource())
    plain = tmp_path / "bank.jsonl"
    assert write_problems(plain, bank) == len(bank)
    packed = tmp_path / "bank.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, packed):
        loaded, skipped = read_problems(path)
        assert loaded == bank and not skipped
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.jsonl", "bank.jsonl.gz"]


# --- sources ------------------------------------------------------------------------------------


def test_every_source_follows_the_protocol() -> None:
    problems = [problem_from_dict(GOOD), problem_from_dict(STDIO)]
    sources: list[Any] = [
        BankSource(),
        ListSource(problems),
        JsonlSource(DATA / "mbpp_sample.jsonl", "mbpp"),
        ProceduralSource(n=20),
    ]
    for source in sources:
        assert isinstance(source, ProblemSource)
        ids = source.ids()
        assert len(ids) == len(source) and [p.task_id for p in source] == ids
        assert source[ids[-1]].task_id == ids[-1]
        assert isinstance(source.name, str) and source.name
        with pytest.raises(KeyError, match="not in"):
            source["no/such/id"]


def test_sampling_is_reproducible_with_a_seeded_generator() -> None:
    for source in (BankSource(), ProceduralSource(seed=1, n=1000)):
        first = [source.sample(np.random.default_rng(42)).task_id for _ in range(3)]
        rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
        seq_a = [source.sample(rng_a).task_id for _ in range(30)]
        seq_b = [source.sample(rng_b).task_id for _ in range(30)]
        assert seq_a == seq_b and len(set(seq_a)) > 10
        assert len(set(first)) == 1
        rng_c = np.random.default_rng(8)
        assert [source.sample(rng_c).task_id for _ in range(30)] != seq_a


def test_list_source_validation() -> None:
    problem = problem_from_dict(GOOD)
    with pytest.raises(ValueError, match="at least one problem"):
        ListSource([])
    with pytest.raises(ValueError, match="duplicate task_id 't/clamp'"):
        ListSource([problem, problem])
    with pytest.raises(TypeError, match="expected Problem, got dict"):
        ListSource([GOOD])  # type: ignore[list-item]
    source = ListSource([problem], name="mine")
    assert (
        "t/clamp" in source
        and "x" not in source
        and repr(source) == ("ListSource(name='mine', problems=1)")
    )


def test_procedural_source_arguments() -> None:
    easy = ProceduralSource(difficulty=0.3)
    assert easy.families == ("step",)
    assert {p.metadata["family"] for p in ProceduralSource(n=50, difficulty=(0.5, 0.6))} == {
        "range",
        "linear",
    }
    assert ProceduralSource(families=["linear"], n=5).problem_at(0).metadata["family"] == "linear"
    assert len(ProceduralSource()) == 10_000 and len(ProceduralSource(split="test")) == 500
    for bad in (
        {"seed": -1},
        {"seed": 1.5},
        {"n": 0},
        {"split": "dev"},
        {"difficulty": (0.9, 1.0)},
        {"families": ["nope"]},
    ):
        with pytest.raises(ValueError):
            ProceduralSource(**bad)
    source = ProceduralSource(seed=2, n=10)
    assert source["proc/2/9"].task_id == "proc/2/9"
    for missing in ("proc/2/10", "proc/3/1", "proc/2/x", "proc/2/1000000000", 5):
        with pytest.raises(KeyError):
            source[missing]  # type: ignore[index]
    held_out = ProceduralSource(seed=2, n=10, split="test")
    assert held_out.ids()[0] == "proc/2/1000000000" and held_out["proc/2/1000000009"]
    with pytest.raises(IndexError):
        source.problem_at(10)


@pytest.mark.parametrize(
    ("spec", "kind", "size"),
    [
        ("bank", BankSource, None),
        ("humaneval", HumanEvalSource, 164),
        ("procedural", ProceduralSource, 10_000),
        ("procedural:7", ProceduralSource, 10_000),
        ("procedural:7:test", ProceduralSource, 500),
        ("procedural:7:test:edge", ProceduralSource, 500),
        ("procedural:7:train:edge+step", ProceduralSource, 10_000),
        (f"jsonl:{DATA / 'problems_codea1.jsonl'}", JsonlSource, 3),
        (f"kodcode:{DATA / 'kodcode_sample.jsonl'}", JsonlSource, 3),
        (f"mbpp:{DATA / 'mbpp_sample.jsonl'}", JsonlSource, 2),
        (f"stdio:{DATA / 'stdio_sample.jsonl'}", JsonlSource, 3),
        (str(DATA / "problems_codea1.jsonl"), JsonlSource, 3),
    ],
)
def test_load_source_specs(spec: str, kind: type, size: int | None) -> None:
    source = load_source(spec)
    assert type(source) is kind
    if size is not None:
        assert len(source) == size
    if spec.startswith("procedural:7"):
        assert source.ids()[0].startswith("proc/7/")


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "  ",
        "nope",
        "jsonl:",
        "procedural:x",
        "procedural:1:dev",
        "procedural:1:test:",
        "procedural:1::edge",
        "procedural:1:test:edge+",
        "procedural:1:test:nosuch",
        "hf:",
        "data.csv",
    ],
)
def test_load_source_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(ValueError, match="problem source|procedural spec"):
        load_source(spec)


def test_load_source_family_spec_draws_only_those_families() -> None:
    source = load_source("procedural:3:test:edge")
    assert isinstance(source, ProceduralSource)
    assert source.families == ("edge",) and source.split == "test" and source.seed == 3
    both = load_source("procedural:3:train:edge+step")
    assert isinstance(both, ProceduralSource) and both.families == ("edge", "step")
    with pytest.raises(ValueError, match="'procedural:3:test:nosuch'.*unknown families"):
        load_source("procedural:3:test:nosuch")


# --- Hugging Face (simulated: no network in tests) ---------------------------------------------


def fake_datasets(monkeypatch: pytest.MonkeyPatch, load: Any) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []

    def load_dataset(name: str, config: str | None = None, *, split: str) -> Any:
        calls.append((name, config, split))
        return load(name)

    module = types.ModuleType("datasets")
    module.load_dataset = load_dataset  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", module)
    return calls


def test_hf_source_without_datasets_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError, match=r"pip install 'codea1\[hf\]'"):
        HFSource("org/data")


class LocalEntryNotFoundError(FileNotFoundError):
    """Named like huggingface_hub's error for 'not cached and offline'."""


@pytest.mark.parametrize(
    "error",
    [
        ConnectionError("Couldn't reach 'org/data' on the Hub"),
        LocalEntryNotFoundError("offline and not cached"),
        RuntimeError("wrapped"),
    ],
)
def test_hf_source_offline_gives_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def load(name: str) -> Any:
        if isinstance(error, RuntimeError):
            raise error from TimeoutError("read timed out")
        raise error

    fake_datasets(monkeypatch, load)
    with pytest.raises(DatasetUnreachable) as caught:
        HFSource("org/data", "test")
    message = str(caught.value)
    assert "'org/data'" in message and "unreachable or offline" in message
    assert "jsonl:PATH" in message
    assert isinstance(caught.value, ConnectionError)


def test_hf_source_other_errors_pass_through(monkeypatch: pytest.MonkeyPatch) -> None:
    def load(name: str) -> Any:
        raise ValueError("Unknown split 'tset'")

    fake_datasets(monkeypatch, load)
    with pytest.raises(ValueError, match="Unknown split"):
        HFSource("org/data", "tset")


def test_hf_source_reads_rows_through_a_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [json.loads(line) for line in (DATA / "mbpp_sample.jsonl").read_text().splitlines()]
    calls = fake_datasets(monkeypatch, lambda name: rows)
    source = HFSource("google-research-datasets/mbpp", "test", "mbpp", limit=1)
    assert source.ids() == ["mbpp/901"] and source.name == "hf:google-research-datasets/mbpp[test]"
    assert calls == [("google-research-datasets/mbpp", None, "test")]
    bad_rows = [rows[0], {**rows[1], "code": 5}]
    fake_datasets(monkeypatch, lambda name: bad_rows)
    with pytest.raises(ProblemFormatError, match=r"hf:org/mbpp\[train\]:2: field 'code'"):
        HFSource("org/mbpp", layout="mbpp")
    fake_datasets(monkeypatch, lambda name: rows)
    guessed = load_source("hf:someone/MBPP-copy:validation")
    assert guessed.ids() == ["mbpp/901", "mbpp/902"]


def test_problem_is_importable_from_the_package() -> None:
    assert Problem is type(problem_from_dict(GOOD))


def test_inlining_never_uses_a_stale_or_aliased_value() -> None:
    source = (
        "def test_a():\n"
        "    xs = [1, 2]\n"
        "    assert f(xs) == 2\n"  # inlined
        "    assert f(xs) == 3\n"  # f may have mutated xs: not inlined any more
        "    n = 4\n"
        "    assert f(n) == 5\n"
        "    assert f(n) == 6\n"  # an int cannot be mutated: still inlined
        "    ys = [0]\n"
        "    zs = ys\n"
        "    zs.append(1)\n"
        "    assert f(zs) == 7\n"
        "    assert f(ys) == 8\n"
    )
    found = extract_simple_asserts(
        source, call_name="f", entry_point="f", functions=lambda n: n.startswith("test")
    )
    assert found == ["assert f([1, 2]) == 2", "assert f(4) == 5", "assert f(4) == 6"]


def test_humaneval_recording_runs_in_the_sandbox(tmp_path: Path, sandbox: Any) -> None:
    """The four recorded HumanEval problems' ``check`` runs only in the sandbox (rule: data is
    untrusted): a record whose check writes a file and exits leaves the host untouched."""
    from codea1_env.problems.humaneval import record_gt_tests

    marker = tmp_path / "ran_on_host"
    hostile = {
        "task_id": "x/hostile",
        "prompt": "def f(x):\n",
        "canonical_solution": "    return x * 2\n",
        "entry_point": "f",
        "test": (
            "def check(candidate):\n"
            f"    open({str(marker)!r}, 'w').write('x')\n"
            "    for i in range(3):\n"
            "        assert abs(candidate(i * 0.5) - i) < 1e-9\n"
        ),
    }
    before = sandbox.jobs
    # the sandbox's private filesystem swallows the write; the calls still come back
    assert record_gt_tests(hostile, sandbox=sandbox) == []  # the check's open() fails in there
    assert sandbox.jobs == before + 1
    assert not marker.exists()
    hostile["test"] = hostile["test"].replace(f"    open({str(marker)!r}, 'w').write('x')\n", "")
    lines = record_gt_tests(hostile, sandbox=sandbox)
    assert lines == ["assert f(0.0) == 0.0", "assert f(0.5) == 1.0", "assert f(1.0) == 2.0"]
    exiting = dict(hostile, canonical_solution="    import os; os._exit(3)\n", task_id="x/exit")
    assert record_gt_tests(exiting, sandbox=sandbox) == []  # the caller survives


def test_humaneval_is_converted_once_per_process_and_each_caller_gets_its_own_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second load reuses the converted problems (nothing is converted again) and hands out
    problems equal to the first load's, with metadata dicts of its own."""
    from codea1_env.problems import humaneval

    first = humaneval.load_humaneval()

    def must_not_convert(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("HumanEval was converted a second time")

    monkeypatch.setattr(humaneval, "problem_from_dict", must_not_convert)
    second = humaneval.load_humaneval()
    assert second == first and len(second) == 164
    assert all(a is not b and a.metadata is not b.metadata for a, b in zip(first, second))
    recorded = next(p for p in second if p.metadata.get("tests_recorded"))
    recorded.metadata["mine"] = 1
    assert "mine" not in humaneval.load_humaneval()[second.index(recorded)].metadata


def test_the_bank_is_converted_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from codea1_env.problems import sources

    first = BankSource()

    def must_not_convert(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the bank was converted a second time")

    monkeypatch.setattr(sources, "collect_problems", must_not_convert)
    second = BankSource()
    assert list(second) == list(first) and len(second) == len(first) > 0
    a, b = next(iter(first)), next(iter(second))
    assert a is not b and a.metadata is not b.metadata


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("canonical_solution", 'def f(x):\n    return "\udc80"\n', "canonical_solution"),
        ("tests", ['assert f(1) == "\udc80"'], "tests[0]"),
        ("task_id", "t\ud800", "task_id"),
    ],
)
def test_a_lone_surrogate_in_a_problem_file_is_named_by_line_and_field(
    tmp_path: Path, field: str, value: object, named: str
) -> None:
    # JSON's "\udc80" escape decodes to text no sandbox, tokenizer or SQLite book takes
    record: dict[str, Any] = {
        "task_id": "t",
        "prompt": "def f(x):\n",
        "entry_point": "f",
        "canonical_solution": "def f(x):\n    return x\n",
        "tests": ["assert f(1) == 1"],
    }
    good = json.dumps(record)
    record[field] = value
    path = tmp_path / "p.jsonl"
    path.write_text(good.replace('"t"', '"u"') + "\n" + json.dumps(record) + "\n")
    field_name = named.replace("[", r"\[").replace("]", r"\]")
    with pytest.raises(ProblemFormatError, match=rf"p\.jsonl:2: field '{field_name}'.*not UTF-8"):
        load_source(f"jsonl:{path}")
