"""Line-and-arc tracer of coverage jobs: runs inside the sandbox (standard library only).

Imported by the worker as the top-level ``tracer`` (loaded with the trusted modules' private copy
of ``builtins``, see ``entry.py``) and, in the trusted parent, as
``codea1_env.sandbox.worker.tracer`` (only for its constants and tests). A job with
``coverage=True`` gets one :class:`ArcTracer` in its child; the runner starts it right before the
program's top level (or one call) runs and stops it right after, then sends what it recorded with
that status record as a flat list of integers ``[from1, to1, from2, to2, ...]``.

What is recorded: the *arcs* of the program's own code objects, exactly as coverage.py's
``sys.settrace`` tracers (its C tracer and ``PyTracer``) record them:

* a frame is traced only when its code object **is** (by identity) one of the code objects of
  the compiled program: the module code and every code object nested in its constants
  (functions, classes, lambdas, comprehensions, generators). Code a call expression compiles at
  run time, even under the program's file name, is not the program's and is never traced;
* a frame that starts a call begins at ``-co_firstlineno`` (a generator or coroutine that
  resumes begins at the line it resumes on); each ``line`` event adds ``(previous, line)`` and
  moves on; a real ``return`` (not a ``yield``, told apart by the next opcode as coverage.py
  does) adds ``(previous, -co_firstlineno)``. A frame left by an exception returns too (Python
  reports it as a ``return``), so it also gets the exit arc;
* executed lines are the positive ends of the arcs (coverage.py's definition with branch
  measurement on). The trusted parent maps them to statements, multi-line statements to their
  first line, and works out the branch figures (:mod:`codea1_env.evaluation.coverage`).

Only the thread that runs the call is traced; threads the program starts are not.

This is data reported by the untrusted process about itself, like the audit counts: a program
can stop the tracer (``sys.settrace``, which the audit hook counts as tampering), reach its sets
(``sys.gettrace()``, ``gc``) or write its own records. The parent therefore accepts only a flat
list of integers in the program's line range, turns it into a set of pairs of ints, and the
metrics count only arcs and lines that the program's source can have. A forger can thus move its
own job's coverage figures, and nothing else: no value, verdict, reward or other job.
"""

from __future__ import annotations

import opcode
import sys
import types
from collections.abc import Callable
from typing import Any

__all__ = ["ArcTracer", "code_objects", "line_bound"]

_RESUME = opcode.opmap.get("RESUME")
"""CPython 3.11+: every code object starts (and every resumption restarts) at a RESUME."""
_RETURN_VALUE = opcode.opmap.get("RETURN_VALUE", -1)
_YIELD_VALUE = opcode.opmap.get("YIELD_VALUE", -1)
_YIELD_FROM = opcode.opmap.get("YIELD_FROM", -1)
_LASTI_IS_YIELD = sys.version_info[:2] != (3, 13)
"""At a yield's ``return`` event ``f_lasti`` points at the yield (3.13: at the RESUME after)."""
_LINE_ON_RETURN = sys.version_info >= (3, 14)
"""Python 3.14 may report a frame's last line only with its ``return`` event."""

_settrace = sys.settrace
_gettrace = sys.gettrace
_id = id
_len = len
_type = type
_CodeType = types.CodeType


def line_bound(program: str) -> int:
    """An upper bound of the line numbers ``program`` compiles to (the parent uses the same)."""
    return program.count("\n") + program.count("\r") + 1


def code_objects(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and every code object nested in its constants, depth first."""
    found: list[types.CodeType] = []
    stack = [code]
    while stack:
        current = stack.pop()
        found.append(current)
        for const in current.co_consts:
            if _type(const) is _CodeType:
                stack.append(const)
    return found


class ArcTracer:
    """Records the arcs the program's own code objects execute (see the module docstring).

    Args:
        max_line: The program's last line number; arcs outside ``[-max_line, max_line]`` (or
            touching line 0) are never recorded.
        max_arcs: Most arcs :meth:`take` returns at once (a program with more distinct arcs in
            one call gets an undercount, never a record the parent would refuse).
    """

    def __init__(self, max_line: int, max_arcs: int = 1 << 15) -> None:
        self.max_line = max_line
        self.max_arcs = max_arcs
        self.arcs: set[tuple[int, int]] = set()
        self._codes: dict[int, tuple[types.CodeType, bytes]] = {}
        self._trace = self._make_trace()

    def watch(self, code: types.CodeType) -> None:
        """Trace the frames of ``code`` and of every code object nested in it."""
        for item in code_objects(code):
            # co_code is rebuilt on each access (3.11+): keep one copy per code object. Holding
            # the code object keeps its id from being reused.
            self._codes[_id(item)] = (item, item.co_code)

    def start(self) -> None:
        """Install the trace function on the calling thread."""
        _settrace(self._trace)

    def stop(self) -> None:
        """Remove the trace function, unless the program replaced it (the runner counts that)."""
        if _gettrace() is self._trace:
            _settrace(None)

    def take(self) -> str:
        """The arcs recorded since the last call as JSON integers ``"a,b,c,d"``, then forgotten."""
        arcs = self.arcs
        if not arcs:
            return ""
        items = list(arcs)[: self.max_arcs]
        arcs.clear()
        return ",".join(f"{start:d},{end:d}" for start, end in items)

    def _make_trace(self) -> Callable[..., Any]:
        codes_get = self._codes.get
        add = self.arcs.add
        limit = self.max_line
        resume = _RESUME
        return_value, yield_value, yield_from = _RETURN_VALUE, _YIELD_VALUE, _YIELD_FROM
        lasti_is_yield, line_on_return = _LASTI_IS_YIELD, _LINE_ON_RETURN
        code_len = _len

        def trace(frame: Any, event: str, arg: Any) -> Any:
            code = frame.f_code
            known = codes_get(_id(code))
            if known is None or known[0] is not code or event != "call":
                return None
            co_code = known[1]
            first = code.co_firstlineno
            if not 0 < first <= limit:
                return None
            if resume is not None:
                real_call = co_code[frame.f_lasti + 1] == 0
            else:
                real_call = frame.f_lasti < 0
            if real_call:
                last = -first
            else:
                last = frame.f_lineno

            def local(frame: Any, event: str, arg: Any) -> Any:
                nonlocal last
                if event == "line":
                    line = frame.f_lineno
                    if _type(line) is int and 0 < line <= limit:
                        if last:
                            add((last, line))
                        last = line
                elif event == "return":
                    lasti = frame.f_lasti
                    if resume is not None:
                        if code_len(co_code) == lasti + 2:
                            real_return = True
                        else:
                            if lasti_is_yield:
                                lasti += 2
                            real_return = co_code[lasti] != resume
                    elif co_code[lasti] == return_value:
                        real_return = True
                    elif co_code[lasti] == yield_value:
                        real_return = False
                    elif code_len(co_code) <= lasti + 2:
                        real_return = True
                    else:
                        real_return = co_code[lasti + 2] != yield_from
                    if real_return and last:
                        if line_on_return:
                            line = frame.f_lineno
                            if _type(line) is int and 0 < line <= limit and line != last:
                                add((last, line))
                                last = line
                        add((last, -first))
                return local

            return local

        return trace
