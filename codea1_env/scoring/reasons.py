"""Every reason code the game and the referee give: a closed, documented set.

A reason says why a move, a program, a suite or a test scored nothing or was left out. Its value
is a short code (``"no_code"``), or a code and a free-form detail: ``"did_not_run: <error>"``,
``"no_tests: <parse reason>"``, ``"syntax_error: line 3: ..."``, ``"bad_arguments: <error>"``
(``": "`` between them) or ``"trivial:<how>"`` (no space; ``<how>`` is one of
:data:`TRIVIAL_REASONS`). :func:`reason_code` gives the code of any reason value, and every code
is in :data:`REASON_CODES` with its meaning in :data:`REASON_MEANINGS` (also listed in
``docs/metrics.md``). ``""`` means "no reason" (the move or test counts).

The families, by where the reason appears:

* :data:`MOVE_REASONS`: :func:`codea1_env.game.duel.check_move` and the duel's ``reasons``
  (``info["reasons"]`` of the views);
* :data:`PROGRAM_REASONS`: :func:`codea1_env.scoring.plan.program_of` (a judgement's
  ``code_errors``);
* :data:`PARSE_REASONS`: why a suite has no case (``ParsedTests.reason``,
  ``SuiteVerdict.parse_reason``);
* :data:`REJECT_REASONS`: why one statement of a suite is not a test (``Rejected.reason``);
* :data:`DISCARD_REASONS` and :data:`TRIVIAL_REASONS`: why the referee dropped a parsed test
  (a suite's ``discarded`` entries);
* :data:`DROP_REASONS`: why the GT correction dropped a test the GT ran (its ``GradeStatus``;
  a judged suite's ``rejected`` entries and ``info["rejected"]`` carry it);
* :data:`REWARD_REASONS`: ``CoderReward.reason`` and ``TesterReward.reason``.
"""

from __future__ import annotations

import typing
from typing import Literal

__all__ = [
    "DISCARD_REASONS",
    "DROP_REASONS",
    "EMPTY_REASONS",
    "MOVE_REASONS",
    "PARSE_REASONS",
    "PROGRAM_REASONS",
    "REASON_CODES",
    "REASON_MEANINGS",
    "REJECT_REASONS",
    "REWARD_REASONS",
    "TRIVIAL_REASONS",
    "DiscardReason",
    "DropReason",
    "MoveReason",
    "ParseReason",
    "ProgramReason",
    "ReasonCode",
    "RejectReason",
    "RewardReason",
    "TrivialReason",
    "reason_code",
    "with_detail",
]

MoveReason = Literal[
    "binary",
    "not_text",
    "empty",
    "too_long",
    "no_code",
    "did_not_run",
    "no_tests",
    "candidate_did_not_run",
    "golden_mode",
]
"""Why a player's move scored 0 (the duel's ``reasons``)."""

ProgramReason = Literal["not_text", "no_code", "syntax_error"]
"""Why a coder's answer holds no program that can run."""

ParseReason = Literal[
    "empty",
    "no_code",
    "syntax_error",
    "no_asserts",
    "no_valid_asserts",
    "no_pairs",
    "stdio_unsupported",
]
"""Why a suite holds no test case."""

RejectReason = Literal[
    "syntax_error",
    "not_assert",
    "not_equality",
    "wrong_shape",
    "wrong_function",
    "no_call",
    "unresolved_name",
    "shadows_entry_point",
    "too_long",
    "too_many",
    "cut_off",
    "missing_output",
    "missing_input",
]
"""Why one statement (or stdio block) of a suite is not a test."""

TrivialReason = Literal["self_referential", "copied_from_prompt", "always_passes"]
"""How a parsed test is trivial (the quality filter; after ``"trivial:"``)."""

DiscardReason = Literal["trivial", "bad_arguments"]
"""Why the referee dropped a parsed test before running it."""

DropReason = Literal["dropped_gt_error", "dropped_duplicate"]
"""Why the GT correction dropped a test after the GT ran it (the ``GradeStatus`` of a test not
kept; a suite's ``rejected`` entries carry it)."""

RewardReason = Literal["no_tests", "candidate_did_not_run"]
"""Why a reward is 0 by rule."""

MOVE_REASONS: frozenset[str] = frozenset(typing.get_args(MoveReason))
PROGRAM_REASONS: frozenset[str] = frozenset(typing.get_args(ProgramReason))
PARSE_REASONS: frozenset[str] = frozenset(typing.get_args(ParseReason))
REJECT_REASONS: frozenset[str] = frozenset(typing.get_args(RejectReason))
"""Every value ``Rejected.reason`` can take (the ``"missing_*"`` ones are for stdio pairs)."""
TRIVIAL_REASONS: frozenset[str] = frozenset(typing.get_args(TrivialReason))
DISCARD_REASONS: frozenset[str] = frozenset(typing.get_args(DiscardReason))
DROP_REASONS: frozenset[str] = frozenset(typing.get_args(DropReason))
REWARD_REASONS: frozenset[str] = frozenset(typing.get_args(RewardReason))

EMPTY_REASONS: frozenset[str] = frozenset(
    {"empty", "no_code", "syntax_error", "no_asserts", "no_valid_asserts"}
)
"""Every non-empty value ``ParsedTests.reason`` can take (the assert parser's part of
:data:`PARSE_REASONS`)."""

REASON_MEANINGS: dict[str, str] = {
    "binary": "the move is bytes that are not UTF-8",
    "not_text": "the move (or answer) is not text",
    "empty": "the move or suite is blank",
    "too_long": "the move, statement or expression exceeds its size limit",
    "no_code": "the coder's answer holds no program (nothing to extract)",
    "did_not_run": "the coder's program did not run (detail: its error)",
    "no_tests": "no test was parsed from the suite (detail: the parse reason), or the code faced "
    "no test",
    "candidate_did_not_run": "the tester's reward is 0 because the code it tested did not run",
    "golden_mode": "no tester in this mode: the GT tests judge the coder",
    "syntax_error": "the text does not parse as Python (detail: where)",
    "no_asserts": "the suite parsed but holds no assert",
    "no_valid_asserts": "the suite's asserts were all rejected",
    "no_pairs": "a stdio suite holds no input/output pair",
    "stdio_unsupported": "suite evaluation does not score stdio problems",
    "not_assert": "a statement that is not an assert",
    "not_equality": "an assert that is not ``call == expected``",
    "wrong_shape": "the entry-point call is on the right of ``==`` only",
    "wrong_function": "the left side calls something other than the entry point",
    "no_call": "the left side of ``==`` is not a call",
    "unresolved_name": "the assert uses a name bound by an assignment that cannot be inlined",
    "shadows_entry_point": "an assignment rebinds the entry point",
    "too_many": "more than ``max_cases`` cases; the extra ones are dropped",
    "cut_off": "the suite is longer than ``max_chars`` (20,000): it is read up to the last line "
    "break before the limit; the entry is the first line left out (and, for stdio, the block "
    "that reached the cut)",
    "missing_output": "a stdio input block with no output block after it",
    "missing_input": "a stdio output block with no input block before it",
    "trivial": "the quality filter dropped the test (detail: how it is trivial)",
    "self_referential": "the expected value calls the entry point itself",
    "copied_from_prompt": "the test's call appears in the prompt (copied from its examples)",
    "always_passes": "every candidate has passed this call so far",
    "bad_arguments": "the call's arguments did not evaluate to literals (detail: the error)",
    "dropped_gt_error": "the test's call failed on the GT (raised, timed out...): not kept, "
    "counted invalid",
    "dropped_duplicate": "the test repeats an earlier one (same call, same GT value): not kept, "
    "counted invalid",
}
"""Every reason code and what it means."""

REASON_CODES: frozenset[str] = frozenset(REASON_MEANINGS)
"""Every reason code (every family's)."""

ReasonCode = str
"""A value of :data:`REASON_CODES` (the union of the families' ``Literal`` types)."""


def reason_code(reason: str) -> str:
    """The code of a reason value: what comes before ``":"`` (``""`` for no reason)."""
    return reason.split(":", 1)[0].strip()


def with_detail(code: str, detail: str) -> str:
    """A reason value with a free-form detail: ``"code: detail"``."""
    return f"{code}: {detail}"
