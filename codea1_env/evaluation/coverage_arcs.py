"""The possible arcs of a program: a walk of its AST, one code object at a time.

The half of :func:`codea1_env.evaluation.coverage.analyze_program` that follows control flow:
:class:`ArcFinder` gives, per code object (module, each function, each class body), the
``(a, b)`` arcs between statements and the ``(a, -F)`` exits, with coverage.py's rules for
loops, constant tests, jumps, ``try``/``finally``, ``with`` exits and decorators (the
definitions are in :mod:`codea1_env.evaluation.coverage`'s docstring). Trusted-side and pure:
only :mod:`ast`, nothing is executed.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["Arc", "ArcFinder", "statement_nodes"]

Arc = tuple[int, int]
"""``(from_line, to_line)``; a negative line ``-F`` is the entry or exit of the code object whose
first line is ``F``."""

_EXIT_WITH_THROUGH_CTXMGR = sys.version_info >= (3, 12, 6)
"""CPython 3.12.6+ reports a ``with`` statement's exit on each context manager's own line."""


def statement_nodes(root: ast.AST) -> Iterable[ast.AST]:
    """``root`` and every statement (and ``except``/``case`` clause) below it, not expressions."""
    todo = [root]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                todo.append(child)


class _Block:
    """Where a jump out of a statement lands; each returns True when it took the jump."""

    def breaks(self, starts: set[int], finder: ArcFinder) -> bool:
        return False

    def continues(self, starts: set[int], finder: ArcFinder) -> bool:
        return False

    def raises(self, starts: set[int], finder: ArcFinder) -> bool:
        return False

    def returns(self, starts: set[int], finder: ArcFinder) -> bool:
        return False


class _Loop(_Block):
    def __init__(self, header: int) -> None:
        self.header = header
        self.break_starts: set[int] = set()

    def breaks(self, starts: set[int], finder: ArcFinder) -> bool:
        self.break_starts |= starts
        return True

    def continues(self, starts: set[int], finder: ArcFinder) -> bool:
        for start in starts:
            finder.add(start, self.header)
        return True


class _Function(_Block):
    def __init__(self, first: int) -> None:
        self.first = first

    def raises(self, starts: set[int], finder: ArcFinder) -> bool:
        for start in starts:
            finder.add(start, -self.first)
        return True

    def returns(self, starts: set[int], finder: ArcFinder) -> bool:
        return self.raises(starts, finder)


class _Try(_Block):
    def __init__(self, handler: int | None) -> None:
        self.handler = handler

    def raises(self, starts: set[int], finder: ArcFinder) -> bool:
        if self.handler is not None:
            for start in starts:
                finder.add(start, self.handler)
        return True


def _constant_truth(node: ast.AST) -> bool | None:
    """The truth of a test the compiler folds (True, 1, not None, ...), None when not constant."""
    if isinstance(node, ast.Constant):
        return bool(node.value)
    if isinstance(node, ast.Name) and node.id in ("True", "False", "None", "__debug__"):
        return {"True": True, "False": False, "None": False, "__debug__": True}[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _constant_truth(node.operand)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        values = [_constant_truth(value) for value in node.values]
        if any(value is None for value in values):
            return None
        return any(values) if isinstance(node.op, ast.Or) else all(values)
    return None


def _irrefutable(case: ast.AST) -> bool:
    """A ``case`` that always matches (``case _:``, ``case name:``), the match's ``else``."""
    if getattr(case, "guard", None) is not None:
        return False
    pattern = getattr(case, "pattern", None)
    match_or = getattr(ast, "MatchOr", None)
    match_as = getattr(ast, "MatchAs", None)
    while match_or is not None and isinstance(pattern, match_or):
        pattern = pattern.patterns[-1]
    while match_as is not None and isinstance(pattern, match_as) and pattern.pattern is not None:
        pattern = pattern.pattern
    return match_as is not None and isinstance(pattern, match_as) and pattern.pattern is None


class ArcFinder:
    """The possible arcs of a program's AST (coverage.py's rules, see the module docstring)."""

    def __init__(self, multiline: Mapping[int, int], raw_statements: set[int]) -> None:
        self.multiline = multiline
        self.statements = raw_statements
        self.arcs: set[Arc] = set()
        self.blocks: list[_Block] = []
        self.open_with_starts: set[int] = set()
        self.with_starts: set[int] = set()
        self.with_entries: set[Arc] = set()
        self.with_exits: set[Arc] = set()

    def add(self, start: int, end: int) -> None:
        """Record the arc ``(start, end)`` (and, from an open ``with`` line, as its entry)."""
        self.arcs.add((start, end))
        if start in self.open_with_starts:
            self.with_entries.add((start, end))

    # ------------------------------------------------------------------ code objects
    def analyze(self, tree: ast.AST) -> None:
        """Walk every code object of ``tree`` (the module's, each function's and class's)."""
        for node in statement_nodes(tree):
            if isinstance(node, ast.Module):
                if node.body:
                    for start in self.body(node.body, set()):
                        self.add(start, -1)
                else:
                    self.add(1, -1)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = self.line(node)
                self.blocks.append(_Function(first))
                self.jump("returns", self.body(node.body, set()))
                self.blocks.pop()
            elif isinstance(node, ast.ClassDef):
                first = self.line(node)
                for start in self.body(node.body, set()):
                    self.add(start, -first)

    # ------------------------------------------------------------------ lines
    def line(self, node: ast.AST) -> int:
        """The line Python reports for ``node`` (first line of its statement)."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        elif isinstance(node, ast.Assign):
            return self.line(node.value)
        elif isinstance(node, ast.Dict):
            if node.keys:
                key = node.keys[0]
                found = key.lineno if key is not None else node.values[0].lineno
            else:
                found = node.lineno
        elif isinstance(node, ast.List):
            if node.elts:
                return self.line(node.elts[0])
            found = node.lineno
        elif isinstance(node, ast.Module):
            found = 1
        else:
            found = getattr(node, "lineno", 0)
        return self.multiline.get(found, found)

    # ------------------------------------------------------------------ flow
    def body(self, nodes: Sequence[ast.AST], starts: set[int]) -> set[int]:
        """Arcs through a suite entered from ``starts``; returns the suite's exits."""
        for node in nodes:
            line = self.line(node)
            if line not in self.statements:
                continue
            for start in starts:
                self.add(start, line)
            starts = self.exits(node)
        return starts

    def jump(self, kind: str, starts: set[int]) -> None:
        """Send a ``break``/``continue``/``raise``/``return`` from ``starts`` to its target."""
        for block in reversed(self.blocks):
            if getattr(block, kind)(starts, self):
                break

    def exits(self, node: ast.AST) -> set[int]:
        """The lines control can leave ``node`` from to reach the next statement."""
        here = self.line(node)
        if isinstance(node, ast.Break):
            self.jump("breaks", {here})
            return set()
        if isinstance(node, ast.Continue):
            self.jump("continues", {here})
            return set()
        if isinstance(node, ast.Return):
            self.jump("returns", {here})
            return set()
        if isinstance(node, ast.Raise):
            self.jump("raises", {here})
            return set()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return self._decorated(node)
        if isinstance(node, (ast.For, ast.AsyncFor)):
            return self._for(node)
        if isinstance(node, ast.While):
            return self._while(node)
        if isinstance(node, ast.If):
            return self._if(node)
        if isinstance(node, (ast.With, ast.AsyncWith)):
            return self._with(node)
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            return self._try(node)
        if type(node).__name__ == "Match":
            return self._match(node)
        return {here}

    def _decorated(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[int]:
        last = node.lineno
        if node.decorator_list:
            previous: int | None = None
            for decorator in node.decorator_list:
                line = self.line(decorator)
                if previous is not None and line != previous:
                    self.add(previous, line)
                previous = line
            assert previous is not None
            self.add(previous, node.lineno)
        return {last}

    def _for(self, node: ast.For | ast.AsyncFor) -> set[int]:
        return self._loop(self.line(node.iter), node.body, node.orelse, falls_out=True)

    def _while(self, node: ast.While) -> set[int]:
        header = self.line(node.test)
        falls_out = _constant_truth(node.test) is None  # ``while True`` leaves only by break
        return self._loop(header, node.body, node.orelse, falls_out=falls_out)

    def _loop(
        self, header: int, body: list[ast.stmt], orelse: list[ast.stmt], *, falls_out: bool
    ) -> set[int]:
        """A loop's arcs: its body back to the header; its exits (breaks, else, the header)."""
        loop = _Loop(header)
        self.blocks.append(loop)
        for start in self.body(body, {header}):
            self.add(start, header)
        self.blocks.pop()
        exits = set(loop.break_starts)
        if orelse:
            exits |= self.body(orelse, {header})
        elif falls_out:
            exits.add(header)
        return exits

    def _if(self, node: ast.If) -> set[int]:
        header = self.line(node.test)
        truth = _constant_truth(node.test)
        exits: set[int] = set()
        if truth is None or truth:
            exits |= self.body(node.body, {header})
        if truth is None or not truth:
            exits |= self.body(node.orelse, {header})
        return exits

    def _match(self, node: ast.AST) -> set[int]:
        previous = self.line(node)
        exits: set[int] = set()
        cases = list(getattr(node, "cases", []))
        for case in cases:
            line = self.line(case.pattern)
            self.add(previous, line)
            exits |= self.body(case.body, {line})
            previous = line
        if cases and not _irrefutable(cases[-1]):
            exits.add(previous)
        return exits

    def _with(self, node: ast.With | ast.AsyncWith) -> set[int]:
        if _EXIT_WITH_THROUGH_CTXMGR:
            starts = [self.line(item.context_expr) for item in node.items]
        else:
            starts = [self.line(node)]
        self.open_with_starts.update(starts)
        self.with_starts.update(starts)
        start = starts[-1]
        exits = self.body(node.body, {start})
        self.open_with_starts.discard(start)
        if not exits:
            return set()
        for line in exits:
            self.add(line, start)
            self.with_exits.add((line, start))
        return {start}

    def _try(self, node: ast.AST) -> set[int]:
        handlers = list(getattr(node, "handlers", []))
        final = list(getattr(node, "finalbody", []))
        block = _Try(self.line(handlers[0]) if handlers else None)
        self.blocks.append(block)
        exits = self.body(getattr(node, "body", []), {self.line(node)})
        if final:
            block.handler = None  # the finally clause still sees jumps from what follows
        else:
            self.blocks.pop()
        handler_exits: set[int] = set()
        for handler in handlers:
            handler_exits |= self.body(handler.body, {self.line(handler)})
        orelse = getattr(node, "orelse", [])
        if orelse:
            exits = self.body(orelse, exits)
        exits |= handler_exits
        if final:
            self.blocks.pop()
            final_exits = self.body(final, exits)
            if exits:
                exits = final_exits
        return exits

    # ------------------------------------------------------------------ with exits
    def with_fixers(self) -> dict[Arc, Arc | None]:
        """Raw arcs to replace (or drop, None) so a ``with`` exit reads as one arc onward."""
        onward: dict[int, int] = {}
        for start in self.with_starts:
            ends = {
                end
                for begin, end in self.arcs
                if begin == start and (begin, end) not in self.with_entries
            }
            if ends:
                onward[start] = min(ends)

        def landing(start: int) -> int:
            after = onward[start]
            seen = {start}
            while (start, after) in self.with_exits and after in onward and after not in seen:
                seen.add(after)
                start, after = after, onward[after]
            return after

        fixers: dict[Arc, Arc | None] = {}
        for end, start in self.with_exits:
            if start in onward:
                fixers[(end, start)] = (end, landing(start))
        for start, after in onward.items():
            if (start, start) not in self.with_exits:
                fixers[(start, after)] = None
        return fixers
