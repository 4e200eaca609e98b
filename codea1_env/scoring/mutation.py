"""AST mutation operators: single-point faults injected into the function bodies of a program.

A *mutant* is the program with exactly one small change, the kind of slip a programmer makes: a
``<`` that should have been ``<=``, a bound that is off by one, ``and`` for ``or``, ``+`` for
``-``, a wrong return value. Mutants serve two purposes in this package:

* the scripted :class:`~codea1_env.baselines.scripted.MutantCoder` submits them as plausible wrong
  answers, and the tester-training env uses them as the pool of candidates to break;
* the mutation score of a test suite (mut@k: the share of the ground truth's mutants killed by
  its first k tests) is computed over them.

Rules that hold for every mutant returned by :func:`generate_mutants`:

* Only code inside function bodies is changed (also nested functions and methods); docstrings,
  decorators, default values, annotations and module-level statements are left alone. A mutant
  therefore imports exactly as the original does: mutants only fail when their functions run.
* The source is produced by :func:`ast.unparse` (comments and formatting are not kept) and
  compiles.
* Sources are distinct from the original program and from each other (deduplicated by text, the
  first one in the deterministic order wins).

Equivalent mutants (changes that do not alter behaviour, such as ``x < 5`` -> ``x <= 4`` on
integers) cannot be recognised by syntax alone; callers that need them excluded run the
ground-truth tests and drop mutants that pass them all.

Operators (the :data:`OPERATORS` registry, in the order they are applied):

``comparison``
    Each comparison operator is replaced by its boundary neighbour (``<`` <-> ``<=``,
    ``>`` <-> ``>=``), its negation (``<`` -> ``>=``, ``==`` <-> ``!=``, ``in`` <-> ``not in``,
    ``is`` <-> ``is not``) and its mirror (``<`` -> ``>``).
``off_by_one``
    Each integer constant ``c`` becomes ``c + 1`` and ``c - 1`` (negative literals included);
    a non-constant ``range()`` argument or slice bound ``e`` becomes ``e + 1`` and ``e - 1``.
``boolean``
    ``and`` <-> ``or``; ``not x`` -> ``x``; ``True`` <-> ``False``.
``arithmetic``
    ``+`` <-> ``-``, ``*`` <-> ``//``, ``/`` -> ``*``, ``%`` -> ``//``, ``**`` -> ``*``,
    ``<<`` <-> ``>>``, ``&`` <-> ``|``, ``^`` -> ``&`` (in expressions and augmented
    assignments), and ``-x`` -> ``x``.
``return_value``
    ``return x`` -> ``return None``, plus, by the kind of ``x`` when it is obvious from the
    expression: numbers -> ``0`` and ``-x``; booleans -> ``not x``; strings -> ``''``; lists,
    tuples, dicts and sets -> the empty container of that type. When the kind is not obvious,
    ``return 0`` is added.

Add an operator by inserting a function into :data:`OPERATORS`; it receives each
:class:`MutationSite` and yields ``(replacement, description)`` pairs.
"""

from __future__ import annotations

import ast
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from codea1_env.problems.pysource import quiet_compile, quiet_parse

__all__ = [
    "OPERATORS",
    "Mutant",
    "MutantCache",
    "MutationOperator",
    "MutationSite",
    "generate_mutants",
]


@dataclass(frozen=True)
class Mutant:
    """One single-point mutation of a program.

    Attributes:
        source: The whole mutated program (``ast.unparse`` output).
        operator: Name of the operator that produced it (a key of :data:`OPERATORS`).
        line: 1-based line of the original program where the change was made.
        description: What changed, e.g. ``"'<' -> '<='"``.

    """

    source: str
    operator: str
    line: int
    description: str


@dataclass(frozen=True)
class MutationSite:
    """One node inside a function body and where it hangs in the tree.

    Attributes:
        owner: The parent node.
        field: The parent's field that holds the node (``"ops"``, ``"body"``, ``"left"``...).
        index: Position in that field when the field is a list, else None.
        node: The node itself.

    """

    owner: ast.AST
    field: str
    index: int | None
    node: ast.AST

    @property
    def line(self) -> int:
        """Line of the node, or of its parent for nodes without positions (operators)."""
        return int(getattr(self.node, "lineno", getattr(self.owner, "lineno", 0)))

    def replace(self, new: ast.AST) -> None:
        """Put ``new`` where the node is (in place; call again with the node to restore)."""
        if self.index is None:
            setattr(self.owner, self.field, new)
        else:
            getattr(self.owner, self.field)[self.index] = new


MutationOperator = Callable[[MutationSite], Iterator[tuple[ast.AST, str]]]
"""An operator: given a site, yield each replacement node with a short description."""

_SKIPPED_FIELDS = frozenset({"ctx", "annotation", "returns", "type_comment", "type_params"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


# --- operators -----------------------------------------------------------------------------------

_CMP_SYMBOL: dict[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
_CMP_REPLACEMENTS: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.GtE, ast.Gt),
    ast.LtE: (ast.Lt, ast.Gt, ast.GtE),
    ast.Gt: (ast.GtE, ast.LtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.Lt, ast.LtE),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
}


def _comparison(site: MutationSite) -> Iterator[tuple[ast.AST, str]]:
    node = site.node
    if isinstance(site.owner, ast.Compare) and isinstance(node, ast.cmpop):
        for new in _CMP_REPLACEMENTS.get(type(node), ()):
            yield new(), f"{_CMP_SYMBOL[type(node)]!r} -> {_CMP_SYMBOL[new]!r}"


def _int_value(node: ast.AST) -> int | None:
    """Return the value of an integer literal (``5`` or ``-5``), else None (bools are not ints)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _int_literal(value: int) -> ast.expr:
    return ast.Constant(value) if value >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-value))


def _shifted(expr: ast.expr, delta: int) -> ast.expr:
    op: ast.operator = ast.Add() if delta > 0 else ast.Sub()
    return ast.BinOp(expr, op, ast.Constant(abs(delta)))


def _off_by_one(site: MutationSite) -> Iterator[tuple[ast.AST, str]]:
    node, owner = site.node, site.owner
    if _int_value(owner) is not None:
        return  # inside a negative literal: the literal as a whole is the site
    value = _int_value(node)
    if value is not None:
        yield _int_literal(value + 1), f"{value} -> {value + 1}"
        yield _int_literal(value - 1), f"{value} -> {value - 1}"
        return
    in_range = (
        isinstance(owner, ast.Call)
        and isinstance(owner.func, ast.Name)
        and owner.func.id == "range"
        and site.field == "args"
    )
    in_slice = isinstance(owner, ast.Slice) and site.field in ("lower", "upper")
    if (in_range or in_slice) and isinstance(node, ast.expr) and not isinstance(node, ast.Starred):
        where = "range() bound" if in_range else "slice bound"
        text = ast.unparse(node)
        yield _shifted(node, 1), f"{where} {text} -> {text} + 1"
        yield _shifted(node, -1), f"{where} {text} -> {text} - 1"


def _boolean(site: MutationSite) -> Iterator[tuple[ast.AST, str]]:
    node = site.node
    if isinstance(site.owner, ast.BoolOp) and isinstance(node, ast.boolop):
        if isinstance(node, ast.And):
            yield ast.Or(), "'and' -> 'or'"
        else:
            yield ast.And(), "'or' -> 'and'"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield node.operand, "drop 'not'"
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        yield ast.Constant(not node.value), f"{node.value} -> {not node.value}"


_ARITH_SYMBOL: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Div: "/",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}
_ARITH_REPLACEMENTS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitAnd,
}


def _arithmetic(site: MutationSite) -> Iterator[tuple[ast.AST, str]]:
    node = site.node
    if isinstance(site.owner, (ast.BinOp, ast.AugAssign)) and isinstance(node, ast.operator):
        new = _ARITH_REPLACEMENTS.get(type(node))
        if new is not None:
            yield new(), f"{_ARITH_SYMBOL[type(node)]!r} -> {_ARITH_SYMBOL[new]!r}"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield node.operand, "drop unary '-'"


_CALL_KINDS = {
    "len": "number",
    "int": "number",
    "float": "number",
    "sum": "number",
    "abs": "number",
    "round": "number",
    "ord": "number",
    "str": "str",
    "chr": "str",
    "repr": "str",
    "bool": "bool",
    "all": "bool",
    "any": "bool",
    "isinstance": "bool",
    "list": "list",
    "sorted": "list",
    "tuple": "tuple",
    "dict": "dict",
    "set": "set",
}


def _literal_kind(expr: ast.AST) -> str | None:
    """Return the obvious type family of an expression, or None when it is not obvious."""
    if isinstance(expr, ast.Constant):
        value = expr.value
        if type(value) is bool:
            return "bool"
        if type(value) in (int, float, complex):
            return "number"
        return "str" if type(value) is str else None
    if isinstance(expr, (ast.Compare, ast.BoolOp)) or (
        isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not)
    ):
        return "bool"
    if isinstance(expr, ast.UnaryOp):
        return _literal_kind(expr.operand)
    if isinstance(expr, ast.JoinedStr):
        return "str"
    if isinstance(expr, (ast.List, ast.ListComp)):
        return "list"
    if isinstance(expr, ast.Tuple):
        return "tuple"
    if isinstance(expr, (ast.Dict, ast.DictComp)):
        return "dict"
    if isinstance(expr, (ast.Set, ast.SetComp)):
        return "set"
    if isinstance(expr, ast.BinOp):
        return _literal_kind(expr.left) or _literal_kind(expr.right)
    if isinstance(expr, ast.IfExp):
        kind = _literal_kind(expr.body)
        return kind if kind == _literal_kind(expr.orelse) else None
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
        return _CALL_KINDS.get(expr.func.id)
    return None


def _empty_of(kind: str) -> ast.expr:
    if kind == "str":
        return ast.Constant("")
    if kind == "list":
        return ast.List([], ast.Load())
    if kind == "tuple":
        return ast.Tuple([], ast.Load())
    if kind == "dict":
        return ast.Dict([], [])
    return ast.Call(ast.Name("set", ast.Load()), [], [])


def _return_value(site: MutationSite) -> Iterator[tuple[ast.AST, str]]:
    node = site.node
    if not isinstance(node, ast.Return) or node.value is None:
        return
    value = node.value
    if isinstance(value, ast.Constant) and value.value is None:
        return
    text = ast.unparse(value)
    replacements: list[ast.expr] = [ast.Constant(None)]
    kind = _literal_kind(value)
    if kind == "number" or kind is None:
        replacements.append(ast.Constant(0))
    if kind == "number":
        replacements.append(ast.UnaryOp(ast.USub(), value))
    elif kind == "bool" and isinstance(value, ast.Constant):
        replacements.append(ast.Constant(not value.value))
    elif kind == "bool":
        replacements.append(ast.UnaryOp(ast.Not(), value))
    elif kind in ("str", "list", "tuple", "dict", "set"):
        replacements.append(_empty_of(kind))
    for new_value in replacements:
        new = ast.Return(new_value)
        yield new, f"return {text} -> return {ast.unparse(new_value)}"


OPERATORS: dict[str, MutationOperator] = {
    "comparison": _comparison,
    "off_by_one": _off_by_one,
    "boolean": _boolean,
    "arithmetic": _arithmetic,
    "return_value": _return_value,
}
"""Mutation operators by name, applied in this order (see the module docstring)."""


# --- traversal and generation --------------------------------------------------------------------


def _is_docstring(stmt: ast.AST) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _children(node: ast.AST) -> Iterator[MutationSite]:
    """Direct children of ``node`` in source order, skipping docstrings and annotations."""
    for field, value in ast.iter_fields(node):
        if field in _SKIPPED_FIELDS:
            continue
        if isinstance(value, list):
            for index, item in enumerate(value):
                if not isinstance(item, ast.AST):
                    continue
                if (
                    index == 0
                    and field == "body"
                    and isinstance(node, (*_FUNCTIONS, ast.ClassDef))
                    and _is_docstring(item)
                ):
                    continue
                yield MutationSite(node, field, index, item)
        elif isinstance(value, ast.AST):
            yield MutationSite(node, field, None, value)


def _walk(site: MutationSite) -> Iterator[MutationSite]:
    yield site
    for child in _children(site.node):
        yield from _walk(child)


def _function_body_sites(node: ast.AST) -> Iterator[MutationSite]:
    """Every site inside the body of a function found under ``node`` (outermost functions)."""
    for site in _children(node):
        if isinstance(site.node, _FUNCTIONS):
            for stmt in _children(site.node):
                if stmt.field == "body":
                    yield from _walk(stmt)
        elif isinstance(site.node, ast.stmt):
            yield from _function_body_sites(site.node)


def _compiles(source: str) -> bool:
    try:
        quiet_compile(source, "<mutant>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _resolve(operators: Sequence[str] | None) -> tuple[str, ...]:
    names = tuple(OPERATORS) if operators is None else tuple(operators)
    unknown = [name for name in names if name not in OPERATORS]
    if unknown:
        raise ValueError(f"unknown mutation operator(s) {unknown}; known: {sorted(OPERATORS)}")
    return names


def _all_mutants(program: str, names: tuple[str, ...]) -> list[Mutant]:
    try:
        tree = quiet_parse(program)
        original = ast.unparse(tree)
        sites = list(_function_body_sites(tree))
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return []
    seen = {original, program}
    mutants: list[Mutant] = []
    for name in names:
        operator = OPERATORS[name]
        for site in sites:
            for new, description in operator(site):
                site.replace(new)
                try:
                    source = ast.unparse(tree)
                except (ValueError, TypeError, AttributeError, RecursionError):
                    continue
                finally:
                    site.replace(site.node)
                if source not in seen and _compiles(source):
                    seen.add(source)
                    mutants.append(Mutant(source, name, site.line, description))
    return mutants


def _subsample(
    mutants: list[Mutant], max_mutants: int | None, rng: np.random.Generator | None
) -> list[Mutant]:
    if max_mutants is None or len(mutants) <= max_mutants:
        return list(mutants)
    if rng is None:
        return mutants[:max_mutants]
    keep = sorted(int(i) for i in rng.choice(len(mutants), size=max_mutants, replace=False))
    return [mutants[i] for i in keep]


def _check_max(max_mutants: int | None) -> None:
    if max_mutants is not None and (type(max_mutants) is not int or max_mutants < 0):
        raise ValueError(f"max_mutants must be a non-negative int or None, got {max_mutants!r}")


def generate_mutants(
    program: str,
    *,
    operators: Sequence[str] | None = None,
    max_mutants: int | None = None,
    rng: np.random.Generator | None = None,
) -> list[Mutant]:
    """Return every single-point mutant of ``program``'s function bodies.

    Args:
        program: Python source. Source that does not parse (or is not a string) yields ``[]``.
        operators: Names from :data:`OPERATORS` to apply, in this order; None applies all.
        max_mutants: Keep at most this many. Without ``rng`` the first ones in order are kept;
            with ``rng`` a uniform random subset is kept (still in the deterministic order).
        rng: Source of randomness for the subset; only used when ``max_mutants`` cuts.

    Returns:
        Mutants ordered by operator (in ``operators`` order), then by position in the source.

    Raises:
        ValueError: An unknown operator name, or a negative ``max_mutants``.

    """
    names = _resolve(operators)
    _check_max(max_mutants)
    if not isinstance(program, str):
        return []
    return _subsample(_all_mutants(program, names), max_mutants, rng)


class MutantCache:
    """Per-program cache of :func:`generate_mutants` results, keyed by content.

    The key is the SHA-256 of the program text and the operator names, so two problems with the
    same GT share an entry and a changed GT gets a fresh one. Entries hold the full mutant list;
    ``max_mutants``/``rng`` are applied on each :meth:`get`. The oldest entries are evicted past
    ``max_entries``.

    Args:
        max_entries: Most programs kept (None: unbounded).

    """

    def __init__(self, max_entries: int | None = 4096) -> None:
        if max_entries is not None and max_entries < 1:
            raise ValueError(f"max_entries must be >= 1 or None, got {max_entries}")
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str, tuple[Mutant, ...]] = OrderedDict()

    @staticmethod
    def key(program: str, operators: Sequence[str] | None = None) -> str:
        """Return the cache key of ``program`` under ``operators`` (hex SHA-256)."""
        names = _resolve(operators)
        digest = hashlib.sha256(program.encode("utf-8", "surrogatepass"))
        digest.update(b"\0" + ",".join(names).encode("ascii"))
        return digest.hexdigest()

    def get(
        self,
        program: str,
        *,
        operators: Sequence[str] | None = None,
        max_mutants: int | None = None,
        rng: np.random.Generator | None = None,
    ) -> list[Mutant]:
        """Return :func:`generate_mutants` of ``program``, computing it at most once per key."""
        _check_max(max_mutants)
        if not isinstance(program, str):
            return []
        key = self.key(program, operators)
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            entry = tuple(_all_mutants(program, _resolve(operators)))
            self._entries[key] = entry
            if self.max_entries is not None and len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        else:
            self.hits += 1
            self._entries.move_to_end(key)
        return _subsample(list(entry), max_mutants, rng)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Any) -> bool:
        return key in self._entries

    def clear(self) -> None:
        """Drop every entry and reset the hit/miss counters."""
        self._entries.clear()
        self.hits = self.misses = 0
