"""Coverage measured inside the sandbox equals coverage.py's, and LCov@k/BCov@k are right.

Three parts:

* **Equality with coverage.py.** Each trusted program below runs once in the sandbox as a coverage
  job (``Job(coverage=True)``) and once in this process under ``coverage.Coverage(branch=True)``
  (its default C tracer, exclusions cleared). Every figure must be equal: executed lines, raw
  arcs, statements, possible arcs, executed arcs, branch lines, missing branches, LCov, BCov;
  per call (top level plus that call) and for the whole run (top level plus every call).
* **Pure metrics** on hand-built models with known answers.
* **The sandbox's guarantees** with coverage on: records are validated, code compiled under the
  program's file name is not the program, tracing is not tampering, patched builtins change
  nothing, a re-run child reports its own top level again.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from codea1_env.evaluation.coverage import (
    CoverageFigures,
    ProgramModel,
    analyze_program,
    bcov_at_k,
    coverage_at_k,
    coverage_figures,
    coverage_job,
    lcov_at_k,
    mean_coverage,
    union_arcs,
)
from codea1_env.sandbox.base import CallStatus, Job, JobResult, Limits, Sandbox
from codea1_env.sandbox.child import coverage_arcs
from codea1_env.sandbox.worker.protocol import MAX_COVERAGE_ARCS
from codea1_env.sandbox.worker.tracer import ArcTracer, line_bound

LIMITS = Limits(call_timeout_s=5.0, setup_timeout_s=5.0, cpu_time_s=20.0, memory_mb=512)
OK, EXC, CRASH = CallStatus.OK, CallStatus.EXCEPTION, CallStatus.CRASH

PROGRAMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "if_elif_else": (
        """
def sign(x):
    if x > 0:
        return 1
    elif x < 0:
        return -1
    else:
        return 0
""",
        ("sign(3)", "sign(-2)"),
    ),
    "for_loop_else": (
        """
def find(items, target):
    for i, item in enumerate(items):
        if item == target:
            break
        if item is None:
            continue
    else:
        return -1
    return i
""",
        ("find([1, 2, 3], 2)", "find([None, 1], 5)"),
    ),
    "while_break_else": (
        """
def first_divisor(n):
    d = 2
    while d * d <= n:
        if n % d == 0:
            break
        d += 1
    else:
        return n
    return d
""",
        ("first_divisor(15)", "first_divisor(13)"),
    ),
    "while_true": (
        """
def collatz(n):
    steps = 0
    while True:
        if n == 1:
            return steps
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
""",
        ("collatz(6)",),
    ),
    "try_except_finally": (
        """
def parse(text):
    result = None
    try:
        result = int(text)
    except ValueError:
        result = -1
    except TypeError as exc:
        raise ValueError("bad") from exc
    else:
        result += 1
    finally:
        result = result * 2
    return result
""",
        ("parse('4')", "parse('x')"),
    ),
    "try_finally_return": (
        """
def guarded(x):
    try:
        if x:
            return 1
        y = 2
    finally:
        x = 3
    return y
""",
        ("guarded(True)",),
    ),
    "nested_try_reraise": (
        """
def risky(n):
    try:
        try:
            if n < 0:
                raise ValueError(n)
            return n
        except ValueError:
            raise
    except Exception:
        return 0
""",
        ("risky(-1)", "risky(2)"),
    ),
    "comprehensions": (
        """
def squares(n):
    evens = [i * i for i in range(n) if i % 2 == 0]
    table = {i: i + 1 for i in range(3)}
    total = sum(x for x in evens)
    return evens, table, total, {c for c in "abc"}
""",
        ("squares(5)",),
    ),
    "early_return": (
        """
def classify(values):
    if not values:
        return "empty"
    if len(values) == 1:
        return "single"
    return "many"
""",
        ("classify([])", "classify([1, 2])"),
    ),
    "nested_functions": (
        """
def make_counter(start):
    count = start
    def bump(step=1):
        nonlocal count
        count += step
        return count
    def reset():
        nonlocal count
        count = start
    bump()
    return bump(2)
""",
        ("make_counter(1)",),
    ),
    "recursion": (
        """
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)
""",
        ("fib(6)",),
    ),
    "lambda_sort": (
        """
def by_length(words):
    key = lambda w: (len(w), w)
    return sorted(words, key=key)
""",
        ("by_length(['bb', 'a', 'ccc'])",),
    ),
    "with_statement": (
        """
class Box:
    def __init__(self):
        self.log = []
    def __enter__(self):
        self.log.append("in")
        return self
    def __exit__(self, *exc):
        self.log.append("out")
        return False

def use(flag):
    box = Box()
    with box as b:
        b.log.append("body")
        if flag:
            return b.log
    return box.log
""",
        ("use(False)", "use(True)"),
    ),
    "with_two_items_swallow": (
        """
import contextlib

def quiet(x):
    with contextlib.suppress(ZeroDivisionError), contextlib.nullcontext():
        y = 1 / x
        return y
    return None
""",
        ("quiet(0)",),
    ),
    "generator": (
        """
def countdown(n):
    while n > 0:
        yield n
        n -= 1

def delegate(n):
    yield from countdown(n)
    yield 0

def run(n):
    return list(delegate(n))
""",
        ("run(3)",),
    ),
    "decorators_classes": (
        """
import functools

def twice(func):
    @functools.wraps(func)
    def wrapper(*args):
        return func(func(*args))
    return wrapper

class Shape:
    sides = 0
    def area(self):
        raise NotImplementedError

class Square(Shape):
    sides = 4
    def __init__(self, side):
        self.side = side
    def area(self):
        return self.side ** 2

@twice
def inc(x):
    return x + 1

def solve(side):
    return Square(side).area() + inc(side)
""",
        ("solve(3)",),
    ),
    "multiline_statements": (
        '''
"""Module docstring
over two lines."""

def total(values,
          scale=1):
    """Sum the values."""
    result = [
        v * scale
        for v in values
    ]
    if (len(result) > 2 and
            result[0] > 0):
        return sum(result,
                   0)
    return {
        "n": len(result),
    }
''',
        ("total([1, 2, 3])", "total([1])"),
    ),
    "match_statement": (
        """
def describe(value):
    match value:
        case 0:
            return "zero"
        case [x, y]:
            return f"pair {x} {y}"
        case {"k": v}:
            return v
        case _:
            return "other"
""",
        ("describe(0)", "describe([1, 2])"),
    ),
    "boolean_and_assert": (
        """
def check(a, b):
    assert a >= 0, "negative"
    ok = a > 1 and b < 5 or a == b
    if ok:
        pass
    return ok
""",
        ("check(2, 3)",),
    ),
    "exception_exits_function": (
        """
def inner(x):
    if x:
        raise KeyError(x)
    return x

def outer(x):
    try:
        return inner(x)
    except KeyError:
        return "caught"
""",
        ("outer(1)",),
    ),
    "continue_in_while": (
        """
def odd_sum(n):
    i = 0
    total = 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        total += i
    return total
""",
        ("odd_sum(5)",),
    ),
    "nested_loops": (
        """
def pairs(n):
    out = []
    for i in range(n):
        for j in range(i):
            if (i + j) % 3 == 0:
                out.append((i, j))
    return out
""",
        ("pairs(4)", "pairs(0)"),
    ),
    "single_line_bodies": (
        """
def tiny(x):
    if x: return 1
    for i in range(x): pass
    while x > 5: x -= 1
    return 0
""",
        ("tiny(0)", "tiny(7)"),
    ),
    "nested_with": (
        """
import contextlib

def layered(x):
    with contextlib.nullcontext(1) as a:
        with contextlib.nullcontext(2) as b:
            x += a + b
    return x
""",
        ("layered(1)",),
    ),
    "global_and_class_attr": (
        """
CACHE = {}

def memo(n):
    global CACHE
    if n in CACHE:
        return CACHE[n]
    CACHE[n] = n * 2
    return CACHE[n]
""",
        ("memo(2)", "memo(2)"),
    ),
    "break_in_try_finally_loop": (
        """
def scan(items):
    found = None
    for x in items:
        try:
            if x > 2:
                found = x
                break
            if x < 0:
                continue
        finally:
            items = items
    return found
""",
        ("scan([1, -1, 3, 4])", "scan([])"),
    ),
    "except_star": (
        """
def grouped(flag):
    try:
        if flag:
            raise ExceptionGroup("g", [ValueError(1)])
        return 0
    except* ValueError:
        flag = 1
    return flag
""",
        ("grouped(True)", "grouped(False)"),
    ),
    "constant_ifs": (
        """
DEBUG = False

def f(x):
    if False:
        x = 1
    if True:
        x += 1
    if not True:
        x = 5
    while 0:
        x = 2
    if DEBUG:
        x = 3
    return x
""",
        ("f(1)",),
    ),
    "walrus_ternary": (
        """
def g(values):
    if (n := len(values)) > 2:
        return n
    return -1 if not values else values[0]
""",
        ("g([1,2,3])", "g([])"),
    ),
    "class_decorator_nested_class": (
        """
import dataclasses

@dataclasses.dataclass
class Point:
    x: int
    y: int = 0

    class Meta:
        tag = "p"

    def norm(self):
        return abs(self.x) + abs(self.y)

def solve(a, b):
    return Point(a, b).norm()
""",
        ("solve(1, -2)",),
    ),
    "multiline_lambda_genexpr": (
        """
def h(items):
    key = (lambda item:
           item[1])
    best = max((
        pair
        for pair in items
        if pair[0] > 0
    ), key=key, default=None)
    return best
""",
        ("h([(1, 2), (0, 9), (2, 1)])",),
    ),
    "raise_at_module_guard": (
        """
import math

def safe_sqrt(x):
    if x < 0:
        raise ValueError("negative")
    return math.sqrt(x)

def solve(x):
    try:
        return safe_sqrt(x)
    except ValueError:
        return None
""",
        ("solve(4)", "solve(-1)"),
    ),
    "stacked_decorators": (
        """
import functools

def tag(name):
    def deco(func):
        return func
    return deco

@tag("a")
@tag(
    "b")
@functools.lru_cache(maxsize=None)
def cached(n):
    return n if n < 2 else cached(n - 1) + cached(n - 2)
""",
        ("cached(10)",),
    ),
    "try_else_no_exception": (
        """
def div(a, b):
    try:
        q = a / b
    except ZeroDivisionError:
        return None
    else:
        if q > 1:
            return "big"
        return q
    finally:
        pass
""",
        ("div(4, 2)", "div(1, 4)"),
    ),
    "yield_in_try": (
        """
def gen(n):
    try:
        for i in range(n):
            yield i
    finally:
        n = 0

def take(n):
    g = gen(n)
    first = next(g)
    g.close()
    return first
""",
        ("take(3)",),
    ),
    "while_else_break_nested": (
        """
def search(grid, target):
    r = 0
    while r < len(grid):
        c = 0
        while c < len(grid[r]):
            if grid[r][c] == target:
                break
            c += 1
        else:
            r += 1
            continue
        return (r, c)
    return None
""",
        ("search([[1, 2], [3, 4]], 3)", "search([[1]], 9)"),
    ),
    "empty_function_body_docstring": (
        '''
def noop():
    """Nothing."""

def solve(x):
    noop()
    return x
''',
        ("solve(1)",),
    ),
    "with_return_in_with_nested_if": (
        """
import io

def read_first(text):
    with io.StringIO(text) as handle:
        for line in handle:
            if line.strip():
                return line.strip()
    return ""
""",
        ("read_first('\\n a\\n')", "read_first('')"),
    ),
    "exception_in_comprehension": (
        """
def safe(values):
    try:
        return [10 // v for v in values]
    except ZeroDivisionError:
        return []
""",
        ("safe([1, 0])", "safe([2])"),
    ),
}

NEEDS: dict[str, tuple[int, int]] = {"except_star": (3, 11)}
"""Programs that need a newer Python than the oldest supported one."""
CASES = [name for name in PROGRAMS if sys.version_info >= NEEDS.get(name, (3, 10))]


# --------------------------------------------------------------------------------------------
# coverage.py, outside the sandbox
# --------------------------------------------------------------------------------------------


def reference(
    program: str,
    calls: Sequence[str],
    path: Path,
    monkeypatch: pytest.MonkeyPatch,
    only: int | None = None,
) -> dict[str, Any]:
    """What coverage.py measures when ``program`` runs its top level and then ``calls``.

    ``only``: measure the top level and that call only (the calls before it still run, untraced,
    as they did in the sandbox's child before it).
    """
    coverage = pytest.importorskip("coverage")
    pytest.importorskip("coverage.tracer")  # the C tracer, coverage.py's default core
    if tuple(coverage.version_info[:3]) < (7, 13, 5):
        pytest.skip("the definitions checked are coverage.py's from 7.13.5 on")
    monkeypatch.setenv("COVERAGE_CORE", "ctrace")
    path.write_text(program)
    filename = str(path)
    cov = coverage.Coverage(branch=True, data_file=None, config_file=False, include=[filename])
    cov.clear_exclude()
    code = compile(program, filename, "exec", dont_inherit=True)
    namespace: dict[str, Any] = {"__name__": "solution"}
    compiled = [compile(call, "<call>", "eval", dont_inherit=True) for call in calls]
    cov.start()
    try:
        exec(code, namespace)
        for index, call in enumerate(compiled):
            if only is not None and index > only:
                break
            traced = only is None or index == only
            if not traced:
                cov.stop()
            try:
                eval(call, namespace)
            except Exception:  # noqa: BLE001, S110 - a call may raise, like in the sandbox
                pass
            finally:
                if not traced:
                    cov.start()
    finally:
        cov.stop()
    data = cov.get_data()
    analysis = cov._analyze(filename)
    numbers = analysis.numbers
    missing = {(a, b) for a, ends in analysis.missing_branch_arcs().items() for b in ends}
    return {
        "lines": set(data.lines(filename) or ()),
        "arcs": set(data.arcs(filename) or ()),
        "statements": set(analysis.statements),
        "possible": set(analysis.arc_possibilities),
        "executed": set(analysis.executed),
        "executed_arcs": set(analysis.arcs_executed),
        "branch_lines": set(analysis._branch_lines()),
        "missing_branches": missing,
        "lcov": numbers.n_executed / numbers.n_statements if numbers.n_statements else None,
        "bcov": (
            (numbers.n_branches - numbers.n_missing_branches) / numbers.n_branches
            if numbers.n_branches
            else None
        ),
    }


def ours(program: str, raw: frozenset[tuple[int, int]]) -> dict[str, Any]:
    """The same figures from the sandbox's raw arcs and this package's static model."""
    model = analyze_program(program)
    figures = coverage_figures(model, raw)
    return {
        "lines": {line for arc in raw for line in arc if line > 0},
        "arcs": set(raw),
        "statements": set(model.statements),
        "possible": set(model.arcs),
        "executed": set(figures.covered_lines),
        "executed_arcs": set(model.executed_arcs(raw)),
        "branch_lines": set(model.branch_lines),
        "missing_branches": set(model.branches - figures.covered_branches),
        "lcov": figures.lcov,
        "bcov": figures.bcov,
    }


@pytest.fixture(scope="module")
def sandbox_runs(shared_sandbox: Sandbox) -> dict[str, JobResult]:
    """Every program's coverage job, in one batch."""
    jobs = [
        coverage_job(PROGRAMS[name][0], PROGRAMS[name][1], limits=LIMITS, tag=name)
        for name in CASES
    ]
    return {result.tag: result for result in shared_sandbox.run(jobs)}


def test_enough_programs_and_constructs() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize("name", CASES)
def test_whole_run_equals_coverage_py(
    name: str, sandbox_runs: dict[str, JobResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program, calls = PROGRAMS[name]
    result = sandbox_runs[name]
    assert result.compiled, result.setup_error
    assert all(call.coverage is not None for call in result.calls), result.calls
    raw = union_arcs(call.coverage for call in result.calls)
    expected = reference(program, calls, tmp_path / f"{name}.py", monkeypatch)
    got = ours(program, raw)
    for key in expected:
        assert got[key] == expected[key], (key, sorted(got[key] or ()), sorted(expected[key] or ()))
    assert not any(key.startswith("audit_") for key in result.events), result.events


@pytest.mark.parametrize("name", CASES)
def test_each_call_equals_coverage_py_of_the_top_level_and_that_call(
    name: str, sandbox_runs: dict[str, JobResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program, calls = PROGRAMS[name]
    result = sandbox_runs[name]
    for index in range(len(calls)):
        raw = result.calls[index].coverage
        assert raw is not None
        path = tmp_path / f"{name}_{index}.py"
        expected = reference(program, calls, path, monkeypatch, only=index)
        assert set(raw) == expected["arcs"], (index, sorted(raw), sorted(expected["arcs"]))
        got = ours(program, raw)
        assert (got["lcov"], got["bcov"]) == (expected["lcov"], expected["bcov"])


def test_the_tracer_alone_equals_coverage_py_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tracer's logic without the sandbox (also what the sandbox runs)."""
    for name in CASES:
        program, calls = PROGRAMS[name]
        code = compile(program, "<solution>", "exec", dont_inherit=True)
        tracer = ArcTracer(line_bound(program))
        tracer.watch(code)
        namespace: dict[str, Any] = {"__name__": "solution"}
        compiled = [compile(call, "<call>", "eval", dont_inherit=True) for call in calls]
        tracer.start()
        try:
            exec(code, namespace)
            for call in compiled:
                try:
                    eval(call, namespace)
                except Exception:  # noqa: BLE001, S110
                    pass
        finally:
            tracer.stop()
        expected = reference(program, calls, tmp_path / f"{name}.py", monkeypatch)
        assert tracer.arcs == expected["arcs"], name


# --------------------------------------------------------------------------------------------
# Pure metrics, by hand
# --------------------------------------------------------------------------------------------

# def f(x):          1
#     if x > 0:      2
#         return 1   3
#     return 2       4
HAND = ProgramModel(
    statements=frozenset({1, 2, 3, 4}),
    arcs=frozenset({(1, -1), (2, 3), (2, 4), (3, -1), (4, -1)}),
)
SETUP = frozenset({(-1, 1), (1, -1)})
POSITIVE = SETUP | {(-1, 2), (2, 3), (3, -1)}
NEGATIVE = SETUP | {(-1, 2), (2, 4), (4, -1)}


def test_hand_model_figures() -> None:
    assert HAND.branch_lines == {2}
    assert HAND.branches == {(2, 3), (2, 4)}
    assert HAND.exit_counts == {1: 1, 2: 2, 3: 1, 4: 1}
    both = coverage_figures(HAND, POSITIVE | NEGATIVE)
    assert (both.lcov, both.bcov) == (1.0, 1.0)
    one = coverage_figures(HAND, POSITIVE)
    assert one.covered_lines == {1, 2, 3} and one.lcov == 0.75
    assert one.covered_branches == {(2, 3)} and one.bcov == 0.5
    assert coverage_figures(HAND, ()).lcov == 0.0 and coverage_figures(HAND, ()).bcov == 0.0


def test_at_k_uses_the_first_k_kept_tests() -> None:
    runs = [POSITIVE, POSITIVE, NEGATIVE]
    assert lcov_at_k(HAND, runs, 1) == 0.75 and bcov_at_k(HAND, runs, 1) == 0.5
    assert lcov_at_k(HAND, runs, 2) == 0.75 and bcov_at_k(HAND, runs, 2) == 0.5
    assert lcov_at_k(HAND, runs, 3) == 1.0 and bcov_at_k(HAND, runs, 3) == 1.0
    assert lcov_at_k(HAND, runs, 8) == 1.0  # fewer kept tests than k: all of them
    assert lcov_at_k(HAND, [], 8) == 0.0 and bcov_at_k(HAND, [], 8) == 0.0
    assert lcov_at_k(HAND, [None, NEGATIVE], 1) == 0.0  # a run without data adds nothing
    assert coverage_at_k(HAND, [NEGATIVE], 8).covered_branches == {(2, 4)}
    with pytest.raises(ValueError):
        lcov_at_k(HAND, runs, 0)
    with pytest.raises(ValueError):
        bcov_at_k(HAND, runs, True)


def test_undefined_figures_and_means() -> None:
    straight = ProgramModel(statements=frozenset({1, 2}), arcs=frozenset({(1, -1), (2, -1)}))
    figures = coverage_figures(straight, {(-1, 1), (1, -1)})
    assert figures.lcov == 0.5 and figures.bcov is None and figures.n_branches == 0
    empty = CoverageFigures(
        n_statements=0, covered_lines=frozenset(), n_branches=0, covered_branches=frozenset()
    )
    assert empty.lcov is None and empty.bcov is None
    assert mean_coverage([0.5, None, 1.0]) == 0.75
    assert mean_coverage([None, None]) is None and mean_coverage([]) is None


def test_foreign_arcs_and_lines_count_for_nothing() -> None:
    forged = POSITIVE | {(40, 41), (2, 99), (-7, 7)}
    figures = coverage_figures(HAND, forged)
    assert figures.covered_lines == {1, 2, 3} and figures.covered_branches == {(2, 3)}


def test_self_arcs_multiline_and_with_fixers() -> None:
    # A single-line loop (`for i in x: pass` on line 2) reports (2, 2): it counts as line 2's
    # only possible arc when there is one.
    loop = ProgramModel(statements=frozenset({1, 2}), arcs=frozenset({(1, 2), (2, -1)}))
    assert loop.executed_arcs({(2, 2)}) == {(2, -1)}
    two = ProgramModel(statements=frozenset({2}), arcs=frozenset({(2, 3), (2, -1)}))
    assert two.executed_arcs({(2, 2)}) == set()
    # Lines 3-4 are one statement: arcs into line 4 are arcs into line 3.
    multi = ProgramModel(
        statements=frozenset({1, 3}), arcs=frozenset({(1, 3), (3, -1)}), multiline={3: 3, 4: 3}
    )
    assert multi.executed_arcs({(1, 4), (4, -1)}) == {(1, 3), (3, -1)}
    assert multi.executed_lines({(1, 4)}) == {1, 3}
    # A `with` on line 1 whose body ends on line 2, followed by line 3: 2 -> 1 -> 3 reads 2 -> 3.
    fixed = ProgramModel(
        statements=frozenset({1, 2, 3}),
        arcs=frozenset({(1, 2), (2, 3), (3, -1)}),
        with_fixers={(2, 1): (2, 3), (1, 3): None},
    )
    assert fixed.executed_arcs({(1, 2), (2, 1), (1, 3), (3, -1)}) == {(1, 2), (2, 3), (3, -1)}


def test_analyze_program_basics() -> None:
    model = analyze_program("def f(x):\n    if x > 0:\n        return 1\n    return 2\n")
    assert model.statements == HAND.statements and model.arcs == HAND.arcs
    assert model.max_line == 5
    for blank in ("", "\n\n", "# only a comment\n"):  # Python 3.10 compiles a line-1 return
        assert analyze_program(blank).statements == frozenset(), repr(blank)
    with pytest.raises(SyntaxError):
        analyze_program("def broken(:\n")


# --------------------------------------------------------------------------------------------
# The sandbox with coverage on
# --------------------------------------------------------------------------------------------

FUNC = "def f(x):\n    if x > 0:\n        return 1\n    return 2\n"


def run_one(sandbox: Sandbox, program: str, calls: Sequence[str], **kw: Any) -> JobResult:
    [result] = sandbox.run([Job(program, calls=tuple(calls), limits=LIMITS, **kw)])
    return result


def test_untraced_jobs_carry_no_coverage(sandbox: Sandbox) -> None:
    result = run_one(sandbox, FUNC, ["f(1)"])
    assert result.calls[0].value == 1 and result.calls[0].coverage is None


def test_coverage_job_values_and_arcs(sandbox: Sandbox) -> None:
    result = run_one(sandbox, FUNC, ["f(1)", "f(-1)", "f(0) / 0", "g()"], coverage=True)
    first, second, raised, missing = result.calls
    assert (first.value, second.value) == (1, 2)
    assert first.coverage == POSITIVE and second.coverage == NEGATIVE
    assert raised.status is EXC and raised.coverage == NEGATIVE
    assert missing.status is EXC and missing.coverage == SETUP  # NameError: only the top level
    assert not any(key.startswith("audit_") for key in result.events), result.events


def test_code_compiled_under_the_program_name_is_not_the_program(sandbox: Sandbox) -> None:
    program = FUNC + "\n" * 20
    forge = "exec(compile('\\n' * 10 + 'x = 1\\nif x:\\n    y = 2\\n', '<solution>', 'exec'))"
    result = run_one(sandbox, program, [forge, "f(1)"], coverage=True)
    assert result.calls[0].status is OK
    assert result.calls[0].coverage == SETUP
    assert result.calls[1].coverage == POSITIVE


def test_a_copy_of_a_code_object_is_not_the_program(sandbox: Sandbox) -> None:
    call = "__import__('types').FunctionType(f.__code__.replace(co_name='g'), {})(1)"
    result = run_one(sandbox, FUNC, [call], coverage=True)
    assert result.calls[0].value == 1 and result.calls[0].coverage == SETUP


def test_patched_builtins_change_nothing(sandbox: Sandbox) -> None:
    program = (
        "import builtins\n"
        "def f(x):\n"
        "    if x:\n"
        "        builtins.set = builtins.len = builtins.id = builtins.type = None\n"
        "    return x\n"
    )
    result = run_one(sandbox, program, ["f(1)", "f(0)"], coverage=True)
    assert [c.value for c in result.calls] == [1, 0]
    setup = {(-1, 1), (1, 2), (2, -1)}
    assert result.calls[0].coverage == setup | {(-2, 3), (3, 4), (4, 5), (5, -2)}
    assert result.calls[1].coverage == setup | {(-2, 3), (3, 5), (5, -2)}


def test_a_program_that_stops_the_tracer_loses_its_coverage_and_is_counted(
    sandbox: Sandbox,
) -> None:
    program = "import sys\ndef f():\n    sys.settrace(None)\n    return 1\n"
    result = run_one(sandbox, program, ["f()", "f()"], coverage=True)
    assert [c.value for c in result.calls] == [1, 1]
    assert result.calls[0].coverage == {(-1, 1), (1, 2), (2, -1), (-2, 3)}
    assert result.events.get("audit_tamper", 0) >= 1


def test_each_fresh_child_reports_its_own_top_level(sandbox: Sandbox) -> None:
    program = "import os\nX = 1\ndef f(x):\n    if x:\n        os._exit(3)\n    return X\n"
    result = run_one(sandbox, program, ["f(1)", "f(0)"], coverage=True)
    assert result.calls[0].status is CallStatus.EARLY_EXIT and result.calls[0].coverage is None
    assert result.calls[1].value == 1
    assert result.calls[1].coverage == {(-1, 1), (1, 2), (2, 3), (3, -1), (-3, 4), (4, 6), (6, -3)}
    assert result.events["child_runs"] == 2


def test_stdio_jobs_run_traced_and_unchanged(sandbox: Sandbox) -> None:
    """Stdio jobs run with coverage on; their calls carry no coverage yet (function mode only)."""
    program = "n = int(input())\nif n > 1:\n    print('big')\nelse:\n    print('small')\n"
    job = Job(program, stdin_inputs=("5\n", "0\n"), limits=LIMITS, coverage=True)
    [result] = sandbox.run([job])
    assert [c.value for c in result.calls] == ["big\n", "small\n"]
    assert not result.events.get("protocol_violations")


def forge(record: str) -> str:
    return (
        "import os, struct\n"
        "def f():\n"
        f"    data = {record!r}.encode()\n"
        "    os.write(3, struct.pack('>I', len(data)) + data)\n"
        "    return 7\n"
        "def g():\n"
        "    return 8\n"
    )


@pytest.mark.parametrize(
    "cov",
    ['"cov":[1]', '"cov":[1,0]', '"cov":[1,99]', '"cov":[true,2]', '"cov":[1.0,2]', '"cov":7', ""],
)
def test_malformed_coverage_records_break_the_channel(sandbox: Sandbox, cov: str) -> None:
    tail = f",{cov}" if cov else ""
    record = '{"k":"call","i":0,"s":"ok","d":0.001,"v":1' + tail + "}"
    result = run_one(sandbox, forge(record), ["f()", "g()"], coverage=True)
    assert result.calls[0].status is CRASH
    assert "malformed result channel" in result.calls[0].error
    assert result.calls[1].value == 8  # the next call runs in a fresh child
    assert result.events["protocol_violations"] == 1


def test_a_well_formed_forged_record_claims_only_lines_of_the_program(sandbox: Sandbox) -> None:
    """A forger moves only its own job's figures, within its own program's lines."""
    program = forge('{"k":"call","i":0,"s":"ok","d":0.001,"v":7,"cov":[-2,3,3,-2,8,-8]}')
    result = run_one(sandbox, program, ["f()", "g()"], coverage=True)
    claimed = result.calls[0]
    assert claimed.value == 7  # a value f() returns anyway
    setup = {(-1, 1), (1, 2), (2, 6), (6, -1)}
    assert claimed.coverage == setup | {(-2, 3), (3, -2), (8, -8)}
    figures = coverage_figures(analyze_program(program), claimed.coverage)
    assert figures.covered_lines == {1, 2, 3, 6}  # line 8 is no statement
    assert result.calls[1].status is CRASH  # the runner's real record is then out of sequence


def test_coverage_arcs_validation() -> None:
    assert coverage_arcs({"cov": []}, 3) == frozenset()
    assert coverage_arcs({"cov": [-1, 2, 2, -1]}, 3) == {(-1, 2), (2, -1)}
    for bad in ([1], [0, 1], [1, 4], [-4, 1], [True, 1], [1.0, 2], "1,2", None):
        with pytest.raises(ValueError):
            coverage_arcs({"cov": bad}, 3)
    with pytest.raises(ValueError):
        coverage_arcs({}, 3)
    with pytest.raises(ValueError):
        coverage_arcs({"cov": [1, 2] * (MAX_COVERAGE_ARCS + 1)}, 3)


def test_tracer_caps_what_one_record_carries() -> None:
    tracer = ArcTracer(10, max_arcs=2)
    tracer.arcs.update({(1, 2), (2, 3), (3, 4)})
    assert len(tracer.take().split(",")) == 4 and not tracer.arcs
    assert tracer.take() == ""


def test_tracer_watches_every_nested_code_object() -> None:
    code = compile(
        "def f():\n    g = lambda: [i for i in ()]\n    return g\nclass C:\n    pass\n",
        "<solution>",
        "exec",
    )
    tracer = ArcTracer(6)
    tracer.watch(code)
    names = {item.co_name for item, _ in tracer._codes.values()}
    assert {"<module>", "f", "<lambda>", "C"} <= names
    assert isinstance(next(iter(tracer._codes.values()))[0], types.CodeType)
