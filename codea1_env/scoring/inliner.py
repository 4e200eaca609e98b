"""The AST inliner behind the ``"anywhere"`` policy: remembered assignments substituted.

:class:`Inliner` replaces the free names of an expression by the expressions assigned to them,
respecting the scopes of lambdas and comprehensions, and measures the result's size without
building it (:meth:`Inliner.cost`); :func:`bound_names` lists the names an assignment target
binds. The parser (:mod:`codea1_env.scoring.testcases`) decides what is remembered and stores
:data:`UNRESOLVED` or :data:`TOO_LARGE` for names it cannot inline.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Sequence
from typing import Any

__all__ = ["TOO_LARGE", "UNRESOLVED", "Inliner", "bound_names"]

UNRESOLVED = "unresolved_name"
"""Marker stored for names bound by an assignment that cannot be inlined."""

TOO_LARGE = "too_long"
"""Marker stored for names whose inlined value exceeds the parser's expression size limit."""


def bound_names(target: ast.expr) -> list[str]:
    """Names a (possibly nested) assignment target binds; attributes/subscripts bind none."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return bound_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in bound_names(elt)]
    return []


class Inliner(ast.NodeTransformer):
    """Replace free names by their assigned expressions; lambda/comprehension scopes respected."""

    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env
        self.shadowed: list[set[str]] = []
        self.failure = ""  # a marker when a name could not be substituted

    def is_shadowed(self, name: str) -> bool:
        """Whether ``name`` is bound by an enclosing lambda or comprehension."""
        return any(name in scope for scope in self.shadowed)

    def cost(self, node: ast.AST) -> int:
        """Node count of ``node`` after substitution, computed without substituting."""
        return self.measure(node)[0]

    def measure(self, node: ast.AST) -> tuple[int, bool]:
        """:meth:`cost`, and whether any name in ``node`` is remembered at all.

        Where none is, substituting changes nothing and ``node`` can be used as it is.
        """
        env, total, remembered = self.env, 0, False
        for sub in ast.walk(node):
            total += 1
            if isinstance(sub, ast.Name) and sub.id in env:
                remembered = True
                value = env[sub.id]
                if isinstance(value, tuple):
                    total += value[1] - 1
        return total, remembered

    def visit_Name(self, node: ast.Name) -> ast.AST:
        """A free loaded name: its assigned expression (or a failure marker), else itself."""
        if not isinstance(node.ctx, ast.Load) or self.is_shadowed(node.id):
            return node
        value = self.env.get(node.id)
        if isinstance(value, str):
            self.failure = TOO_LARGE if TOO_LARGE in (value, self.failure) else value
            return node
        if value is None:
            return node
        return copy.deepcopy(value[0])

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        """A lambda: its defaults in the enclosing scope, its body with its parameters bound."""
        args = node.args
        names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
        node.args = self.visit(node.args)  # defaults are evaluated in the enclosing scope
        self.shadowed.append(names)
        node.body = self.visit(node.body)
        self.shadowed.pop()
        return node

    def visit_arguments(self, node: ast.arguments) -> ast.AST:
        """Parameters: only their defaults are substituted."""
        node.defaults = [self.visit(d) for d in node.defaults]
        node.kw_defaults = [None if d is None else self.visit(d) for d in node.kw_defaults]
        return node

    def _visit_comprehension(self, node: Any, parts: Sequence[str]) -> ast.AST:
        bound = {n for gen in node.generators for n in bound_names(gen.target)}
        # The first iterable is evaluated in the enclosing scope.
        node.generators[0].iter = self.visit(node.generators[0].iter)
        self.shadowed.append(bound)
        for index, gen in enumerate(node.generators):
            if index:
                gen.iter = self.visit(gen.iter)
            gen.ifs = [self.visit(cond) for cond in gen.ifs]
        for part in parts:
            setattr(node, part, self.visit(getattr(node, part)))
        self.shadowed.pop()
        return node

    def visit_ListComp(self, node: ast.ListComp) -> ast.AST:
        """A list comprehension, with its targets bound."""
        return self._visit_comprehension(node, ("elt",))

    def visit_SetComp(self, node: ast.SetComp) -> ast.AST:
        """A set comprehension, with its targets bound."""
        return self._visit_comprehension(node, ("elt",))

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> ast.AST:
        """A generator expression, with its targets bound."""
        return self._visit_comprehension(node, ("elt",))

    def visit_DictComp(self, node: ast.DictComp) -> ast.AST:
        """A dict comprehension, with its targets bound."""
        return self._visit_comprehension(node, ("key", "value"))
