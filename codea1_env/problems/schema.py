r"""The JSONL problem schema: one problem per line, validated into :class:`Problem`.

Each line of a problem file is a JSON object. HumanEval's field names are used where they exist.

Required fields:

``task_id`` (string)
    Unique within the file, e.g. ``"bank/clamp"``.
``prompt`` (string)
    What the coder sees. For function problems usually the header and the docstring, e.g. the
    line ``def clamp(x: int, lo: int, hi: int) -> int:`` followed by an indented docstring.
``entry_point`` (string)
    The function under test, a Python identifier. May be empty only for stdio problems.
``canonical_solution`` (string)
    The ground-truth (GT) code: a complete program defining ``entry_point``, or (HumanEval style)
    the body that completes ``prompt``. Stdio problems: a program reading stdin.
``tests`` (list of strings) **or** ``io_pairs`` (list of objects), exactly one of them, non-empty
    ``tests``: GT tests, one ``assert`` statement each, calling ``entry_point``, e.g.
    ``"assert clamp(5, 0, 3) == 3"``. ``io_pairs``: stdin/stdout examples for stdio problems,
    ``{"input": "1 2\n", "output": "3\n"}``.

Optional fields:

``difficulty`` (number in [0, 1], 0 easy), ``tags`` (list of strings), ``metadata`` (object).
Any other field is kept in ``metadata`` under its own name.

HumanEval fallback: a record with neither ``tests`` nor ``io_pairs`` but a ``test`` string holding
HumanEval's ``def check(candidate): ...`` is accepted: its simple ``assert candidate(...) == ...``
lines become ``tests`` calling ``entry_point`` (see :mod:`codea1_env.problems.asserts`) and the
original string is kept as ``metadata["test"]``. If none can be converted the record is rejected.

Errors: every problem is reported as :class:`ProblemFormatError`, whose text names the file,
the line and the field, e.g. ``bank.jsonl:12: field 'tests': expected a list of strings``.
"""

from __future__ import annotations

import ast
import keyword
import math
import os
from collections.abc import Callable, Mapping
from typing import Any

from codea1_env.problems.asserts import check_assert_line, extract_simple_asserts
from codea1_env.problems.problem import IOPair, Problem, top_level_names
from codea1_env.problems.pysource import parse_python

__all__ = [
    "KNOWN_FIELDS",
    "ProblemFormatError",
    "problem_from_dict",
    "problem_to_dict",
]

KNOWN_FIELDS = (
    "task_id",
    "prompt",
    "entry_point",
    "canonical_solution",
    "tests",
    "io_pairs",
    "difficulty",
    "tags",
    "metadata",
)
"""Fields with a meaning in the schema; any other field is moved into ``metadata``."""

_Fail = Callable[[str | None, str], "ProblemFormatError"]


class ProblemFormatError(ValueError):
    """A problem record (or a whole file) does not follow the schema.

    Attributes:
        path: The file (or other origin, e.g. ``"<dict>"``) the record came from.
        line: 1-based line (or row) number, or None when the error is about the whole file.
        field: The offending field, or None when the record as a whole is wrong.
        message: What is wrong.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        line: int | None,
        field: str | None,
        message: str,
    ) -> None:
        self.path = None if path is None else os.fspath(path)
        self.line = line
        self.field = field
        self.message = message
        super().__init__(self._text())

    def _text(self) -> str:
        where = self.path or "<unknown>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        field = f" field {self.field!r}:" if self.field is not None else ""
        return f"{where}:{field} {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.line, self.field, self.message))


def problem_from_dict(
    record: Mapping[str, Any], *, where: str = "<dict>", line: int | None = None
) -> Problem:
    """Validate one record of the JSONL schema and build its :class:`Problem`.

    Args:
        record: The decoded JSON object.
        where: Name of the origin used in error messages (usually the file path).
        line: Line number used in error messages.

    Returns:
        The problem.

    Raises:
        ProblemFormatError: the record breaks the schema; the message names the field.
    """

    def fail(field: str | None, message: str) -> ProblemFormatError:
        return ProblemFormatError(where, line, field, message)

    if not isinstance(record, Mapping):
        raise fail(None, f"expected a JSON object, got {_json_type(record)}")
    _check_utf8(record, fail)
    task_id = _required_str(record, "task_id", fail)
    prompt = _required_str(record, "prompt", fail)
    entry_point = _string(record, "entry_point", fail, required=True, allow_empty=True)
    canonical = _required_str(record, "canonical_solution", fail)
    metadata = _metadata(record, fail)
    tests, io_pairs = _tests_and_pairs(record, entry_point, metadata, fail)
    if tests and not _is_identifier(entry_point):
        raise fail("entry_point", f"expected a Python identifier, got {entry_point!r}")
    if tests:
        for index, test in enumerate(tests):
            reason = check_assert_line(test, entry_point)
            if reason is not None:
                raise fail(f"tests[{index}]", f"{test!r} {reason}")
    problem = Problem(
        task_id=task_id,
        prompt=prompt,
        entry_point=entry_point,
        canonical_solution=canonical,
        tests=tuple(tests),
        io_pairs=tuple(io_pairs),
        difficulty=_difficulty(record, fail),
        tags=_tags(record, fail),
        metadata=metadata,
    )
    _check_gt_program(problem, fail)
    return problem


def problem_to_dict(problem: Problem) -> dict[str, Any]:
    """Return the JSONL record of ``problem``; :func:`problem_from_dict` rebuilds it."""
    record: dict[str, Any] = {
        "task_id": problem.task_id,
        "prompt": problem.prompt,
        "entry_point": problem.entry_point,
        "canonical_solution": problem.canonical_solution,
    }
    if problem.tests:
        record["tests"] = list(problem.tests)
    if problem.io_pairs:
        record["io_pairs"] = [{"input": p.input, "output": p.output} for p in problem.io_pairs]
    if problem.difficulty is not None:
        record["difficulty"] = problem.difficulty
    if problem.tags:
        record["tags"] = list(problem.tags)
    if problem.metadata:
        record["metadata"] = dict(problem.metadata)
    return record


# --- field validators ---------------------------------------------------------------------------


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "a number"
    return type(value).__name__


def _string(
    record: Mapping[str, Any], field: str, fail: _Fail, *, required: bool, allow_empty: bool
) -> str:
    if field not in record or record[field] is None:
        if required:
            raise fail(field, "missing (required string)")
        return ""
    value = record[field]
    if not isinstance(value, str):
        raise fail(field, f"expected a string, got {_json_type(value)}")
    if not allow_empty and not value.strip():
        raise fail(field, "must not be empty")
    return value


def _check_utf8(record: Mapping[str, Any], fail: _Fail) -> None:
    r"""Refuse text that is not UTF-8 (a lone surrogate such as JSON's ``"\udc80"``) by field.

    Programs, tests and ids go to the sandbox, the tokenizer and SQLite, none of which takes it.
    """
    stack: list[tuple[str, Any]] = [
        (name, record[name]) for name in KNOWN_FIELDS if name != "metadata" and name in record
    ]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise fail(
                    where, f"holds {value[exc.start : exc.end]!r} at {exc.start}: not UTF-8 text"
                ) from None
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in enumerate(value))
        elif isinstance(value, Mapping):
            stack.extend((f"{where}.{key}", item) for key, item in value.items())


def _required_str(record: Mapping[str, Any], field: str, fail: _Fail) -> str:
    return _string(record, field, fail, required=True, allow_empty=False)


def _is_identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _metadata(record: Mapping[str, Any], fail: _Fail) -> dict[str, Any]:
    given = record.get("metadata")
    if given is None:
        metadata: dict[str, Any] = {}
    elif isinstance(given, Mapping) and all(isinstance(k, str) for k in given):
        metadata = dict(given)
    else:
        raise fail("metadata", f"expected an object with string keys, got {_json_type(given)}")
    for key, value in record.items():
        if key in KNOWN_FIELDS:
            continue
        if key in metadata:
            raise fail(key, "given both at top level and inside 'metadata'")
        metadata[key] = value
    return metadata


def _tests_and_pairs(
    record: Mapping[str, Any], entry_point: str, metadata: dict[str, Any], fail: _Fail
) -> tuple[list[str], list[IOPair]]:
    tests = record.get("tests")
    pairs = record.get("io_pairs")
    if tests is not None and pairs is not None:
        raise fail("io_pairs", "give either 'tests' or 'io_pairs', not both")
    if tests is not None:
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
            raise fail("tests", "expected a list of strings (assert statements)")
        if not tests:
            raise fail("tests", "must not be empty")
        return list(tests), []
    if pairs is not None:
        return [], _io_pairs(pairs, fail)
    humaneval_test = metadata.get("test")
    if isinstance(humaneval_test, str):
        if not _is_identifier(entry_point):
            raise fail("entry_point", f"expected a Python identifier, got {entry_point!r}")
        converted = extract_simple_asserts(
            humaneval_test,
            call_name="candidate",
            entry_point=entry_point,
            functions=lambda name: name == "check",
        )
        if not converted:
            raise fail("test", "no simple 'assert candidate(...) == ...' line to convert")
        return converted, []
    raise fail("tests", "missing: give 'tests' (assert lines) or 'io_pairs' (stdin/stdout pairs)")


def _io_pairs(pairs: Any, fail: _Fail) -> list[IOPair]:
    if not isinstance(pairs, list):
        raise fail("io_pairs", f"expected a list of objects, got {_json_type(pairs)}")
    if not pairs:
        raise fail("io_pairs", "must not be empty")
    out = []
    for index, pair in enumerate(pairs):
        if not isinstance(pair, Mapping) or set(pair) != {"input", "output"}:
            raise fail(f"io_pairs[{index}]", 'expected {"input": str, "output": str}')
        if not isinstance(pair["input"], str) or not isinstance(pair["output"], str):
            raise fail(f"io_pairs[{index}]", "'input' and 'output' must be strings")
        out.append(IOPair(input=pair["input"], output=pair["output"]))
    return out


def _difficulty(record: Mapping[str, Any], fail: _Fail) -> float | None:
    value = record.get("difficulty")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail("difficulty", f"expected a number in [0, 1], got {_json_type(value)}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise fail("difficulty", f"expected a number in [0, 1], got {value!r}")
    return float(value)


def _tags(record: Mapping[str, Any], fail: _Fail) -> tuple[str, ...]:
    value = record.get("tags")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise fail("tags", "expected a list of strings")
    return tuple(value)


def _check_gt_program(problem: Problem, fail: _Fail) -> None:
    """The GT program must parse and, for function problems, define the entry point."""
    alone = _parse(problem.canonical_solution)
    if problem.kind == "stdio" or (
        isinstance(alone, ast.Module) and problem.entry_point in top_level_names(alone)
    ):
        if isinstance(alone, SyntaxError):
            raise fail("canonical_solution", f"does not parse: {_syntax(alone)}")
        return
    joined = _parse(problem.prompt + problem.canonical_solution)
    if isinstance(joined, ast.Module) and problem.entry_point in top_level_names(joined):
        return
    if isinstance(alone, SyntaxError) and isinstance(joined, SyntaxError):
        raise fail("canonical_solution", f"does not parse: {_syntax(alone)}")
    raise fail(
        "canonical_solution",
        f"does not define {problem.entry_point!r}, neither alone nor appended to the prompt",
    )


def _parse(source: str) -> ast.Module | SyntaxError:
    try:
        return parse_python(source)
    except SyntaxError as exc:
        return exc


def _syntax(exc: SyntaxError) -> str:
    return f"{exc.msg} (line {exc.lineno})"
