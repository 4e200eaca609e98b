"""A fast :func:`ast.unparse` for the expressions tests are made of, and their node count.

Parsing a suite spends most of its time in :func:`ast.unparse` (the canonical text of each call
and expectation: what duplicates are detected on and what the sandbox runs) and in counting an
expression's nodes with :func:`ast.walk`. The expressions of unit tests are nearly always calls
of one function on literals: constants, names, lists, tuples, sets, dicts, unary signs. For
those, :func:`unparse_counted` writes the text and counts the nodes in one recursive pass, about
five times faster; for any other node (an attribute, a subscript, an operator, a comprehension,
a starred item ...) it falls back to :func:`ast.unparse` and :func:`ast.walk` for the whole
expression. The text is the same, character for character, as :func:`ast.unparse` writes
(``tests/test_unparse.py`` compares them on every HumanEval and bank test and on generated
expressions); the count is the same as ``ast.walk``'s.
"""

from __future__ import annotations

import ast
import sys

__all__ = ["node_count", "unparse", "unparse_counted"]

_INFSTR = "1e" + repr(sys.float_info.max_10_exp + 1)  # ast's spelling of infinity (1e309)
_SIGNS = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}


class _Fallback(Exception):
    """A node outside the fast subset: use :mod:`ast` for the whole expression."""


def _constant(node: ast.Constant) -> str:
    value = node.value
    if node.kind is not None or isinstance(value, tuple):
        raise _Fallback
    if value is ...:
        return "..."
    if isinstance(value, (float, complex)):
        return repr(value).replace("inf", _INFSTR).replace("nan", f"({_INFSTR}-{_INFSTR})")
    return repr(value)


def _has_ctx(node: ast.AST) -> int:
    return 1 if isinstance(getattr(node, "ctx", None), ast.AST) else 0


def _items(elts: list[ast.expr]) -> tuple[list[str], int]:
    texts, count = [], 0
    for elt in elts:
        text, n = _walk(elt)
        texts.append(text)
        count += n
    return texts, count


def _walk(node: ast.AST) -> tuple[str, int]:
    """The text and node count of ``node``; raises :class:`_Fallback` outside the subset.

    A starred item, a ``**`` keyword or a ``**`` dict entry is outside it, as is every node
    type not named here.
    """
    kind = type(node)
    if kind is ast.Constant:
        return _constant(node), 1  # type: ignore[arg-type]
    if kind is ast.Name:
        return node.id, 1 + _has_ctx(node)  # type: ignore[attr-defined]
    if kind is ast.Call:
        func = node.func  # type: ignore[attr-defined]
        if type(func) is not ast.Name:
            raise _Fallback
        texts, count = _items(node.args)  # type: ignore[attr-defined]
        for keyword in node.keywords:  # type: ignore[attr-defined]
            if keyword.arg is None:
                raise _Fallback
            text, n = _walk(keyword.value)
            texts.append(f"{keyword.arg}={text}")
            count += n + 1
        return f"{func.id}({', '.join(texts)})", count + 2 + _has_ctx(func)
    if kind is ast.List or kind is ast.Tuple:
        texts, count = _items(node.elts)  # type: ignore[attr-defined]
        count += 1 + _has_ctx(node)
        if kind is ast.List:
            return f"[{', '.join(texts)}]", count
        if len(texts) == 1:
            return f"({texts[0]},)", count
        return f"({', '.join(texts)})", count
    if kind is ast.Set:
        if not node.elts:  # type: ignore[attr-defined]
            raise _Fallback  # ast writes an empty set as {*()}
        texts, count = _items(node.elts)  # type: ignore[attr-defined]
        return f"{{{', '.join(texts)}}}", count + 1
    if kind is ast.Dict:
        keys, values = node.keys, node.values  # type: ignore[attr-defined]
        if any(key is None for key in keys) or len(keys) != len(values):
            raise _Fallback
        key_texts, key_count = _items(keys)
        value_texts, value_count = _items(values)
        pairs = ", ".join(f"{k}: {v}" for k, v in zip(key_texts, value_texts))
        return f"{{{pairs}}}", key_count + value_count + 1
    if kind is ast.UnaryOp:
        sign = _SIGNS.get(type(node.op))  # type: ignore[attr-defined]
        operand = node.operand  # type: ignore[attr-defined]
        if sign is None or (type(operand) is ast.UnaryOp and type(operand.op) is ast.Not):
            raise _Fallback
        text, n = _walk(operand)
        return sign + text, n + 2
    raise _Fallback


def unparse_counted(node: ast.AST) -> tuple[str, int]:
    """``(ast.unparse(node), number of nodes ast.walk(node) yields)``, fast for test literals.

    Raises what :func:`ast.unparse` raises (for example :class:`ValueError` for an integer
    with more digits than ``sys.get_int_max_str_digits()`` allows).
    """
    try:
        return _walk(node)
    except (_Fallback, RecursionError):
        return ast.unparse(node), node_count(node)


def unparse(node: ast.AST) -> str:
    """``ast.unparse(node)``, fast for the expressions of unit tests (see the module docstring)."""
    return unparse_counted(node)[0]


def node_count(node: ast.AST) -> int:
    """The number of nodes :func:`ast.walk` yields for ``node``."""
    return sum(1 for _ in ast.walk(node))
