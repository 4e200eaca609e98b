"""The game of one duel, independent of any RL API.

A :class:`Duel` is one problem played once: the coder submits an answer, the tester reads the
extracted program (white-box) and submits tests, and the
:class:`~codea1_env.scoring.referee.Referee` scores both. The Gymnasium env, the vector env and the
PettingZoo view are thin adapters over this class; :func:`score_duels` scores many finished duels
with one sandbox call, and :func:`judge_grid` scores the trainer's ``problems x codes x suites``
grid of duels the same way.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from codea1_env.game.anonymize import anonymize
from codea1_env.problems.problem import Problem
from codea1_env.scoring.reasons import with_detail
from codea1_env.scoring.referee import Judgement, Referee
from codea1_env.scoring.testcases import extract_code

__all__ = [
    "MAX_ACTION_CHARS",
    "Duel",
    "DuelOutcome",
    "Role",
    "answer_for",
    "check_move",
    "fixed_tester",
    "gt_suite",
    "pair_outcome",
    "judge_grid",
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


def fixed_tester(mode: str) -> str | None:
    """The suite of the fixed opponent of reward ``mode``, or None when a tester plays.

    In the "Golden Tests" mode the tester is a fixed opponent that writes no tests (the coder is
    scored on the GT tests alone); whoever hosts a duel plays this suite right after the coder's
    move, so nothing downstream branches on the mode.
    """
    return "" if mode == "golden" else None


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


def answer_for(program: str) -> str:
    """A coder's answer that shows exactly ``program``: the program in a ```` ```python ```` block.

    For playing a known program (a GT solution, a mutant) as the coder's move:
    :meth:`Duel.play_code` extracts ``program`` from it unchanged.
    """
    return "```python\n" + program + "\n```"


def gt_suite(problem: Problem) -> str:
    """A tester's answer that plays the problem's GT tests (the ``gt+mistake_book`` opponent).

    Function problems: the GT asserts in a ```` ```python ```` block; stdio problems: each
    input/output pair as an ```` ```input ```` and an ```` ```output ```` block.
    """
    if problem.kind == "function":
        return "```python\n" + "\n".join(problem.tests) + "\n```"
    return "\n\n".join(
        f"```input\n{pair.input.rstrip(chr(10))}\n```\n```output\n{pair.output.rstrip(chr(10))}\n```"
        for pair in problem.io_pairs
    )


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
            out["n_kept"] = suite.n_kept
            out["n_invalid"] = suite.n_invalid
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
                :mod:`codea1_env.game.anonymize`).
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

    def branch(self) -> Duel:
        """A copy of this duel at the tester's turn: another suite against the same code.

        The trainer writes several suites against each code; each suite is one branch, and
        :func:`judge_grid` scores a code's branches together.

        Raises:
            RuntimeError: it is not the tester's turn.
        """
        if self.role is not Role.TESTER:
            raise RuntimeError(f"branch: it is not the tester's turn (turn: {self.role})")
        return dataclasses.replace(self, reasons=dict(self.reasons), outcome=None)

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


def _scored_answer(duel: Duel) -> str:
    """The coder's answer as the referee scores it (``""`` for a move that cannot score)."""
    return duel.answer if not duel.reasons["coder"] else ""


def judge_grid(
    referee: Referee, grid: Sequence[Sequence[Sequence[Duel]]], *, update_book: bool = True
) -> list[Judgement]:
    """Score a ``problems x codes x suites`` grid of duels with one referee call.

    ``grid[p][c]`` are the duels of problem ``p`` that share one coder move (the code and its
    :meth:`Duel.branch` copies), one per test suite written against that code. The judgement of
    problem ``p`` keeps that shape: ``tester_rewards[c][s]`` belongs to ``grid[p][c][s]``. A code
    whose tester has not moved (golden mode: one duel still at the tester's turn) is scored
    without suites. The referee receives the moves as the duels hold them after
    :func:`check_move`, exactly as :func:`score_duels` passes them.

    Raises:
        ValueError: an empty problem or code row, a row mixing problems or coder moves, or a row
            mixing finished duels with duels at the tester's turn.
        RuntimeError: a duel whose coder has not moved.
    """
    items: list[tuple[Problem, list[str], list[list[str]]]] = []
    for rows in grid:
        if not rows or not all(rows):
            raise ValueError("judge_grid: every problem needs codes, every code a duel")
        problem = rows[0][0].problem
        codes: list[str] = []
        suites: list[list[str]] = []
        for row in rows:
            answer = _scored_answer(row[0])
            for duel in row:
                if duel.role is Role.CODER:
                    raise RuntimeError("judge_grid: a duel whose coder has not moved")
                if duel.problem is not problem or _scored_answer(duel) != answer:
                    raise ValueError("judge_grid: a code row mixes problems or coder moves")
            finished = [duel.finished for duel in row]
            if any(finished) and not all(finished):
                raise ValueError("judge_grid: a code row mixes finished and unfinished duels")
            codes.append(answer)
            suites.append([duel.tests_text for duel in row] if all(finished) else [])
        items.append((problem, codes, suites))
    return referee.judge_many(items, update_book=update_book) if items else []


def score_duels(
    referee: Referee, duels: Sequence[Duel], *, update_book: bool = True
) -> list[DuelOutcome]:
    """Score finished duels with one sandbox call.

    Every duel is one code and one suite (rule 8 of docs/deviations.md: an env episode is a step
    with one code and one suite), so each duel is its own code row, also when two duels' answers are
    the same text: each is a separate sample and counts separately in the mistake-book update
    (rule 8). Duels of the same problem form one referee item (one GT job), and the referee runs
    identical programs of an item as one sandbox job, so 8 copies of a code cost one candidate job.
    """
    groups: dict[tuple[str, int], list[int]] = {}
    for index, duel in enumerate(duels):
        if not duel.finished:
            raise RuntimeError("score_duels: every duel must be finished")
        groups.setdefault((duel.problem.task_id, id(duel.problem)), []).append(index)
    grid: list[list[list[Duel]]] = []
    where: dict[int, tuple[int, int, int]] = {}
    for members in groups.values():
        for code, index in enumerate(members):
            where[index] = (len(grid), code, 0)
        grid.append([[duels[index]] for index in members])
    judgements = judge_grid(referee, grid, update_book=update_book)
    outcomes: list[DuelOutcome] = []
    for index, duel in enumerate(duels):
        item, code, suite = where[index]
        golden = referee.reward_config.mode == "golden"
        outcome = pair_outcome(duel, judgements[item], code, suite, golden=golden)
        duel.outcome = outcome
        outcomes.append(outcome)
    return outcomes


def pair_outcome(
    duel: Duel, j: Judgement, code: int, suite: int | None, *, golden: bool
) -> DuelOutcome:
    """One duel's rewards and reasons from the judgement of its problem (the env's rules).

    The coder gets its own (code, suite) pair reward (its GT pass rate in golden mode), 0 for a
    move that cannot score; the tester its suite's reward, 0 for a move that cannot score. Every
    view that reports a duel (the env, the vector env, the adapters) builds its outcome here.

    Args:
        duel: The scored duel (its moves and their reasons).
        j: The judgement of the duel's problem.
        code: The duel's code row in ``j``.
        suite: The duel's suite in that row (None: the code was judged without suites).
        golden: Golden mode (the coder is rewarded by its GT pass rate).
    """
    if duel.reasons["coder"]:
        coder = 0.0
    elif golden or suite is None:
        coder = float(j.coder_rewards[code])
    else:  # this duel's own (code, suite) pair, whatever else shares the code
        coder = float(j.suites[code][suite].coder_pair_reward)
    tester = (
        0.0 if duel.reasons["tester"] or suite is None else float(j.tester_rewards[code][suite])
    )
    reasons = dict(duel.reasons)
    if not reasons["coder"] and not j.compiled[code]:
        reasons["coder"] = with_detail("did_not_run", j.code_errors[code][:200])
    if not reasons["tester"] and suite is not None:
        sv = j.suites[code][suite]
        if sv.grading is None:
            reasons["tester"] = with_detail("no_tests", sv.parse_reason or "nothing parsed")
        elif not j.compiled[code]:
            reasons["tester"] = "candidate_did_not_run"
    return DuelOutcome({"coder": coder, "tester": tester}, _single(j, code, suite), reasons)


def _single(j: Judgement, code: int, suite: int | None) -> Judgement:
    """The part of a judgement that concerns one (code, suite) pair (no suite: the code alone)."""
    return Judgement(
        coder_rewards=(j.coder_rewards[code],),
        tester_rewards=((j.tester_rewards[code][suite],),) if suite is not None else ((),),
        gt_pass_rates=(j.gt_pass_rates[code],),
        coder_details=(j.coder_details[code],),
        tester_details=((j.tester_details[code][suite],),) if suite is not None else ((),),
        suites=((j.suites[code][suite],),) if suite is not None else ((),),
        mistake_book=(j.mistake_book[code],) if j.mistake_book else (),
        gt_tests=(j.gt_tests[code],) if j.gt_tests else (),
        compiled=(j.compiled[code],),
        code_errors=(j.code_errors[code],),
        metrics=j.metrics,
    )
