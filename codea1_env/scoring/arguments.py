"""Test inputs as values: every generated call is run on literal arguments.

A tester's call ``f([0] * 100, n=len("abc"))`` is an expression. Evaluated inside the program
under test, its arguments could look at that program (``inspect``, ``globals()``) and differ
between the GT run and the candidate run, so the GT would vouch for an input the candidate never
received. The referee therefore evaluates non-literal arguments (and expected values) *once*, in a
sandboxed job with no program loaded, receives them as plain data, and rewrites each call with
literal arguments: ``f([0, 0, ...], n=3)``. The GT and every candidate then get the same inputs.

Pure functions; the sandbox run is the referee's.
"""

from __future__ import annotations

import ast
import functools
from typing import Any

from codea1_env.problems.pysource import quiet_parse
from codea1_env.sandbox.worker import plain
from codea1_env.scoring.literal_grammar import is_literal_call, simple_value

__all__ = [
    "MISSING",
    "arguments_expression",
    "clear_caches",
    "literal_call",
    "literal_value",
]

MISSING: Any = object()
"""Returned by :func:`literal_value` for a source that is not a plain literal."""

_MAX_LITERAL_CHARS = 10_000


def literal_value(source: str) -> Any:
    """The value of ``source`` when it is a plain literal (no code runs), else :data:`MISSING`.

    Cached per source (a step grades the same expected sides many times); callers must not
    mutate the value returned.
    """
    if len(source) > _MAX_LITERAL_CHARS:
        return MISSING
    return _literal_value(source)


@functools.lru_cache(maxsize=65536)
def _literal_value(source: str) -> Any:
    known, value = simple_value(source)
    if known:
        return value
    try:
        # parsed as ``ast.literal_eval(source)`` parses, but under any host warning filter
        value = ast.literal_eval(quiet_parse(source.lstrip(" \t"), "eval").body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return MISSING
    return value if plain.is_plain(value) else MISSING


def _literal_node(node: ast.expr) -> bool:
    """Whether an argument's AST is a plain literal (``ast.literal_eval`` on the node itself)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return plain.is_plain(value)


@functools.lru_cache(maxsize=65536)
def arguments_expression(call_source: str) -> str | None:
    """An expression that evaluates a call's arguments to ``((args...), {kwargs})``.

    Returns None when every argument is already a plain literal (nothing needs running), and
    also when ``call_source`` is not a call (the parser never produces that). Cached per call;
    a call on canonical literals is recognised without a syntax tree
    (:func:`~codea1_env.scoring.literal_grammar.is_literal_call`).
    """
    if is_literal_call(call_source):
        return None
    try:
        node = quiet_parse(call_source, "eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(node, ast.Call):
        return None
    call = node
    literal = all(not isinstance(a, ast.Starred) and _literal_node(a) for a in call.args) and all(
        k.arg is not None and _literal_node(k.value) for k in call.keywords
    )
    if literal:
        return None
    args = ast.Tuple(elts=list(call.args), ctx=ast.Load())
    kwargs = ast.Dict(
        keys=[ast.Constant(k.arg) if k.arg is not None else None for k in call.keywords],
        values=[k.value for k in call.keywords],
    )
    return ast.unparse(ast.Tuple(elts=[args, kwargs], ctx=ast.Load()))


def literal_call(entry_point: str, value: Any) -> str | None:
    """Rebuild a call with literal arguments from an evaluated ``((args...), {kwargs})``.

    Returns None when ``value`` does not have that shape (or a keyword is not an identifier).
    """
    if type(value) is not tuple or len(value) != 2:
        return None
    args, kwargs = value
    if type(args) is not tuple or type(kwargs) is not dict:
        return None
    parts = [plain.to_source(a) for a in args]
    for key, item in kwargs.items():
        if type(key) is not str or not key.isidentifier():
            return None
        parts.append(f"{key}={plain.to_source(item)}")
    return f"{entry_point}({', '.join(parts)})"


def clear_caches() -> None:
    """Forget the memoized literal values and argument expressions.

    See :func:`codea1_env.scoring.referee.clear_text_caches`.
    """
    _literal_value.cache_clear()
    arguments_expression.cache_clear()
