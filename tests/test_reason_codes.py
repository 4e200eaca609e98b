"""Every reason the game and the referee produce is a documented code of ``scoring.reasons``.

The producers are scanned as source: every string literal that becomes a reason (assigned to a
``reason`` name or attribute, to ``reasons[...]``, passed as ``reason=`` / ``parse_reason=``,
given to ``Rejected``, ``ParsedTests``, ``ParsedIOPairs``, ``reject``, ``with_detail``, appended
to a suite's ``discarded``, or returned by ``check_move``, ``program_of``, ``trivial_reason``)
must have its code (:func:`~codea1_env.scoring.reasons.reason_code`) in ``REASON_CODES``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codea1_env.game.duel import check_move
from codea1_env.scoring import inliner, reasons
from codea1_env.scoring.plan import program_of
from codea1_env.scoring.reasons import REASON_CODES, REASON_MEANINGS, reason_code

ROOT = Path(__file__).resolve().parent.parent
PRODUCERS = sorted(
    [
        *(ROOT / "codea1_env" / "scoring").glob("*.py"),
        ROOT / "codea1_env" / "game" / "duel.py",
        ROOT / "codea1_env" / "game" / "host.py",
        ROOT / "codea1_env" / "evaluation" / "suite_eval.py",
    ]
)
REASON_ARG = {"Rejected": 2, "reject": 2, "ParsedTests": 3, "ParsedIOPairs": 2, "with_detail": 0}
REASON_RETURNS = {"check_move", "program_of", "trivial_reason"}


def _strings(node: ast.AST | None) -> Iterator[str]:
    """The literal reason values an expression can give (the leading text of an f-string)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            yield first.value
    elif isinstance(node, ast.IfExp):
        yield from _strings(node.body)
        yield from _strings(node.orelse)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _strings(value)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        yield from _strings(node.left)
    elif isinstance(node, ast.Call) and _name(node.func) == "with_detail" and node.args:
        yield from _strings(node.args[0])


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _is_reason_target(target: ast.AST) -> bool:
    if isinstance(target, ast.Subscript):
        return _name(target.value) == "reasons"
    return _name(target).endswith("reason")


def produced_reasons(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, value)`` of every literal reason in a module."""
    for node in ast.walk(tree):
        values: list[ast.AST | None] = []
        if isinstance(node, ast.Assign) and any(_is_reason_target(t) for t in node.targets):
            values.append(node.value)
        elif isinstance(node, ast.AnnAssign) and _is_reason_target(node.target):
            values.append(node.value)
        elif isinstance(node, ast.Call):
            values += [k.value for k in node.keywords if k.arg in ("reason", "parse_reason")]
            index = REASON_ARG.get(_name(node.func))
            if index is not None and len(node.args) > index:
                values.append(node.args[index])
            if (
                _name(node.func) == "append"
                and isinstance(node.func, ast.Attribute)
                and _name(node.func.value) == "discarded"
                and node.args
                and isinstance(node.args[0], ast.Tuple)
            ):
                values.append(node.args[0].elts[1])
        elif isinstance(node, ast.FunctionDef) and node.name in REASON_RETURNS:
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and ret.value is not None:
                    value = ret.value
                    values.append(value.elts[-1] if isinstance(value, ast.Tuple) else value)
        for found in values:
            for text in _strings(found):
                yield node.lineno if hasattr(node, "lineno") else 0, text


def test_the_meanings_cover_exactly_the_families() -> None:
    families = (
        reasons.MOVE_REASONS
        | reasons.PROGRAM_REASONS
        | reasons.PARSE_REASONS
        | reasons.REJECT_REASONS
        | reasons.TRIVIAL_REASONS
        | reasons.DISCARD_REASONS
        | reasons.DROP_REASONS
        | reasons.REWARD_REASONS
    )
    assert families == REASON_CODES == set(REASON_MEANINGS)
    assert reasons.EMPTY_REASONS <= reasons.PARSE_REASONS
    assert {inliner.TOO_LARGE, inliner.UNRESOLVED} <= reasons.REJECT_REASONS


@pytest.mark.parametrize("path", PRODUCERS, ids=lambda p: p.name)
def test_every_produced_reason_is_a_code(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    unknown = [
        (line, text)
        for line, text in produced_reasons(tree)
        if text and reason_code(text) not in REASON_CODES
    ]
    assert not unknown, f"{path.name}: reasons outside scoring.reasons.REASON_CODES: {unknown}"


def test_the_scan_sees_the_producers() -> None:
    found = {
        reason_code(text)
        for path in PRODUCERS
        for _line, text in produced_reasons(ast.parse(path.read_text(encoding="utf-8")))
        if text
    }
    # a sample from every family, so the scan cannot silently find nothing
    assert {"binary", "did_not_run", "golden_mode", "no_code", "syntax_error"} <= found
    assert {"no_valid_asserts", "not_assert", "trivial", "bad_arguments", "no_tests"} <= found


def test_runtime_reasons_are_codes() -> None:
    assert reason_code(check_move(b"\xff")[1]) == "binary"
    assert check_move("   ")[1] == "empty"
    assert reason_code(program_of("def f(:\n")[1]) == "syntax_error"
    assert reason_code("did_not_run: NameError") == "did_not_run"
    assert reason_code("trivial:always_passes") == "trivial"
    assert reason_code("") == ""


def test_every_code_is_documented() -> None:
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    missing = [code for code in sorted(REASON_CODES) if f"`{code}`" not in text]
    assert not missing, f"docs/metrics.md does not list the reason codes {missing}"


def test_the_drop_reasons_are_the_grade_statuses_of_tests_not_kept() -> None:
    import typing

    from codea1_env.scoring.grading import GradeStatus

    kept = {"valid", "invalid_kept"}
    assert set(typing.get_args(GradeStatus)) - kept == reasons.DROP_REASONS


def test_every_reason_an_episode_reports_is_a_code(sandbox: Any) -> None:
    from codea1_env.envs.duel_env import CodeTestDuelEnv

    problem = {
        "task_id": "custom/div",
        "prompt": 'def div(a: int, b: int) -> int:\n    """a // b"""',
        "entry_point": "div",
        "canonical_solution": "def div(a, b):\n    return a // b\n",
        "tests": ["assert div(4, 2) == 2"],
    }
    suite = "\n".join(
        [
            "assert div(4, 2) == 2",
            "assert div(4, 2) == 2",  # dropped_duplicate
            "assert div(1, 0) == 0",  # dropped_gt_error
            "assert div(1, 2) != 3",  # not_equality
            "print(div)",  # not_assert
        ]
    )
    env = CodeTestDuelEnv(sandbox=sandbox)
    env.reset(options={"problem": problem})
    env.step("```python\ndef div(a, b):\n    return a // b\n```")
    *_, info = env.step(suite)
    env.close()
    found = {entry["reason"] for entry in info["rejected"]}
    assert {"dropped_duplicate", "dropped_gt_error", "not_equality", "not_assert"} <= found
    assert {reason_code(reason) for reason in found} <= REASON_CODES


def test_a_syntax_error_without_a_line_names_none() -> None:
    # NUL bytes: Python's SyntaxError has no line number; the reason must not say "line None"
    # (3.10 raises ValueError, later Pythons a SyntaxError with no line number)
    code, reason = program_of("def f():\n    return 1\x00")
    assert code is None and reason.startswith("syntax_error: ") and "None" not in reason
    code, reason = program_of("def f(:\n")  # the message itself differs between Pythons
    assert code is None and reason.startswith("syntax_error: line 1: ")


@pytest.mark.filterwarnings("error")  # as a user's pytest config or -W error may set them
def test_whether_a_program_parses_does_not_depend_on_the_warning_filters() -> None:
    # an invalid escape: the compiler warns (DeprecationWarning; SyntaxWarning from 3.12), and
    # under an "error" filter ast.parse would raise SyntaxError for a program that runs
    program = 'def f(x):\n    return "a\\Vb" if x else x is 1\n'
    assert program_of(program) == (program, "")
    assert program_of(f"```python\n{program}```") == (program.rstrip("\n"), "")
    assert reason_code(program_of("def f(:\n")[1]) == "syntax_error"  # a real one still is
