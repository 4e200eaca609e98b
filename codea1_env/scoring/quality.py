"""Quality filtering: tests that are trivial by construction, rejected before they count.

With the filter on (:class:`~codea1_env.stability.StabilityOptions` ``quality_filter``), the
referee drops such tests before grading, counts each as invalid (so it lowers the validity
reward), and reports ``trivial:<reason>`` in the suite's rejections and ``quality/*`` metrics.
With it off, they are scored as the paper does. Reasons:

* ``self_referential``: the expected side calls the entry point too (``f(1) == f(1)`` or
  ``f(2) == f(1) + 1``): it checks the code against itself, so it cannot catch a wrong answer;
* ``copied_from_prompt``: the call appears verbatim in the problem prompt (a docstring example
  the coder already sees);
* ``always_passes``: every one of at least ``always_pass_after`` distinct candidates seen so far
  for this problem passed it (it separates nothing).

Tests that do not call the entry point, and syntactic duplicates, never reach grading anyway
(the parser rejects them with ``wrong_function`` / ``no_call`` / ``duplicate``).
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from codea1_env.problems.pysource import quiet_parse
from codea1_env.scoring.testcases import TestCase

__all__ = ["PassHistory", "merge_states", "program_digest", "trivial_reason"]

_HISTORY_SIZE = 200_000


def trivial_reason(case: TestCase, entry_point: str, prompt: str) -> str:
    """Why ``case`` is trivial by construction (``""`` when it is not).

    Args:
        case: A parsed test.
        entry_point: The function under test.
        prompt: The problem prompt (docstring examples are copied from here).
    """
    try:
        expected = quiet_parse(case.expected, "eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    for node in ast.walk(expected):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == entry_point
        ):
            return "self_referential"
    if _normalized(case.call) and _normalized(case.call) in _normalized(prompt):
        return "copied_from_prompt"
    return ""


def _normalized(source: str) -> str:
    return re.sub(r"\s+", "", source)


class PassHistory:
    """Per (problem, call): how many distinct candidates ran a valid test and how many failed.

    Bounded (least recently used entries are forgotten past ``max_size`` tests, 200,000 by
    default). A candidate program is known by an 8-byte BLAKE2b digest of its text (the same in
    every process and every run, unlike :func:`hash`), so the history can be saved with
    :meth:`state_dict` and restored with :meth:`load_state_dict` (the trainer's checkpoints do).
    A test that failed once can never be trivial again, so it keeps its failure count only, not
    its candidates; one that has not failed keeps at most the ``keep`` candidates that
    :meth:`record` is given (the referee gives ``always_pass_after``: more cannot change its
    answer), which bounds the memory, and the checkpoint file, to ``max_size`` x ``keep``
    digests. Not safe to read or save while another thread records into it.

    Args:
        max_size: The most tests remembered.
    """

    def __init__(self, max_size: int = _HISTORY_SIZE) -> None:
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
            raise ValueError(f"PassHistory: max_size must be a positive int, got {max_size!r}")
        self.max_size = max_size
        self._stats: OrderedDict[tuple[str, str], tuple[set[int], int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._stats)

    def record(
        self, task_id: str, call: str, program: str, passed: bool, keep: int | None = None
    ) -> None:
        """Record one candidate's outcome on one valid test (repeats of a program count once).

        Args:
            task_id: The problem.
            call: The test's call (its key).
            program: The candidate's program text.
            passed: Whether the candidate passed the test.
            keep: The most candidates kept for a test that has not failed (None: all); once it
                has that many, :meth:`always_passes` answers True for any ``min_candidates`` up
                to ``keep``, and False above it. So a history recorded under one
                ``always_pass_after`` and loaded where it is larger counts at most the old
                number of candidates per test (a test then needs new candidates to reach the
                larger one); the trainer resumes with its saved config, so it never does that.
        """
        key = (task_id, call)
        programs, failures = self._stats.get(key, (set(), 0))
        failures += 0 if passed else 1
        if failures:  # failed once, never trivial again: which candidates ran it no longer matters
            programs = _NONE
        elif keep is None or len(programs) < keep:
            programs.add(program_digest(program))
        self._stats[key] = (programs, failures)
        self._stats.move_to_end(key)
        self._trim()

    def always_passes(self, task_id: str, call: str, min_candidates: int) -> bool:
        """True when at least ``min_candidates`` distinct candidates ran it and none failed."""
        programs, failures = self._stats.get((task_id, call), (set(), 0))
        return failures == 0 and len(programs) >= min_candidates

    # ------------------------------------------------------------------ saving
    def state_dict(self) -> dict[str, Any]:
        """The history as plain JSON data (see :meth:`load_state_dict`).

        ``{"version": 1, "entries": [[task_id, call, [digest, ...], failures], ...]}``: the
        entries from least to most recently used, each candidate a 16-digit hex digest, sorted.
        The same history always gives the same data.
        """
        return {
            "version": _STATE_VERSION,
            "entries": [
                [task_id, call, sorted(f"{d:016x}" for d in programs), failures]
                for (task_id, call), (programs, failures) in self._stats.items()
            ],
        }

    def load_state_dict(self, state: Any) -> None:
        """Replace the history with one :meth:`state_dict` gave (untrusted data: checked first).

        Entries past :attr:`max_size` are forgotten, least recently used first (a pool's
        processes each keep up to the bound, so their union may be longer).

        Raises:
            ValueError: ``state`` is not such data; the message names the field. The history is
                unchanged then.
        """
        self._stats = _parse_state(state, self.max_size)

    def update(self, other: PassHistory) -> None:
        """Add ``other``'s entries to these, as if its candidates had been recorded here next.

        A test both know gets the union of their candidates and the sum of their failures, and
        becomes the most recently used; ``other``'s order is kept.
        """
        for key, (programs, failures) in other._stats.items():
            mine, mine_failures = self._stats.get(key, (set(), 0))
            failures += mine_failures
            self._stats[key] = (_NONE if failures else mine | programs, failures)
            self._stats.move_to_end(key)
        self._trim()

    def _trim(self) -> None:
        while len(self._stats) > self.max_size:
            self._stats.popitem(last=False)


def program_digest(program: str) -> int:
    """A candidate program's identity in a :class:`PassHistory`: 8 bytes of BLAKE2b, as an int.

    Stable across processes and runs (Python's :func:`hash` of a string is salted per process).
    """
    raw = hashlib.blake2b(program.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(raw, "big")


def merge_states(states: Iterable[Any], max_size: int = _HISTORY_SIZE) -> dict[str, Any]:
    """One :meth:`PassHistory.state_dict` holding every one of ``states`` (checked), in order.

    See :meth:`PassHistory.update` for how a test that several states know is merged.

    Raises:
        ValueError: one of ``states`` is damaged (the message names which and the field).
    """
    merged = PassHistory(max_size)
    for index, state in enumerate(states):
        part = PassHistory(max_size)
        try:
            part.load_state_dict(state)
        except ValueError as exc:
            raise ValueError(f"state {index}: {exc}") from exc
        merged.update(part)
    return merged.state_dict()


_STATE_VERSION = 1
_NONE: set[int] = set()  # the candidates of every test that failed: never added to (shared)
_DIGEST = re.compile(r"[0-9a-f]{16}")


def _parse_state(state: Any, max_size: int) -> OrderedDict[tuple[str, str], tuple[set[int], int]]:
    """Check a :meth:`PassHistory.state_dict` and build its entries (ValueError names a field)."""

    def bad(field: str, why: str) -> ValueError:
        return ValueError(f"pass history state: field {field!r} {why}")

    if not isinstance(state, Mapping):
        raise bad("(top level)", f"must be an object, not {type(state).__name__}")
    unknown = sorted(str(k) for k in state if k not in ("version", "entries"))
    if unknown:
        raise bad(unknown[0], "is not a field of a pass history state")
    version = state.get("version")
    if isinstance(version, bool) or version != _STATE_VERSION:
        raise bad("version", f"must be {_STATE_VERSION}, not {version!r}")
    entries = state.get("entries")
    if not isinstance(entries, list):
        raise bad("entries", f"must be a list, not {type(entries).__name__}")
    stats: OrderedDict[tuple[str, str], tuple[set[int], int]] = OrderedDict()
    for i, entry in enumerate(entries):
        where = f"entries[{i}]"
        if not isinstance(entry, list) or len(entry) != 4:
            raise bad(where, "must be a list [task_id, call, programs, failures]")
        task_id, call, programs, failures = entry
        if not isinstance(task_id, str):
            raise bad(f"{where}.task_id", f"must be a string, not {type(task_id).__name__}")
        if not isinstance(call, str):
            raise bad(f"{where}.call", f"must be a string, not {type(call).__name__}")
        if not isinstance(programs, list):
            raise bad(f"{where}.programs", "must be a list of digests")
        digests: set[int] = set()
        for j, text in enumerate(programs):
            if not isinstance(text, str) or not _DIGEST.fullmatch(text):
                raise bad(f"{where}.programs[{j}]", f"is not a 16-digit hex digest: {text!r:.40}")
            digests.add(int(text, 16))
        if len(digests) != len(programs):
            raise bad(f"{where}.programs", "repeats a digest")
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 0:
            raise bad(f"{where}.failures", f"must be an int >= 0, not {failures!r:.40}")
        if failures and programs:
            raise bad(f"{where}.programs", "must be empty for a test that failed")
        if not failures and not programs:
            raise bad(f"{where}.programs", "must name a candidate for a test that never failed")
        key = (task_id, call)
        if key in stats:
            raise bad(f"{where}", f"repeats the test ({task_id!r:.60}, {call!r:.60})")
        stats[key] = (digests, failures)
    while len(stats) > max_size:
        stats.popitem(last=False)
    return stats
