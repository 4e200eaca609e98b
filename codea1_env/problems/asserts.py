"""Reading GT ``assert`` lines out of other people's test code.

Problem files carry their tests in many shapes: HumanEval's ``check(candidate)`` function,
KodCode's pytest modules, MBPP's ``test_list``. This module turns them into the one shape the rest
of the package uses, ``assert entry(args...) == expected``, and checks such lines when a file
supplies them.

A *simple* assert has self-contained arguments and expected value: literals, containers,
arithmetic and calls to a few side-effect-free builtins (:data:`SAFE_BUILTINS`). These shapes are
accepted and rewritten:

- ``assert f(args) == expected`` (either side may hold the call; a trailing message is dropped);
- ``assert f(args) is True`` / ``False`` / ``None`` becomes ``== True`` / ``False`` / ``None``;
- ``assert f(args)`` becomes ``== True`` and ``assert not f(args)`` becomes ``== False`` (meant
  for predicates, which return ``bool``);
- ``assert tuple(f(args)) == tuple([...])`` (same for ``list``) becomes ``f(args) == [...]``.

Names assigned a simple value earlier in the same test function are inlined (``xs = [1, 2]`` then
``assert f(xs) == 3`` becomes ``assert f([1, 2]) == 3``). Everything else (asserts inside loops,
calls to helpers, tolerances such as ``abs(f(x) - y) < 1e-6``) is not simple and is left out.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterable

from codea1_env.problems.pysource import parse_python

__all__ = [
    "SAFE_BUILTINS",
    "check_assert_line",
    "extract_simple_asserts",
]

SAFE_BUILTINS = frozenset(
    {
        "abs",
        "bool",
        "chr",
        "dict",
        "float",
        "frozenset",
        "int",
        "len",
        "list",
        "max",
        "min",
        "ord",
        "range",
        "round",
        "set",
        "sorted",
        "str",
        "sum",
        "tuple",
    }
)
"""Builtins that may appear inside a simple assert's arguments or expected value."""

_PURE_NODES = (
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.UnaryOp,
    ast.BinOp,
    ast.BoolOp,
    ast.Load,
    ast.unaryop,
    ast.operator,
    ast.boolop,
    ast.keyword,
)


def check_assert_line(line: str, entry_point: str) -> str | None:
    """Check that ``line`` is one ``assert`` statement that calls ``entry_point``.

    Args:
        line: The test source, e.g. ``"assert clamp(5, 0, 3) == 3"``.
        entry_point: The function the test must call (by plain name).

    Returns:
        ``None`` when the line is acceptable, otherwise the reason it is not.
    """
    try:
        tree = parse_python(line)
    except SyntaxError as exc:
        return f"does not parse ({exc.msg})"
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return "is not a single assert statement"
    if not any(_is_call_to(node, entry_point) for node in ast.walk(tree.body[0])):
        return f"does not call {entry_point!r}"
    return None


def extract_simple_asserts(
    source: str,
    *,
    call_name: str,
    entry_point: str,
    functions: Callable[[str], bool],
) -> list[str]:
    """Collect the simple asserts of a test module, rewritten to call ``entry_point``.

    Args:
        source: Python source of the test module (HumanEval ``test`` or a pytest file).
        call_name: The name the tests call the function under, e.g. ``"candidate"``.
        entry_point: The name to call it by in the returned lines.
        functions: Selects the test functions to read, by name (``lambda n: n == "check"``).
            Asserts at module level are read as well.

    Returns:
        Lines ``assert entry_point(...) == expected``, deduplicated, in source order. Empty when
        the module does not parse or holds no simple assert.
    """
    try:
        tree = parse_python(source)
    except SyntaxError:
        return []
    lines: list[str] = []
    lines.extend(_asserts_in(tree.body, call_name, entry_point))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and functions(node.name):
            lines.extend(_asserts_in(node.body, call_name, entry_point))
    return list(dict.fromkeys(lines))


def _asserts_in(body: Iterable[ast.stmt], call_name: str, entry_point: str) -> list[str]:
    """Simple asserts among the top-level statements of one block, with earlier names inlined."""
    env: dict[str, ast.expr] = {}
    found: list[str] = []
    for stmt in body:
        if isinstance(stmt, ast.Assert):
            line = _simple_assert(stmt, env, call_name, entry_point)
            if line is not None:
                found.append(line)
            _forget_mutable(env, _names(stmt))  # the call may have mutated its arguments
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            env.pop(stmt.name, None)
            continue
        target, value = _single_assignment(stmt)
        if target is None or value is None:  # anything else may rebind or mutate what it names
            for name in _names(stmt):
                env.pop(name, None)
            continue
        _forget_mutable(env, _names(value))  # no aliases of mutable values
        env.pop(target, None)
        inlined = _inline(value, env)
        if _is_pure(inlined):
            env[target] = inlined
    return found


def _single_assignment(stmt: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, ast.Name):
            return target.id, stmt.value
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
        return stmt.target.id, stmt.value
    return None, None


def _names(node: ast.AST) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _forget_mutable(env: dict[str, ast.expr], names: set[str]) -> None:
    """Drop bindings of ``names`` whose value is a mutable container."""
    for name in names & set(env):
        if any(isinstance(n, (ast.List, ast.Dict, ast.Set, ast.Call)) for n in ast.walk(env[name])):
            del env[name]


def _simple_assert(
    stmt: ast.Assert, env: dict[str, ast.expr], call_name: str, entry_point: str
) -> str | None:
    parts = _call_and_expected(stmt.test, call_name)
    if parts is None:
        return None
    call = _inline(parts[0], env)
    expected = _inline(parts[1], env)
    assert isinstance(call, ast.Call)
    if not all(_is_pure(arg) for arg in [*call.args, *call.keywords, expected]):
        return None
    renamed = ast.Call(
        func=ast.Name(id=entry_point, ctx=ast.Load()), args=call.args, keywords=call.keywords
    )
    rewritten = ast.Assert(
        test=ast.Compare(left=renamed, ops=[ast.Eq()], comparators=[expected]), msg=None
    )
    return ast.unparse(ast.fix_missing_locations(rewritten))


def _call_and_expected(test: ast.expr, call_name: str) -> tuple[ast.Call, ast.expr] | None:
    """Split an assert's test into ``(call, expected)`` for the accepted shapes, else None."""
    if isinstance(test, ast.Call) and _is_call_to(test, call_name):
        return test, ast.Constant(value=True)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        if isinstance(test.operand, ast.Call) and _is_call_to(test.operand, call_name):
            return test.operand, ast.Constant(value=False)
        return None
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    left, right, op = test.left, test.comparators[0], test.ops[0]
    if _wraps_call(right, call_name) and not _wraps_call(left, call_name):
        left, right = right, left
    if isinstance(op, ast.Is) and isinstance(right, ast.Constant):
        if right.value is True or right.value is False or right.value is None:
            op = ast.Eq()
    if not isinstance(op, ast.Eq):
        return None
    left, right = _unwrap_converters(left, right, call_name)
    if isinstance(left, ast.Call) and _is_call_to(left, call_name):
        return left, right
    return None


def _wraps_call(node: ast.expr, call_name: str) -> bool:
    return _is_call_to(node, call_name) or (
        _is_converter(node) and _is_call_to(node.args[0], call_name)  # type: ignore[attr-defined]
    )


def _is_converter(node: ast.expr) -> bool:
    """``tuple(x)`` or ``list(x)`` with one positional argument."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("tuple", "list")
        and len(node.args) == 1
        and not node.keywords
    )


def _unwrap_converters(
    left: ast.expr, right: ast.expr, call_name: str
) -> tuple[ast.expr, ast.expr]:
    """``tuple(f(x)) == tuple([1, 2])`` becomes ``f(x) == [1, 2]`` (same converter both sides)."""
    if (
        isinstance(left, ast.Call)
        and isinstance(right, ast.Call)
        and _is_converter(left)
        and _is_converter(right)
        and _is_call_to(left.args[0], call_name)
        and isinstance(left.func, ast.Name)
        and isinstance(right.func, ast.Name)
        and left.func.id == right.func.id
        and isinstance(right.args[0], (ast.List, ast.Tuple))
    ):
        return left.args[0], right.args[0]
    return left, right


def _is_call_to(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _inline(node: ast.expr, env: dict[str, ast.expr]) -> ast.expr:
    """Return ``node`` with names bound in ``env`` replaced by their values (a copy if any)."""
    if not any(isinstance(n, ast.Name) and n.id in env for n in ast.walk(node)):
        return node

    class _Inliner(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.expr:  # noqa: N802 (ast visitor naming)
            if isinstance(name.ctx, ast.Load) and name.id in env:
                return copy.deepcopy(env[name.id])
            return name

    result = _Inliner().visit(copy.deepcopy(node))
    assert isinstance(result, ast.expr)
    return result


def _is_pure(node: ast.AST) -> bool:
    """True for self-contained expressions: literals, arithmetic, calls to :data:`SAFE_BUILTINS`."""
    if isinstance(node, ast.Call):
        return (
            isinstance(node.func, ast.Name)
            and node.func.id in SAFE_BUILTINS
            and all(_is_pure(arg) for arg in [*node.args, *node.keywords])
        )
    if isinstance(node, ast.Name):
        return False
    if isinstance(node, ast.Starred):
        return _is_pure(node.value)
    if not isinstance(node, _PURE_NODES):
        return False
    return all(_is_pure(child) for child in ast.iter_child_nodes(node))
