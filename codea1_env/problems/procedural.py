"""A procedural family of integer threshold functions, generated on the fly.

Every problem asks for ``def f(x: int) -> int`` whose value changes at one or two thresholds,
so a wrong comparison (``>`` for ``>=``) or an off-by-one threshold is a real bug that only a test
at the boundary exposes. The GT tests always include the points just below, at and just above
each threshold, plus a few far-away points. Prompts are one short, regular line so that a tiny
language model can learn the family::

    def f(x: int) -> int:
        \"\"\"Return 3 if x > 5, else -2.\"\"\"

Families (difficulty in parentheses):

``step`` (0.2)
    ``return a if x OP t else b`` with ``OP`` one of ``>``, ``>=``, ``<``, ``<=``.
``range`` (0.5)
    ``return a if lo OP1 x OP2 hi else b`` with ``OP1``/``OP2`` each ``<`` or ``<=``.
``linear`` (0.6)
    ``return x + c if x OP t else k * x``, the branches differing at ``t - 1``, ``t`` and ``t + 1``.
``three_way`` (0.7)
    ``a`` below ``lo``, ``c`` above ``hi``, ``b`` in between, each bound strict or not.

Opt-in families (:data:`OPT_IN_FAMILIES`: only when named, e.g. ``families=["edge"]`` or the
trainer's ``procedural:SEED:train:edge``; the default mix above is unchanged):

``edge`` (0.2)
    ``step`` in the form of the tiny CPU preset (docs/tiny_preset.md): the prompt is
    ``def f(x):`` with the same one-line docstring, the GT program is ``def f(x):`` and its
    ``return`` line (no docstring: the form a coder writes, so a tester that warm-starts on it
    sees what it will see in RL), and :data:`EDGE_TESTS` GT tests (K of the paper) in ascending
    order: the boundary ``t - 1, t, t + 1`` and five other distinct inputs within 9 of ``t``.
    Every boundary mutant (a flipped comparison, a threshold moved by one) fails one of them.
    Each input is written as an offset from the prompt's threshold, the way boundary tests are
    often written (``assert f(7 - 1) == -1``, ``assert f(7) == -1``, ``assert f(7 + 1) == 6``
    for ``Return 6 if x > 7, else -1``): a tester that learns from these copies ``t`` and
    decides the side from the offset's sign, which a tiny model learns far more reliably than
    comparing two literals (docs/tiny_preset.md). The referee evaluates such arguments once, in
    the sandbox, and runs every program on the literal values (duplicates are found on them).

Problem ``i`` of a seed is a pure function of ``(seed, i)``: ``task_id`` is
``"proc/<seed>/<i>"``. The ``train`` and ``test`` splits use disjoint index ranges (test indices
start at :data:`TEST_OFFSET`) *and* disjoint function contents: a hash of the family and
parameters assigns each distinct function to one split, so a held-out problem is never a train
problem under another id.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from codea1_env.problems.problem import Problem

__all__ = ["EDGE_TESTS", "FAMILIES", "OPT_IN_FAMILIES", "TEST_OFFSET", "ProceduralSource"]

TEST_OFFSET = 1_000_000_000
"""First index of the ``test`` split; train indices are below it."""

FAMILIES: dict[str, float] = {"step": 0.2, "range": 0.5, "linear": 0.6, "three_way": 0.7}
"""Family name to difficulty: the default mix."""

OPT_IN_FAMILIES: dict[str, float] = {"edge": 0.2}
"""Families drawn only when named (``families=[...]``), with their difficulty."""

_ALL_FAMILIES: dict[str, float] = {**FAMILIES, **OPT_IN_FAMILIES}

EDGE_TESTS = 8
"""GT tests of an ``edge`` problem: the boundary triple and five more inputs near it."""

_MIN_TESTS = 6
_TEST_SHARE = 5  # one distinct function in five belongs to the test split
_DEFAULT_SIZE = {"train": 10_000, "test": 500}
_HEADER = "def f(x: int) -> int:"
_SHORT_HEADER = "def f(x):"


@dataclass(frozen=True)
class _Function:
    """One drawn function: docstring sentence, body lines, thresholds and parameters."""

    family: str
    doc: str
    body: tuple[str, ...]
    thresholds: tuple[int, ...]
    params: dict[str, Any]
    header: str = _HEADER
    doc_in_source: bool = True
    offset_inputs: bool = False  # GT tests write inputs as ``t - 1``, ``t``, ``t + 1`` (edge)

    def key(self) -> str:
        return self.family + "|" + "|".join(f"{k}={v}" for k, v in sorted(self.params.items()))


class ProceduralSource:
    """Integer threshold problems (see the module docstring).

    Args:
        seed: Non-negative seed; with the index it fixes each problem.
        n: Number of problems in the split (default 10,000 for ``train``, 500 for ``test``).
        difficulty: Keep families whose difficulty is at most this value, or within a
            ``(low, high)`` range.
        split: ``"train"`` or ``"test"`` (held out: disjoint ids and contents).
        families: Restrict to these family names (default: all of :data:`FAMILIES` that pass
            ``difficulty``; the :data:`OPT_IN_FAMILIES` only when named here).

    Raises:
        ValueError: a negative seed, a bad ``n`` or split, or no family left.
    """

    def __init__(
        self,
        seed: int = 0,
        n: int | None = None,
        difficulty: float | tuple[float, float] = 1.0,
        split: Literal["train", "test"] = "train",
        families: Sequence[str] | None = None,
    ) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        if split not in _DEFAULT_SIZE:
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        size = _DEFAULT_SIZE[split] if n is None else n
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= TEST_OFFSET:
            raise ValueError(f"n must be an int in [1, {TEST_OFFSET}], got {n!r}")
        low, high = (0.0, difficulty) if isinstance(difficulty, (int, float)) else difficulty
        chosen = list(FAMILIES) if families is None else list(families)
        unknown = [f for f in chosen if f not in _ALL_FAMILIES]
        if unknown:
            raise ValueError(f"unknown families {unknown}; expected some of {list(_ALL_FAMILIES)}")
        self.families = tuple(f for f in chosen if low <= _ALL_FAMILIES[f] <= high)
        if not self.families:
            raise ValueError(f"no family has a difficulty in [{low}, {high}]: {_ALL_FAMILIES}")
        self.seed = seed
        self.split = split
        self.n = size
        self.name = f"procedural:{seed}:{split}"
        self._offset = TEST_OFFSET if split == "test" else 0

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Problem]:
        return (self.problem_at(i) for i in range(self.n))

    def __getitem__(self, task_id: str) -> Problem:
        parts = task_id.split("/") if isinstance(task_id, str) else []
        if len(parts) == 3 and parts[0] == "proc" and parts[1] == str(self.seed):
            if parts[2].isdigit():
                position = int(parts[2]) - self._offset
                if 0 <= position < self.n:
                    return self.problem_at(position)
        raise KeyError(
            f"{task_id!r} is not in {self.name} (ids proc/{self.seed}/{self._offset}"
            f" .. proc/{self.seed}/{self._offset + self.n - 1})"
        )

    def __repr__(self) -> str:
        return (
            f"ProceduralSource(seed={self.seed}, n={self.n}, split={self.split!r}, "
            f"families={self.families})"
        )

    def ids(self) -> list[str]:
        """All task ids of the split, in order."""
        return [f"proc/{self.seed}/{self._offset + i}" for i in range(self.n)]

    def sample(self, rng: np.random.Generator) -> Problem:
        """Draw one problem of the split uniformly with ``rng``."""
        return self.problem_at(int(rng.integers(self.n)))

    def problem_at(self, position: int) -> Problem:
        """The ``position``-th problem of the split (0-based)."""
        if not 0 <= position < self.n:
            raise IndexError(f"position {position} outside [0, {self.n})")
        index = self._offset + position
        rng = np.random.default_rng([self.seed, index])
        while True:
            function = _draw(rng, self.families)
            if _is_test_content(function) == (self.split == "test"):
                break
        return _problem(function, f"proc/{self.seed}/{index}", rng, self.split)


def _is_test_content(function: _Function) -> bool:
    digest = hashlib.sha256(function.key().encode()).digest()
    return int.from_bytes(digest[:8], "big") % _TEST_SHARE == 0


def _draw(rng: np.random.Generator, families: Sequence[str]) -> _Function:
    family = families[int(rng.integers(len(families)))]
    if family == "step":
        return _step(rng)
    if family == "range":
        return _range(rng)
    if family == "linear":
        return _linear(rng)
    if family == "edge":
        return _edge(rng)
    return _three_way(rng)


def _pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    return options[int(rng.integers(len(options)))]


def _distinct_values(rng: np.random.Generator, count: int) -> list[int]:
    values = rng.choice(np.arange(-9, 10), size=count, replace=False)
    return [int(v) for v in values]


def _step(rng: np.random.Generator) -> _Function:
    op = _pick(rng, (">", ">=", "<", "<="))
    t = int(rng.integers(-20, 21))
    a, b = _distinct_values(rng, 2)
    return _Function(
        family="step",
        doc=f"Return {a} if x {op} {t}, else {b}.",
        body=(f"return {a} if x {op} {t} else {b}",),
        thresholds=(t,),
        params={"op": op, "t": t, "a": a, "b": b},
    )


def _edge(rng: np.random.Generator) -> _Function:
    step = _step(rng)
    return dataclasses.replace(
        step, family="edge", header=_SHORT_HEADER, doc_in_source=False, offset_inputs=True
    )


def _range(rng: np.random.Generator) -> _Function:
    lo = int(rng.integers(-20, 16))
    hi = lo + int(rng.integers(2, 11))
    op1, op2 = _pick(rng, ("<", "<=")), _pick(rng, ("<", "<="))
    a, b = _distinct_values(rng, 2)
    condition = f"{lo} {op1} x {op2} {hi}"
    return _Function(
        family="range",
        doc=f"Return {a} if {condition}, else {b}.",
        body=(f"return {a} if {condition} else {b}",),
        thresholds=(lo, hi),
        params={"lo": lo, "hi": hi, "op1": op1, "op2": op2, "a": a, "b": b},
    )


def _linear(rng: np.random.Generator) -> _Function:
    while True:
        op = _pick(rng, (">", ">=", "<", "<="))
        t = int(rng.integers(-15, 16))
        c = int(_pick(rng, (-5, -4, -3, -2, -1, 1, 2, 3, 4, 5)))
        k = int(_pick(rng, (-2, -1, 2, 3)))
        if all(x + c != k * x for x in (t - 1, t, t + 1)):  # branches differ near t
            break
    shifted = f"x + {c}" if c > 0 else f"x - {-c}"
    return _Function(
        family="linear",
        doc=f"Return {shifted} if x {op} {t}, else {k} * x.",
        body=(f"return {shifted} if x {op} {t} else {k} * x",),
        thresholds=(t,),
        params={"op": op, "t": t, "c": c, "k": k},
    )


def _three_way(rng: np.random.Generator) -> _Function:
    lo = int(rng.integers(-20, 16))
    hi = lo + int(rng.integers(2, 11))
    low_op, high_op = _pick(rng, ("<", "<=")), _pick(rng, (">", ">="))
    a, b, c = _distinct_values(rng, 3)
    return _Function(
        family="three_way",
        doc=f"Return {a} if x {low_op} {lo}, {c} if x {high_op} {hi}, else {b}.",
        body=(
            f"if x {low_op} {lo}:",
            f"    return {a}",
            f"if x {high_op} {hi}:",
            f"    return {c}",
            f"return {b}",
        ),
        thresholds=(lo, hi),
        params={"lo": lo, "hi": hi, "low_op": low_op, "high_op": high_op, "a": a, "b": b, "c": c},
    )


def _source(function: _Function) -> str:
    body = "\n".join(f"    {line}" for line in function.body)
    if not function.doc_in_source:
        return f"{function.header}\n{body}\n"
    return f'{function.header}\n    """{function.doc}"""\n{body}\n'


def _test_points(function: _Function, rng: np.random.Generator) -> list[int]:
    if function.family == "edge":
        (t,) = function.thresholds
        near = [t + d for d in range(-9, 10) if abs(d) > 1]
        others = rng.choice(near, size=EDGE_TESTS - 3, replace=False)
        return sorted({t - 1, t, t + 1} | {int(x) for x in others})
    points = {p + d for p in function.thresholds for d in (-1, 0, 1)}
    low, high = min(function.thresholds), max(function.thresholds)
    points.add(low - int(rng.integers(5, 31)))
    points.add(high + int(rng.integers(5, 31)))
    while len(points) < _MIN_TESTS:
        points.add(int(rng.integers(low - 12, high + 13)))
    return sorted(points)


def _offset_form(x: int, function: _Function) -> str:
    """``x`` written as the threshold plus or minus an offset: ``7 - 1``, ``7``, ``-18 + 3``."""
    (t,) = function.thresholds
    d = x - t
    return str(t) if d == 0 else f"{t} + {d}" if d > 0 else f"{t} - {-d}"


def _problem(function: _Function, task_id: str, rng: np.random.Generator, split: str) -> Problem:
    prompt = f'{function.header}\n    """{function.doc}"""'
    source = _source(function)
    namespace: dict[str, Any] = {}
    exec(source, namespace)  # noqa: S102 (code generated above from integers)
    gt = namespace["f"]
    written = (lambda x: _offset_form(x, function)) if function.offset_inputs else str
    tests = tuple(f"assert f({written(x)}) == {gt(x)}" for x in _test_points(function, rng))
    return Problem(
        task_id=task_id,
        prompt=prompt,
        entry_point="f",
        canonical_solution=source.rstrip("\n"),
        tests=tests,
        difficulty=_ALL_FAMILIES[function.family],
        tags=("procedural", "threshold", function.family),
        metadata={"family": function.family, "params": dict(function.params), "split": split},
    )
