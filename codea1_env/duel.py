"""The game of one duel, independent of any RL API.

A :class:`Duel` is one problem played once: the coder submits an answer, the tester reads the
extracted program (white-box) and submits tests, and the :class:`~codea1_env.referee.Referee`
scores both. The Gymnasium env, the vector env and the PettingZoo view are thin adapters over this
class; :func:`score_duels` scores many finished duels with one sandbox call.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from codea1_env.anonymize import anonymize
from codea1_env.problems.problem import Problem
from codea1_env.referee import Judgement, Referee
from codea1_env.testcases import extract_code

__all__ = [
    "MAX_ACTION_CHARS",
    "Duel",
    "DuelOutcome",
    "Role",
    "check_move",
    "score_duels",
]

MAX_ACTION_CHARS = 65_536
"""Longest move (in characters) that is scored; a longer one is a legal move that scores 0."""


class Role(enum.IntEnum):
    """Whose turn it is. The integer is the observation's ``role`` field."""

    CODER = 0
    TESTER = 1

    @property
    def label(self) -> str:
        """``"coder"`` or ``"tester"``."""
        return self.name.lower()


def check_move(action: Any, max_chars: int = MAX_ACTION_CHARS) -> tuple[str, str]:
    """Turn any action into text, with the reason it cannot score (``""`` when it can).

    Never raises: ``bytes`` are decoded (undecodable bytes make the move ``"binary"``), other
    non-strings are ``"not_text"``, empty or blank text is ``"empty"``, text longer than
    ``max_chars`` is ``"too_long"``.
    """
    if isinstance(action, (bytes, bytearray)):
        try:
            action = bytes(action).decode("utf-8")
        except UnicodeDecodeError:
            return "", "binary"
    if not isinstance(action, str):
        return "", "not_text"
    if not action.strip():
        return action, "empty"
    if len(action) > max_chars:
        return action[:max_chars], "too_long"
    return action, ""


@dataclass
class DuelOutcome:
    """The scored end of a duel.

    Attributes:
        rewards: ``{"coder": float, "tester": float}``.
        judgement: The referee's full judgement (None when nothing could be scored).
        reasons: ``{"coder": str, "tester": str}``: why a move scored 0 (``""`` otherwise).

    """

    rewards: dict[str, float]
    judgement: Judgement | None
    reasons: dict[str, str]

    def info(self) -> dict[str, Any]:
        """The ``info`` entries an env reports at the end of an episode (plain Python values)."""
        out: dict[str, Any] = {"rewards": dict(self.rewards), "reasons": dict(self.reasons)}
        j = self.judgement
        if j is None:
            out.update(tests=[], verdicts=[], rejected=[], mistake_book_verdicts=[])
            out["gt_pass_rate"] = 0.0
            return out
        suite = j.suites[0][0] if j.suites and j.suites[0] else None
        out["tests"] = [v.test for v in suite.verdicts] if suite else []
        out["verdicts"] = [
            {
                "test": v.test,
                "valid": v.valid,
                "passed": v.passed,
                "status": v.status,
                "error": v.error,
            }
            for v in (suite.verdicts if suite else ())
        ]
        out["rejected"] = [
            {"line": line, "reason": reason, "source": source}
            for line, reason, source in (suite.rejected if suite else ())
        ]
        out["mistake_book_verdicts"] = [
            {"test": v.test, "passed": v.passed, "status": v.status}
            for v in (j.mistake_book[0] if j.mistake_book else ())
        ]
        out["gt_pass_rate"] = float(j.gt_pass_rates[0]) if j.gt_pass_rates else 0.0
        if suite is not None:
            t = suite.tester
            out["tester_reward_parts"] = {
                "validity": t.r_val,
                "adversarial": t.r_adv,
                "penalty": t.penalty,
            }
        return out


@dataclass
class Duel:
    """One problem played once.

    Attributes:
        problem: The problem.
        role: Whose move is next (None once the duel is over).
        answer: The coder's raw answer (after :func:`check_move`).
        program: The program extracted from the answer (what runs in the sandbox).
        shown_program: What the tester sees: the program, or its anonymized form.
        tests_text: The tester's raw answer.
        reasons: Why a move cannot score, per role.
        outcome: Set once the duel is scored.

    """

    problem: Problem
    role: Role | None = Role.CODER
    answer: str = ""
    program: str = ""
    shown_program: str = ""
    tests_text: str = ""
    reasons: dict[str, str] = field(default_factory=lambda: {"coder": "", "tester": ""})
    outcome: DuelOutcome | None = None

    def play_code(
        self, action: Any, max_chars: int = MAX_ACTION_CHARS, *, anonymize_code: bool = False
    ) -> None:
        """Record the coder's move; the tester moves next.

        Args:
            action: The coder's answer (any object; see :func:`check_move`).
            max_chars: Longest answer that can score.
            anonymize_code: Show the tester an anonymized program (see
                :mod:`codea1_env.anonymize`).
        """
        if self.role is not Role.CODER:
            raise RuntimeError(f"it is not the coder's turn (turn: {self.role})")
        text, reason = check_move(action, max_chars)
        self.answer = text
        self.program = extract_code(text) if not reason else ""
        if not reason and not self.program.strip():
            reason = "no_code"
        self.reasons["coder"] = reason
        self.shown_program = (
            anonymize(self.program, self.problem.entry_point)
            if anonymize_code and self.program
            else self.program
        )
        self.role = Role.TESTER

    def play_tests(self, action: Any, max_chars: int = MAX_ACTION_CHARS) -> None:
        """Record the tester's move; the duel then waits to be scored."""
        if self.role is not Role.TESTER:
            raise RuntimeError(f"it is not the tester's turn (turn: {self.role})")
        text, reason = check_move(action, max_chars)
        self.tests_text = text if not reason else ""
        self.reasons["tester"] = reason
        self.role = None

    @property
    def finished(self) -> bool:
        """True once both players have moved."""
        return self.role is None


def score_duels(
    referee: Referee, duels: Sequence[Duel], *, update_book: bool = True
) -> list[DuelOutcome]:
    """Score finished duels with one sandbox call, grouping duels of the same problem and code.

    Duels that share a problem form one referee item (one GT job); duels that also share the
    program form one candidate job whose suites are all their tests, which is what makes a batch
    of 8 codes x 8 suites cost 9 sandbox jobs instead of 128.
    """
    groups: dict[tuple[str, int], tuple[Problem, dict[str, list[int]]]] = {}
    for index, duel in enumerate(duels):
        if not duel.finished:
            raise RuntimeError("score_duels: every duel must be finished")
        key = (duel.problem.task_id, id(duel.problem))
        problem, by_code = groups.setdefault(key, (duel.problem, {}))
        by_code.setdefault(duel.answer if not duel.reasons["coder"] else "", []).append(index)
    items: list[tuple[Problem, list[str], list[list[str]]]] = []
    where: dict[int, tuple[int, int, int]] = {}
    for problem, by_code in groups.values():
        codes: list[str] = []
        suites: list[list[str]] = []
        for answer, members in by_code.items():
            codes.append(answer)
            row: list[str] = []
            for index in members:
                where[index] = (len(items), len(codes) - 1, len(row))
                row.append(duels[index].tests_text)
            suites.append(row)
        items.append((problem, codes, suites))
    judgements = referee.judge_many(items, update_book=update_book) if items else []
    outcomes: list[DuelOutcome] = []
    for index, duel in enumerate(duels):
        item, code, suite = where[index]
        j = judgements[item]
        if duel.reasons["coder"]:
            coder = 0.0
        elif referee.reward_config.mode == "golden":
            coder = float(j.coder_rewards[code])
        else:  # this duel's own (code, suite) pair, whatever else shares the code
            coder = float(j.suites[code][suite].coder_pair_reward)
        tester = 0.0 if duel.reasons["tester"] else float(j.tester_rewards[code][suite])
        reasons = dict(duel.reasons)
        if not reasons["coder"] and not j.compiled[code]:
            reasons["coder"] = "did_not_run: " + j.code_errors[code][:200]
        if not reasons["tester"]:
            sv = j.suites[code][suite]
            if sv.grading is None:
                reasons["tester"] = "no_tests: " + (sv.parse_reason or "nothing parsed")
            elif not j.compiled[code]:
                reasons["tester"] = "candidate_did_not_run"
        view = _single(j, code, suite)
        outcome = DuelOutcome({"coder": coder, "tester": tester}, view, reasons)
        duel.outcome = outcome
        outcomes.append(outcome)
    return outcomes


def _single(j: Judgement, code: int, suite: int) -> Judgement:
    """The part of a judgement that concerns one (code, suite) pair."""
    return Judgement(
        coder_rewards=(j.coder_rewards[code],),
        tester_rewards=((j.tester_rewards[code][suite],),),
        gt_pass_rates=(j.gt_pass_rates[code],),
        coder_details=(j.coder_details[code],),
        tester_details=((j.tester_details[code][suite],),),
        suites=((j.suites[code][suite],),),
        mistake_book=(j.mistake_book[code],) if j.mistake_book else (),
        compiled=(j.compiled[code],),
        code_errors=(j.code_errors[code],),
        metrics=j.metrics,
    )
