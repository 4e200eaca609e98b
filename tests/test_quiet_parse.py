"""Parsing model text answers the same under any warning filter.

The compiler warns about an invalid escape such as ``"\\V"`` (``DeprecationWarning``;
``SyntaxWarning`` from Python 3.12). Under ``-W error`` or pytest's ``filterwarnings = error``
that warning becomes a :class:`SyntaxError`; every parse of model text goes through
:func:`codea1_env.problems.pysource.quiet_parse`, so each site below answers as it does under
the default filters. Each check runs under the ``error`` filter and compares with the answer
the site gives to the same text without the escape.
"""

from __future__ import annotations

import ast

import pytest

from codea1_env.game.anonymize import anonymize
from codea1_env.problems.pysource import quiet_parse
from codea1_env.scoring.arguments import arguments_expression
from codea1_env.scoring.candidate_context import hoist_imports
from codea1_env.scoring.monitor import scan_program
from codea1_env.scoring.plan import program_of
from codea1_env.scoring.quality import trivial_reason
from codea1_env.scoring.testcases import parse_tests

pytestmark = pytest.mark.filterwarnings("error")

ESCAPE = '"\\V"'  # the source text "\V": an invalid escape, two characters at run time


def test_the_compiler_warns_here_and_quiet_parse_does_not() -> None:
    with pytest.raises(SyntaxError):
        ast.parse(f"x = {ESCAPE}")  # the filter this module runs under
    assert isinstance(quiet_parse(f"x = {ESCAPE}"), ast.Module)
    assert isinstance(quiet_parse(f"len({ESCAPE})", "eval"), ast.Expression)
    with pytest.raises(SyntaxError):
        quiet_parse("def f(:")  # a real syntax error still is one


def test_a_program_with_the_escape_runs() -> None:
    program = f"def f(x):\n    return {ESCAPE} if x else x\n"
    assert program_of(program) == (program, "")


def test_the_shown_program_is_anonymized() -> None:
    plain = anonymize("def f(x):\n    secret_name = 'ab'\n    return x\n", "f")
    escaped = anonymize(f"def f(x):\n    secret_name = {ESCAPE}\n    return x\n", "f")
    assert "secret_name" not in plain and "secret_name" not in escaped


def test_imports_are_hoisted() -> None:
    rest, imports, functions = hoist_imports(f"import math\ndef g():\n    return {ESCAPE}\n")
    assert "import math" not in rest and imports and functions == {"g"}


def test_the_monitor_sees_an_early_exit() -> None:
    assert scan_program(f"import os\nx = {ESCAPE}\nos._exit(0)\n")["early_exit"]


def test_arguments_that_need_running_are_recognized() -> None:
    assert arguments_expression(f"f(len({ESCAPE}))") is not None
    assert arguments_expression("f(len('ab'))") is not None


def test_a_trivial_test_is_caught() -> None:
    (case,) = parse_tests(f"assert f({ESCAPE}) == f({ESCAPE})", "f").cases
    (plain,) = parse_tests("assert f('ab') == f('ab')", "f").cases
    assert trivial_reason(plain, "f", "")
    assert trivial_reason(case, "f", "") == trivial_reason(plain, "f", "")


def test_a_data_files_code_parses() -> None:
    from codea1_env.problems.pysource import parse_python

    assert isinstance(parse_python(f"def f():\n    return {ESCAPE}\n"), ast.Module)


def test_a_gt_with_the_escape_or_an_is_literal_gets_its_mutants() -> None:
    from codea1_env.scoring.mutation import generate_mutants

    plain = generate_mutants("def f(x):\n    s = 'ab'\n    return x + 1 if x is not None else 0\n")
    escaped = generate_mutants(
        f"def f(x):\n    s = {ESCAPE}\n    return x + 1 if x is not None else 0\n"
    )
    assert plain and len(escaped) == len(plain)
    # ``x is 1`` makes the compiler itself warn (SyntaxWarning), past the parse.
    literal = generate_mutants("def f(x):\n    return x + 1 if x is 1 else 0\n")
    assert len(literal) == len(generate_mutants("def f(x):\n    return x + 1 if x == 1 else 0\n"))


def test_the_scripted_testers_read_the_inputs() -> None:
    from codea1_env.baselines.inputs import input_hints
    from codea1_env.problems.problem import Problem

    def hints(literal: str) -> object:
        problem = Problem(
            task_id="t/escape",
            prompt="def f(x: int) -> int:\n",
            entry_point="f",
            canonical_solution=f"def f(x: int) -> int:\n    s = {literal}\n    return x\n",
            tests=(f"assert f(3) == 3 and {literal}",),
        )
        code = f"def f(x):\n    s = {literal}\n    return 7 if x > 12 else x\n"
        return input_hints(problem, code)

    assert hints(ESCAPE) == hints("'ab'")
    assert hints(ESCAPE).compared == (12,)  # type: ignore[attr-defined]


def test_the_warm_start_targets_lose_their_docstrings() -> None:
    pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")
    from agents.training.roles import strip_docstrings

    program = f'def f():\n    """Doc."""\n    return {ESCAPE}\n'
    assert "Doc." not in strip_docstrings(program)
    assert strip_docstrings("def f(:\n") == "def f(:\n"  # unparsable: unchanged


def test_coverage_analyzes_the_program() -> None:
    from codea1_env.evaluation.coverage import analyze_program

    escaped = analyze_program(f"def f(x):\n    if x is 1:\n        return {ESCAPE}\n    return x\n")
    plain = analyze_program("def f(x):\n    if x == 1:\n        return 'ab'\n    return x\n")
    assert escaped == plain


def test_an_expected_value_with_the_escape_is_a_literal() -> None:
    from codea1_env.scoring.arguments import MISSING, literal_value

    # a text no other test parses (the values are cached per text)
    value = literal_value(f"[{ESCAPE}, 'quiet-parse-expected']")
    assert value is not MISSING and value == ["\\V", "quiet-parse-expected"]
    assert literal_value(f"  ({ESCAPE},)") == ("\\V",)  # leading blanks, as ast.literal_eval


def test_threads_parsing_at_once_leave_the_filters_as_they_were() -> None:
    import sys
    import threading
    import warnings

    before = list(warnings.filters)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [
            threading.Thread(
                target=lambda: [quiet_parse(f"x = {ESCAPE}\n" * 20) for _ in range(400)]
            )
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert warnings.filters == before
