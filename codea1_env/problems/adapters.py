"""Layout adapters: turn records of public datasets into the package's problem schema.

Each adapter maps one raw record to a :class:`Problem` by building a record of the schema in
:mod:`codea1_env.problems.schema` and validating it there, so every layout gets the same checks.
Errors name the field of the *original* layout (``'solution'`` for KodCode, not
``'canonical_solution'``). Fields an adapter does not use are kept in ``Problem.metadata``.

Layouts:

``codea1``
    The package's own schema (also HumanEval's records, through the ``test`` fallback).
``kodcode`` (KodCode-V1, the paper's training set)
    ``question_id``, ``question``, ``solution``, ``test`` (or ``test_code``): a pytest module whose
    ``test_*`` functions hold asserts; its simple ``assert f(...) == ...`` statements become the GT
    tests (``from solution import f`` lines and anything not simple are dropped). The entry point
    comes from ``test_info[0]["function_name"]`` (a list or a single object), else from the
    solution's first ``def``. ``gpt_difficulty`` easy/medium/hard becomes 0.25/0.5/0.75;
    ``subset`` and ``style`` become tags. Prompt: the question, then the function's signature
    (from ``test_info`` or the solution) unless the question already contains its header.
``mbpp`` (MBPP, original or sanitized)
    ``task_id``, ``text`` (or ``prompt``), ``code``, ``test_list``. The entry point is the function
    called in the first test; the prompt is its signature with ``text`` as the docstring. Records
    whose tests need ``test_setup_code`` or ``test_imports`` are rejected (the tests are single
    assert lines run against the candidate alone).
``stdio`` (CodeContests / CURE / APPS style stdin-stdout problems)
    ``name`` (or ``id`` / ``task_id`` / ``problem_id``), ``description`` (or ``question`` /
    ``prompt``), ``solutions`` (CodeContests' ``{"language": [...], "solution": [...]}``, a list
    of strings, APPS' JSON-encoded list of strings, or one string) or ``solution``; tests from
    ``public_tests`` / ``tests`` plus ``private_tests`` when present, each either
    ``{"input": [...], "output": [...]}``, a list of ``[input, output]`` pairs or a list of
    ``{"input": ..., "output": ...}`` objects, or APPS' ``input_output`` JSON string. The first
    Python 3 solution that parses is the GT.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Mapping
from typing import Any

from codea1_env.problems.asserts import extract_simple_asserts
from codea1_env.problems.jsontext import decode_json
from codea1_env.problems.problem import Problem
from codea1_env.problems.pysource import parse_python
from codea1_env.problems.schema import ProblemFormatError, problem_from_dict

__all__ = [
    "LAYOUTS",
    "Adapter",
    "adapt_record",
    "from_codea1",
    "from_kodcode",
    "from_mbpp",
    "from_stdio",
]

Adapter = Callable[..., Problem]
"""``adapter(record, *, where, line) -> Problem``."""

_KODCODE_DIFFICULTY = {"easy": 0.25, "medium": 0.5, "hard": 0.75}
_CODECONTESTS_PYTHON3 = 3  # CodeContests' Language enum: 1 PYTHON (2.x), 2 CPP, 3 PYTHON3, 4 JAVA


def from_codea1(record: Mapping[str, Any], *, where: str, line: int | None) -> Problem:
    """The package's own schema (see :mod:`codea1_env.problems.schema`)."""
    return problem_from_dict(record, where=where, line=line)


def from_kodcode(record: Mapping[str, Any], *, where: str, line: int | None) -> Problem:
    """A KodCode-V1 record (see the module docstring)."""
    fail = _failer(where, line)
    _require_object(record, fail)
    question_id = _scalar_id(record, ID_FIELDS["kodcode"], fail)
    question = _text(record, ("question",), fail)
    solution = _text(record, ("solution",), fail)
    test_field = "test" if "test" in record else "test_code"
    test = _text(record, (test_field,), fail)
    _require_python(solution, "solution", fail)
    info = _kodcode_test_info(record.get("test_info"))
    entry_point = info.get("function_name") or _first_def(solution)
    if not isinstance(entry_point, str) or not entry_point:
        raise fail("test_info", "no function name in test_info and no def in the solution")
    tests = extract_simple_asserts(
        test,
        call_name=entry_point,
        entry_point=entry_point,
        functions=lambda name: name.startswith("test"),
    )
    if not tests:
        raise fail(test_field, f"no simple 'assert {entry_point}(...) == ...' statement found")
    prompt = question.rstrip()
    if f"def {entry_point}(" not in question:  # "complete"-style questions carry the header
        declaration = info.get("function_declaration")
        if not isinstance(declaration, str) or not declaration.strip():
            declaration = _signature(solution, entry_point) or f"def {entry_point}(...):"
        prompt = f"{prompt}\n\n{declaration.strip()}"
    difficulty = _KODCODE_DIFFICULTY.get(str(record.get("gpt_difficulty", "")).lower())
    used = {"question_id", "question", "solution", test_field}
    converted = {
        "task_id": f"kodcode/{question_id}",
        "prompt": prompt,
        "entry_point": entry_point,
        "canonical_solution": solution,
        "tests": tests,
        "difficulty": difficulty,
        "tags": ["kodcode"]
        + [str(record[k]) for k in ("subset", "style") if isinstance(record.get(k), str)],
        "metadata": {"test": test, **_rest(record, used)},
    }
    renames = {"task_id": "question_id", "canonical_solution": "solution", "tests": test_field}
    return _validated(converted, where, line, renames)


def from_mbpp(record: Mapping[str, Any], *, where: str, line: int | None) -> Problem:
    """An MBPP record, original or sanitized (see the module docstring)."""
    fail = _failer(where, line)
    _require_object(record, fail)
    task_id = _scalar_id(record, ID_FIELDS["mbpp"], fail)
    text_field = "text" if "text" in record else "prompt"
    text = _text(record, (text_field,), fail)
    code = _text(record, ("code",), fail)
    _require_python(code, "code", fail)
    tests = record.get("test_list")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
        raise fail("test_list", "expected a non-empty list of strings (assert statements)")
    setup = record.get("test_setup_code")
    if isinstance(setup, str) and setup.strip():
        raise fail("test_setup_code", "tests that need setup code are not supported")
    imports = record.get("test_imports")
    if isinstance(imports, list) and imports:
        raise fail("test_imports", "tests that need imports are not supported")
    entry_point = _called_function(tests[0], code)
    if entry_point is None:
        raise fail("test_list", f"cannot tell which function {tests[0]!r} tests")
    signature = _signature(code, entry_point)
    if signature is None:
        raise fail("code", f"does not define {entry_point!r} at top level")
    used = {"task_id", text_field, "code", "test_list", "test_setup_code", "test_imports"}
    converted = {
        "task_id": f"mbpp/{task_id}",
        "prompt": f"{signature}\n    {_docstring(text)}",
        "entry_point": entry_point,
        "canonical_solution": code,
        "tests": [t.strip() for t in tests],
        "tags": ["mbpp"],
        "metadata": _rest(record, used),
    }
    renames = {"canonical_solution": "code", "tests": "test_list", "prompt": text_field}
    return _validated(converted, where, line, renames)


def from_stdio(record: Mapping[str, Any], *, where: str, line: int | None) -> Problem:
    """A stdin/stdout record, CodeContests / CURE / APPS style (see the module docstring)."""
    fail = _failer(where, line)
    _require_object(record, fail)
    name = _scalar_id(record, ID_FIELDS["stdio"], fail)
    prompt = _text(record, ("description", "question", "prompt"), fail)
    solution_field = "solutions" if "solutions" in record else "solution"
    solution = _python_solution(record.get(solution_field))
    if solution is None:
        found = solution_field if solution_field in record else "solutions / solution"
        raise fail(found, "no Python 3 solution that parses")
    pairs: list[dict[str, str]] = []
    test_fields = [f for f in ("public_tests", "tests", "private_tests") if f in record]
    for field in test_fields:
        pairs.extend(_pairs(record[field], field, fail))
    if "input_output" in record:
        test_fields.append("input_output")
        pairs.extend(_apps_pairs(record["input_output"], fail))
    if not pairs:
        raise fail("public_tests", "no input/output pairs (public_tests, tests or input_output)")
    tags = ["stdio"]
    if isinstance(record.get("cf_tags"), list):
        tags += [t for t in record["cf_tags"] if isinstance(t, str)]
    used = {
        "name",
        "id",
        "task_id",
        "problem_id",
        "description",
        "question",
        "prompt",
        "solutions",
        "solution",
        *test_fields,
    }
    converted = {
        "task_id": f"stdio/{name}",
        "prompt": prompt,
        "entry_point": "",
        "canonical_solution": solution,
        "io_pairs": pairs,
        "tags": tags,
        "metadata": _rest(record, used | {"cf_tags"}),
    }
    renames = {"canonical_solution": solution_field, "io_pairs": test_fields[0]}
    return _validated(converted, where, line, renames)


LAYOUTS: dict[str, Adapter] = {
    "codea1": from_codea1,
    "kodcode": from_kodcode,
    "mbpp": from_mbpp,
    "stdio": from_stdio,
}
"""Adapters by layout name."""


def adapt_record(
    record: Any, layout: str, *, where: str = "<dict>", line: int | None = None
) -> Problem:
    """Convert one raw record of ``layout`` into a :class:`Problem`.

    Raises:
        ValueError: ``layout`` is unknown.
        ProblemFormatError: the record does not fit the layout (a code field nested too deeply
            to read included: the adapters parse and rewrite code with recursive tools).
    """
    try:
        adapter = LAYOUTS[layout]
    except KeyError:
        raise ValueError(f"unknown layout {layout!r}; expected one of {sorted(LAYOUTS)}") from None
    try:
        return adapter(record, where=where, line=line)
    except (RecursionError, MemoryError):
        raise ProblemFormatError(
            where, line, None, "code nested too deeply to read (a solution or a test)"
        ) from None


# --- helpers ------------------------------------------------------------------------------------


def _failer(where: str, line: int | None) -> Callable[[str | None, str], ProblemFormatError]:
    def fail(field: str | None, message: str) -> ProblemFormatError:
        return ProblemFormatError(where, line, field, message)

    return fail


def _require_object(record: Any, fail: Callable[[str | None, str], ProblemFormatError]) -> None:
    if not isinstance(record, Mapping):
        raise fail(None, f"expected a JSON object, got {type(record).__name__}")


def _require_python(
    source: str, field: str, fail: Callable[[str | None, str], ProblemFormatError]
) -> None:
    try:
        parse_python(source)
    except SyntaxError as exc:
        raise fail(field, f"does not parse: {exc.msg} (line {exc.lineno})") from None


ID_FIELDS: dict[str, tuple[str, ...]] = {
    "codea1": ("task_id",),
    "kodcode": ("question_id",),
    "mbpp": ("task_id",),
    "stdio": ("name", "id", "task_id", "problem_id"),
}
"""Where each layout reads a record's id (the first present), for messages about it."""


def id_field(record: Any, layout: str) -> str:
    """The field of ``record`` that gave its id in ``layout`` (``task_id`` when unknown)."""
    fields = ID_FIELDS.get(layout, ("task_id",))
    if isinstance(record, Mapping):
        for field in fields:
            if record.get(field) is not None:
                return field
    return fields[0]


def _scalar_id(
    record: Mapping[str, Any],
    fields: tuple[str, ...],
    fail: Callable[[str | None, str], ProblemFormatError],
) -> str:
    for field in fields:
        value = record.get(field)
        if isinstance(value, bool):
            break
        if isinstance(value, int) or (isinstance(value, str) and value.strip()):
            return str(value).strip()
        if value is not None:
            raise fail(field, "expected a non-empty string or an integer")
    if len(fields) == 1:
        raise fail(fields[0], "missing (required id)")
    raise fail(" / ".join(fields), "missing (required id: one of these fields)")


def _text(
    record: Mapping[str, Any],
    fields: tuple[str, ...],
    fail: Callable[[str | None, str], ProblemFormatError],
) -> str:
    for field in fields:
        if field in record and record[field] is not None:
            value = record[field]
            if not isinstance(value, str) or not value.strip():
                raise fail(field, "expected a non-empty string")
            return value
    raise fail(" / ".join(fields), "missing (required string: one of these fields)")


def _rest(record: Mapping[str, Any], used: set[str]) -> dict[str, Any]:
    return {str(k): v for k, v in record.items() if k not in used}


def _validated(
    converted: dict[str, Any], where: str, line: int | None, renames: dict[str, str]
) -> Problem:
    """Validate through the schema, reporting errors under the layout's own field names."""
    converted = {k: v for k, v in converted.items() if v is not None}
    try:
        return problem_from_dict(converted, where=where, line=line)
    except ProblemFormatError as exc:
        field = exc.field
        if field is not None:
            head, bracket, tail = field.partition("[")
            field = renames.get(head, head) + bracket + tail
        raise ProblemFormatError(exc.path, exc.line, field, exc.message) from None


def _kodcode_test_info(info: Any) -> dict[str, Any]:
    if isinstance(info, list) and info and isinstance(info[0], Mapping):
        return dict(info[0])
    if isinstance(info, Mapping):
        return dict(info)
    return {}


def _function_defs(source: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    try:
        tree = parse_python(source)
    except SyntaxError:
        return []
    return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _first_def(source: str) -> str | None:
    defs = _function_defs(source)
    return defs[0].name if defs else None


def _signature(source: str, name: str) -> str | None:
    """``def name(args) -> ret:`` of the top-level function ``name`` in ``source``."""
    for node in _function_defs(source):
        if node.name == name:
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
            return f"{prefix} {name}({ast.unparse(node.args)}){returns}:"
    return None


def _docstring(text: str) -> str:
    body = " ".join(text.split()).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if body.endswith('"'):
        body += " "
    return f'"""{body}"""'


def _called_function(test: str, code: str) -> str | None:
    """The function a test calls: preferably one ``code`` defines, else any non-builtin."""
    try:
        tree = parse_python(test)
    except SyntaxError:
        return None
    defined = {node.name for node in _function_defs(code)}
    called = [
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    ]
    for name in called:
        if name in defined:
            return name
    for name in called:
        if not hasattr(builtins, name):
            return name
    return None


def _python_solution(value: Any) -> str | None:
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:  # APPS publishes its solutions as a JSON-encoded list of programs
            decoded = decode_json(value)
        except ValueError:
            decoded = None
        if isinstance(decoded, list) and all(isinstance(v, str) for v in decoded):
            value = decoded
    if isinstance(value, str):
        candidates = [value]
    elif isinstance(value, list):
        candidates = [v for v in value if isinstance(v, str)]
    elif isinstance(value, Mapping) and isinstance(value.get("solution"), list):
        codes = value["solution"]
        languages = value.get("language")
        if isinstance(languages, list) and len(languages) == len(codes):
            codes = [c for c, lang in zip(codes, languages) if lang == _CODECONTESTS_PYTHON3]
        candidates = [c for c in codes if isinstance(c, str)]
    else:
        return None
    for code in candidates:
        try:
            parse_python(code)
        except SyntaxError:
            continue
        return code
    return None


def _pairs(
    value: Any, field: str, fail: Callable[[str | None, str], ProblemFormatError]
) -> list[dict[str, str]]:
    if isinstance(value, Mapping):
        inputs, outputs = value.get("input"), value.get("output")
        if not isinstance(inputs, list) or not isinstance(outputs, list):
            raise fail(field, 'expected {"input": [...], "output": [...]}')
        if len(inputs) != len(outputs):
            raise fail(field, f"{len(inputs)} inputs but {len(outputs)} outputs")
        items: list[Any] = list(zip(inputs, outputs))
    elif isinstance(value, list):
        items = []
        for item in value:
            if isinstance(item, Mapping) and "input" in item and "output" in item:
                items.append((item["input"], item["output"]))
            elif isinstance(item, (list, tuple)) and len(item) == 2:
                items.append(tuple(item))
            else:
                raise fail(field, "expected [input, output] pairs or {input, output} objects")
    else:
        raise fail(field, "expected input/output pairs")
    out = []
    for index, (given, expected) in enumerate(items):
        if not isinstance(given, str) or not isinstance(expected, str):
            raise fail(f"{field}[{index}]", "input and output must be strings")
        out.append({"input": given, "output": expected})
    return out


def _apps_pairs(
    value: Any, fail: Callable[[str | None, str], ProblemFormatError]
) -> list[dict[str, str]]:
    try:
        data = decode_json(value) if isinstance(value, str) else value
    except ValueError as exc:
        raise fail("input_output", f"not valid JSON: {exc}") from None
    if not isinstance(data, Mapping) or "fn_name" in data:
        raise fail("input_output", 'expected {"inputs": [...], "outputs": [...]} (stdin style)')
    return _pairs(
        {"input": data.get("inputs"), "output": data.get("outputs")}, "input_output", fail
    )
