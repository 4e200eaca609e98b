"""Ground-truth correction bookkeeping: what the GT's runs mean for a parsed suite (rules 2-3).

The referee runs each test's call on the GT (:mod:`codea1_env.scoring.referee`); :func:`grade_suite`
decides, in the tester's order, which tests are kept (with the GT's value as their expectation),
which are invalid, and which are dropped (the GT raised, or a duplicate by :func:`case_key`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from codea1_env.problems.problem import IOPair
from codea1_env.sandbox.worker.plain import python_equal, to_source

if TYPE_CHECKING:
    from codea1_env.scoring.testcases import TestCase

__all__ = ["GradeStatus", "GradedTest", "SuiteGrading", "case_key", "grade_suite"]

GradeStatus = Literal["valid", "invalid_kept", "dropped_gt_error", "dropped_duplicate"]


@dataclass(frozen=True)
class GradedTest:
    """One test after the GT ran its call.

    Attributes:
        case: The parsed test (a :class:`TestCase`, or an :class:`IOPair` for stdio problems).
        status: ``"valid"`` (kept; the GT agrees with the expectation), ``"invalid_kept"`` (kept
            with the GT value as its expectation; the tester's expectation was wrong or did not
            evaluate, so the test is also invalid), ``"dropped_gt_error"`` (the GT raised on the
            call: invalid, not kept) or ``"dropped_duplicate"`` (its normalized form equals a kept
            test's: invalid, not kept).
        gt_value: The GT's plain value for the call; None when dropped.

    """

    case: TestCase | IOPair
    status: GradeStatus
    gt_value: Any = None

    @property
    def kept(self) -> bool:
        """True when the test is run against the candidate."""
        return self.status in ("valid", "invalid_kept")

    @property
    def invalid(self) -> bool:
        """True when the test counts in ``n_invalid`` (everything but ``"valid"``)."""
        return self.status != "valid"


@dataclass(frozen=True)
class SuiteGrading:
    """The GT-corrected suite (rules 2 and 3).

    Attributes:
        tests: Every kept test, in order (no cap at K); each carries its GT value.
        graded: Every test considered (kept and dropped), in order, with its status.
        n_kept: ``len(tests)``: kept tests, including those kept with a corrected expectation.
        n_invalid: Tests that raised on the GT, duplicates, and wrong expectations.
        n_valid: Kept tests whose expectation matched the GT (``n_kept`` minus the corrected).
        valid_mask: For each kept test, whether the tester's expectation matched the GT.

    """

    tests: tuple[GradedTest, ...]
    graded: tuple[GradedTest, ...]
    n_kept: int
    n_invalid: int
    n_valid: int
    valid_mask: tuple[bool, ...]


def case_key(case: TestCase | IOPair, gt_value: Any) -> str:
    """Duplicate-detection key: the normalized statement ``assert CALL == repr(GT value)``.

    ``CALL`` is :attr:`TestCase.key` (the call as written, normalized by ``ast.unparse``); for an
    :class:`IOPair` it is the stdin text.
    """
    if isinstance(case, IOPair):
        return f"stdin:{case.input}\x00{to_source(gt_value)}"
    return f"assert {case.key} == {to_source(gt_value)}"


def grade_suite(
    cases: Sequence[TestCase | IOPair],
    gt_call_ok: Sequence[bool],
    gt_values: Sequence[Any],
    expected_ok: Sequence[bool],
    expected_values: Sequence[Any],
    *,
    equal: Callable[[Any, Any], bool] = python_equal,
    keys: Sequence[str | None] | None = None,
) -> SuiteGrading:
    """Apply Code-A1's GT correction to a parsed suite (rule 2, in the tester's order).

    Per test: if the GT raised on its call, it is invalid and not kept; else if its normalized
    form (:func:`case_key`) equals one already kept, it is a duplicate: invalid, not kept; else it
    is KEPT with the GT value as its expectation, and if its expected expression failed to
    evaluate or ``not equal(expected, gt)``, it is also invalid. Every test is graded:
    there is no cap at K (K only divides, in :mod:`codea1_env.scoring.rewards`).

    Args:
        cases: Parsed tests, in order.
        gt_call_ok: Whether the GT's run of each call returned a plain value.
        gt_values: The GT's value for each call (ignored where ``gt_call_ok`` is False).
        expected_ok: Whether each expected expression evaluated to a plain value.
        expected_values: Each expected value (ignored where ``expected_ok`` is False).
        equal: The value comparison (:func:`codea1_env.sandbox.worker.plain.equality`; default
            Python's ``==``).
        keys: Each case's normalized form when the caller already has it (``case_key(case,
            gt_values[i])``, memoized across a problem's suites); computed here when None.
            Entries where ``gt_call_ok`` is False are not read.

    Raises:
        ValueError: the sequences differ in length (a caller error).

    """
    n = len(cases)
    lengths = {len(gt_call_ok), len(gt_values), len(expected_ok), len(expected_values)}
    if keys is not None:
        lengths.add(len(keys))
    if lengths - {n}:
        raise ValueError(f"grade_suite: sequences must all have {n} items, got lengths {lengths}")
    graded: list[GradedTest] = []
    kept: list[GradedTest] = []
    seen: set[str] = set()
    for index, case in enumerate(cases):
        if not gt_call_ok[index]:
            graded.append(GradedTest(case, "dropped_gt_error"))
            continue
        gt = gt_values[index]
        key = keys[index] if keys is not None else None
        if key is None:
            key = case_key(case, gt)
        if key in seen:
            graded.append(GradedTest(case, "dropped_duplicate"))
            continue
        seen.add(key)
        matches = expected_ok[index] and equal(expected_values[index], gt)
        test = GradedTest(case, "valid" if matches else "invalid_kept", gt)
        graded.append(test)
        kept.append(test)
    n_valid = sum(t.status == "valid" for t in kept)
    return SuiteGrading(
        tests=tuple(kept),
        graded=tuple(graded),
        n_kept=len(kept),
        n_invalid=len(graded) - n_valid,
        n_valid=n_valid,
        valid_mask=tuple(t.status == "valid" for t in kept),
    )
