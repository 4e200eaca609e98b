"""Code anonymization: what the tester reads, stripped of names, comments and docstrings.

A tester that reads ``def is_prime(n): # handles the n < 2 edge case`` can "teach to the test"
from names and comments rather than from the logic. :func:`anonymize` rewrites a program with the
``ast`` module so that only the logic is left:

* comments disappear (``ast.unparse`` drops them) and docstrings are removed;
* parameters, local variables, helper functions and classes, and module-level names are renamed
  to ``v0, v1, ...`` / ``fn0, fn1, ...`` / ``C0, C1, ...`` in order of first appearance;
* the entry point keeps its name and its parameter names (the tests call it, possibly with
  keywords, and the prompt shows its signature); builtins, imported names, attributes and any
  name used as a keyword argument keep theirs too (renaming them could change the meaning).

The rewrite preserves behaviour for ordinary programs (it renames consistently across the module;
programs that reach names dynamically, through ``globals()`` or ``eval`` strings, may change). The
program that runs in the sandbox is always the original: anonymization only changes what the
tester is shown. Code that does not parse is returned unchanged.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from codea1_env.problems.pysource import quiet_parse

__all__ = ["anonymize", "strip_docstrings"]

_BUILTINS = frozenset(dir(builtins))


def anonymize(code: str, entry_point: str) -> str:
    """Return ``code`` with names, comments and docstrings anonymized (see the module docstring).

    Args:
        code: A Python program.
        entry_point: The function name to keep.

    Returns:
        The rewritten program, or ``code`` unchanged when it does not parse.
    """
    try:
        tree = quiet_parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return code
    try:
        renamer = _Renamer(entry_point, _imported_names(tree) | _fixed_names(tree, entry_point))
        renamer.collect(tree)
        tree = renamer.visit(tree)
        strip_docstrings(tree)
        _drop_return_annotations(tree)
        ast.fix_missing_locations(tree)
        return ast.unparse(tree) + "\n"
    except (RecursionError, ValueError, TypeError, AttributeError):
        return code


def _imported_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


def _fixed_names(tree: ast.AST, entry_point: str) -> set[str]:
    """Names that must not change: the entry point's parameters and keyword-argument names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
            args = node.args
            names.update(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])
            names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
        elif isinstance(node, ast.keyword) and node.arg is not None:
            names.add(node.arg)
    return names


class _Renamer(ast.NodeTransformer):
    """Consistent module-wide renaming of user-defined names."""

    def __init__(self, entry_point: str, keep: set[str]) -> None:
        self.keep = keep | {entry_point} | _BUILTINS | {"self", "cls"}
        self.mapping: dict[str, str] = {}
        self.counts = {"v": 0, "fn": 0, "C": 0}

    def _assign(self, name: str, kind: str) -> None:
        if name in self.keep or name in self.mapping or name.startswith("__"):
            return
        self.mapping[name] = f"{kind}{self.counts[kind]}"
        self.counts[kind] += 1

    def collect(self, tree: ast.AST) -> None:
        """Assign new names in order of definition."""
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._assign(node.name, "fn")
                args = node.args
                for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                    self._assign(arg.arg, "v")
                for extra in (args.vararg, args.kwarg):
                    if extra is not None:
                        self._assign(extra.arg, "v")
            elif isinstance(node, ast.ClassDef):
                self._assign(node.name, "C")
            elif isinstance(node, ast.Lambda):
                for arg in node.args.args:
                    self._assign(arg.arg, "v")
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self._assign(node.id, "v")
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self._assign(node.name, "v")

    def _new(self, name: str) -> str:
        return self.mapping.get(name, name)

    def visit_Name(self, node: ast.Name) -> Any:
        node.id = self._new(node.id)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        node.name = self._new(node.name)
        self.generic_visit(node)
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> Any:
        node.name = self._new(node.name)
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        node.name = self._new(node.name)
        self.generic_visit(node)
        return node

    def visit_arg(self, node: ast.arg) -> Any:
        node.arg = self._new(node.arg)
        node.annotation = None
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> Any:
        if node.name:
            node.name = self._new(node.name)
        self.generic_visit(node)
        return node

    def visit_Global(self, node: ast.Global) -> Any:
        node.names = [self._new(n) for n in node.names]
        return node

    def visit_Nonlocal(self, node: ast.Nonlocal) -> Any:
        node.names = [self._new(n) for n in node.names]
        return node


def strip_docstrings(tree: ast.AST, *, functions_only: bool = False) -> ast.AST:
    """Remove the docstrings in ``tree`` (in place) and return it.

    A docstring is the first statement of a body when it is a string constant.

    Args:
        tree: A parsed program (``ast.parse``).
        functions_only: Only functions' docstrings, and only where the function has another
            statement (its body is never emptied), as the warm start's coder targets are written
            (:func:`agents.training.roles.strip_docstrings`). Otherwise (what :func:`anonymize`
            shows the tester) the module's, the classes' and the functions' docstrings all go,
            and a body that held only its docstring becomes ``pass``.

    Returns:
        ``tree``.
    """
    kinds: tuple[type[ast.AST], ...] = (ast.FunctionDef, ast.AsyncFunctionDef)
    if not functions_only:
        kinds = (ast.Module, *kinds, ast.ClassDef)
    for node in ast.walk(tree):
        if not isinstance(node, kinds):
            continue
        body = node.body  # type: ignore[attr-defined]
        if not body or (functions_only and len(body) < 2):
            continue
        first = body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            body.pop(0)
            if not body:
                body.append(ast.Pass())
    return tree


def _drop_return_annotations(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
