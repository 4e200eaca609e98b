"""Build the scripted testers' candidate inputs from a problem and the candidate code.

Function problems: argument shapes come from the literal calls in the GT tests' asserts (or the
entry point's signature); boundary values from the constants the candidate compares against;
random values shaped like the examples. Stdio problems: copies of the GT inputs with integer
tokens shifted or redrawn.

Everything read here (the GT program, the GT tests, the candidate's code) is untrusted text and
is only parsed (:func:`~codea1_env.problems.pysource.quiet_parse` and :func:`ast.literal_eval`),
never executed in this process.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from codea1_env.problems.problem import Problem
from codea1_env.problems.pysource import quiet_parse
from codea1_env.sandbox.worker.plain import is_plain, to_source
from codea1_env.scoring.extraction import extract_code

LARGE_INT = 10**6
"""The "large value" boundary input for integer arguments."""
LARGE_LEN = 100
"""Length of the "large" string and list boundary inputs (kept short: the answer is text)."""

# --- reading problems and code -------------------------------------------------------------------


@dataclass(frozen=True)
class ScriptedCall:
    """Arguments of one call of the entry point (plain values)."""

    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()

    def source(self, entry_point: str) -> str:
        """The call as source: ``entry_point(args..., key=value...)``."""
        parts = [to_source(v) for v in self.args] + [f"{k}={to_source(v)}" for k, v in self.kwargs]
        return f"{entry_point}({', '.join(parts)})"

    def values(self) -> list[Any]:
        """The argument values, positional then keyword."""
        return list(self.args) + [v for _, v in self.kwargs]

    def with_value(self, position: int, value: Any) -> ScriptedCall:
        """A copy with the argument at ``position`` (keywords after positionals) replaced."""
        if position < len(self.args):
            args = self.args[:position] + (value,) + self.args[position + 1 :]
            return ScriptedCall(args, self.kwargs)
        k = position - len(self.args)
        kwargs = self.kwargs[:k] + ((self.kwargs[k][0], value),) + self.kwargs[k + 1 :]
        return ScriptedCall(self.args, kwargs)


def _example_calls(problem: Problem) -> list[ScriptedCall]:
    """Literal argument lists of the entry-point calls in the GT tests' asserts."""
    names = {problem.entry_point, "candidate"}
    calls: list[ScriptedCall] = []
    for test in problem.tests:
        try:
            tree = quiet_parse(test)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assert):
                continue
            found = (n for n in ast.walk(node.test) if isinstance(n, ast.Call))
            call = next((n for n in found if _called_name(n) in names), None)
            if call is None:
                continue
            try:
                args = tuple(ast.literal_eval(a) for a in call.args)
                kwargs = tuple((k.arg, ast.literal_eval(k.value)) for k in call.keywords if k.arg)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            if len(kwargs) == len(call.keywords) and is_plain(list(args) + [v for _, v in kwargs]):
                calls.append(ScriptedCall(args, kwargs))
    return calls


_ANNOTATION_DEFAULTS: dict[str, Any] = {
    "int": 0,
    "float": 0.0,
    "str": "",
    "bool": False,
    "list": [],
    "tuple": (),
    "dict": {},
    "set": set(),
}


def _parameters(program: str, entry_point: str) -> tuple[list[ast.arg], int]:
    """Return the entry point's positional parameters (no ``self``) and how many are required."""
    try:
        tree = quiet_parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [], 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
            params = node.args.posonlyargs + node.args.args
            if params and params[0].arg in ("self", "cls"):
                params = params[1:]
            return params, max(0, len(params) - len(node.args.defaults))
    return [], 0


def _signature_call(program: str, entry_point: str) -> ScriptedCall:
    """Build a call from the entry point's required parameters (by annotation, else int 0)."""
    params, n_required = _parameters(program, entry_point)
    values = []
    for param in params[:n_required]:
        base = param.annotation
        if isinstance(base, ast.Subscript):
            base = base.value
        name = base.id if isinstance(base, ast.Name) else "int"
        values.append(_ANNOTATION_DEFAULTS.get(name, 0))
    return ScriptedCall(tuple(values))


def _comparison_constants(code: str) -> tuple[list[int], dict[str, list[int]]]:
    """Return the integer constants compared in ``code``, and those compared with ``len(x)``.

    The second result maps the name ``x`` (``""`` when it is not a plain name) to its constants.
    """
    try:
        tree = quiet_parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [], {}
    values: list[int] = []
    lengths: dict[str, list[int]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        measured = [
            o.args[0].id if o.args and isinstance(o.args[0], ast.Name) else ""
            for o in operands
            if isinstance(o, ast.Call) and _called_name(o) == "len"
        ]
        for value in (_int_literal(o) for o in operands):
            if value is None:
                continue
            values.append(value)
            for name in measured:
                lengths.setdefault(name, []).append(value)
    found_lengths = {name: unique_values(found)[:4] for name, found in lengths.items()}
    return unique_values(values), found_lengths


def _called_name(call: ast.Call) -> str:
    return call.func.id if isinstance(call.func, ast.Name) else ""


def _int_literal(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_literal(node.operand)
        return None if inner is None else -inner
    return None


def _ints_in(value: Any) -> list[int]:
    if type(value) is int:
        return [value]
    if type(value) in (list, tuple):
        return [i for item in value for i in _ints_in(item)]
    if type(value) in (set, frozenset):  # in a canonical order, not the hash seed's
        return [i for item in sorted(value, key=to_source) for i in _ints_in(item)]
    if type(value) is dict:
        return [i for item in value.values() for i in _ints_in(item)]
    return []


def unique_values(items: Sequence[Any]) -> list[Any]:
    """``items`` without repeats by type and source form (unprintable ones dropped), in order."""
    seen: set[str] = set()
    out = []
    for item in items:
        try:
            key = f"{type(item).__name__}:{to_source(item)}"
        except ValueError:  # an int too long to print
            continue
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


# --- input generation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class InputHints:
    """What the tester knows about a problem's inputs."""

    examples: tuple[ScriptedCall, ...]
    names: tuple[str, ...]  # parameter name of each argument of the first example ("" unknown)
    compared: tuple[int, ...]  # integer constants in the candidate's comparisons
    lengths: Mapping[str, list[int]]  # constants compared with len(name) ("" any name)
    from_tests: tuple[int, ...]  # integer constants in the GT tests' arguments

    @property
    def int_range(self) -> tuple[int, int]:
        """The integer range random inputs are drawn from: the known constants, padded by 5."""
        known = [*self.compared, *self.from_tests, -10, 10]
        return min(known) - 5, max(known) + 5


def input_hints(problem: Problem, code: str) -> InputHints:
    """What the tester can read off the problem and the candidate ``code`` about inputs."""
    code = extract_code(code)
    examples = _example_calls(problem) or [_signature_call(problem.gt_program, problem.entry_point)]
    params = _parameters(code, problem.entry_point)[0]
    params = params or _parameters(problem.gt_program, problem.entry_point)[0]
    first = examples[0]
    names = [p.arg for p in params[: len(first.args)]]
    names += [""] * (len(first.args) - len(names)) + [k for k, _ in first.kwargs]
    compared, lengths = _comparison_constants(code)
    from_tests = unique_values([i for call in examples for v in call.values() for i in _ints_in(v)])
    return InputHints(
        tuple(examples), tuple(names), tuple(compared[:8]), lengths, tuple(from_tests[:6])
    )


def _boundary_values(value: Any, hints: InputHints, name: str) -> list[Any]:
    """Return boundary inputs for argument ``name``, of the type of ``value``, best first."""
    kind = type(value)
    if kind is bool:
        return [not value]
    if kind is int:
        near = [c + d for c in hints.compared for d in (-1, 0, 1)]
        from_tests = [c + d for c in hints.from_tests for d in (-1, 0, 1)]
        return [*near, 0, -1, *from_tests, LARGE_INT, 1, -LARGE_INT]
    if kind is float:
        near_f = [float(c) + d for c in hints.compared for d in (-0.5, 0.0, 0.5)]
        return [*near_f, 0.0, -1.0, float(LARGE_INT)]
    if kind in (str, list, tuple):
        fill = value if len(value) else ("a" if kind is str else (0,))
        measured = [*hints.lengths.get(name, []), *hints.lengths.get("", [])]
        lengths = [n + d for n in measured for d in (-1, 0, 1) if n + d >= 0]
        sized = [_repeat(fill, n, kind) for n in [*lengths, 0, 1, LARGE_LEN]]
        return sized + [value[::-1]]
    if kind in (dict, set):
        return [kind()]
    return []


def _repeat(fill: Any, n: int, kind: type) -> Any:
    items = [fill[i % len(fill)] for i in range(min(n, 10 * LARGE_LEN))]
    return "".join(items) if kind is str else kind(items)


def _random_like(value: Any, hints: InputHints, rng: np.random.Generator) -> Any:
    """Draw a random value shaped like ``value`` (same type, similar size and elements)."""
    kind = type(value)
    lo, hi = hints.int_range
    if kind is bool:
        return bool(rng.integers(2))
    if kind is int:
        return int(rng.integers(lo, hi + 1))
    if kind is float:
        return round(float(rng.uniform(lo, hi)), 3)
    size = int(rng.integers(0, max(8, 2 * len(value)) + 1)) if kind in (str, list, set) else 0
    if kind is str:
        alphabet = sorted(set(value)) or list("abcxyz")
        return "".join(alphabet[int(rng.integers(len(alphabet)))] for _ in range(size))
    if kind in (list, set):
        # a set's items in a canonical order, so the draws do not follow the hash seed
        pool = (sorted(value, key=to_source) if kind is set else list(value)) or [0]
        items = [_random_like(pool[int(rng.integers(len(pool)))], hints, rng) for _ in range(size)]
        if kind is set:
            return {item for item in items if _hashable(item)}
        return items
    if kind is tuple:
        return tuple(_random_like(item, hints, rng) for item in value)
    if kind is dict:
        return {k: _random_like(v, hints, rng) for k, v in value.items()}
    return value


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def boundary_calls(hints: InputHints) -> list[ScriptedCall]:
    """Vary one argument of the first example at a time, interleaving the arguments."""
    base = hints.examples[0]
    per_position = [
        unique_values([value, *_boundary_values(value, hints, name)])[1:]  # minus the base value
        for value, name in zip(base.values(), hints.names, strict=True)
    ]
    calls = []
    for rank in range(max((len(vals) for vals in per_position), default=0)):
        for position, vals in enumerate(per_position):
            if rank < len(vals):
                calls.append(base.with_value(position, vals[rank]))
    return calls


def random_calls(hints: InputHints, rng: np.random.Generator, count: int) -> list[ScriptedCall]:
    """``count`` calls shaped like random examples, with random values near the known ones."""
    calls = []
    for _ in range(count):
        example = hints.examples[int(rng.integers(len(hints.examples)))]
        args = tuple(_random_like(v, hints, rng) for v in example.args)
        kwargs = tuple((k, _random_like(v, hints, rng)) for k, v in example.kwargs)
        calls.append(ScriptedCall(args, kwargs))
    return calls


_INT_TOKEN = re.compile(r"(?<![\w.])-?\d+(?![\w.])")


def perturbed_inputs(text: str, deltas: Sequence[int]) -> list[str]:
    """Return copies of ``text`` with one integer token shifted by each delta."""
    out = []
    for match in _INT_TOKEN.finditer(text):
        for delta in deltas:
            new = str(int(match.group()) + delta)
            out.append(text[: match.start()] + new + text[match.end() :])
    return out


def random_inputs(text: str, rng: np.random.Generator, count: int) -> list[str]:
    """Return copies of ``text`` with one random integer token set to a nearby value."""
    tokens = list(_INT_TOKEN.finditer(text))
    if not tokens:
        return []
    out = []
    for _ in range(count):
        match = tokens[int(rng.integers(len(tokens)))]
        value = int(match.group())
        spread = max(3, abs(value))
        new = str(int(rng.integers(value - spread, value + spread + 1)))
        out.append(text[: match.start()] + new + text[match.end() :])
    return out
