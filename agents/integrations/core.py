"""The scoring core every RL-engine adapter shares: problems, frozen opponents, one referee.

Each adapter (the HTTP reward service, the SkyRL-gym envs, verl's reward function) turns what its
engine hands over into rows and asks a :class:`RewardCore` to score them:

* :class:`CoderRow`: a coder's answer to a problem. The tester is *frozen*: the core's
  ``opponent`` writes the suite (see :data:`OPPONENTS`).
* :class:`TesterRow`: a tester's answer against a frozen coder's answer (white-box).
* :class:`GridRow`: ``codes x suites`` for one problem, as the trainer plays them
  (``suites[i]`` written against ``codes[i]``).

:meth:`RewardCore.score` plays every row as the env does (a :class:`~codea1_env.game.duel.Duel`
per (code, suite), ``Duel.play_code`` then ``Duel.play_tests``, the frozen tester's one batched
``act`` call) and scores all of them with ONE :func:`~codea1_env.game.duel.judge_grid` call, that is
one :meth:`~codea1_env.scoring.referee.Referee.judge_many` and one sandbox call. There is no second
grading path: rewards and verdicts are the referee's, and each pair's ``info`` is
:meth:`~codea1_env.game.duel.DuelOutcome.info`, the very dict ``CodeTestDuel-v0`` reports.

Rows of the same problem (same ``task_id`` and the same record) form one referee item, as
:func:`~codea1_env.game.duel.score_duels` groups them, so the mistake book is updated once per
problem per call (rule 8).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.integrations.options import MODES, OPPONENTS
from agents.players.prompts import CODER_PROMPT, TESTER_PROMPT, PromptTemplate
from codea1_env.envs.duel_env import duel_info
from codea1_env.game.duel import (
    MAX_ACTION_CHARS,
    Duel,
    gt_suite,
    judge_grid,
    pair_outcome,
)
from codea1_env.game.spaces import observe
from codea1_env.mistake_book import MistakeBook
from codea1_env.problems import Problem, ProblemFormatError, problem_from_dict, problem_to_dict
from codea1_env.problems.jsontext import decode_json
from codea1_env.sandbox.base import Limits, Sandbox
from codea1_env.scoring.referee import Judgement, Referee
from codea1_env.scoring.rewards import RewardConfig

__all__ = [
    "SharedCores",
    "MODES",
    "OPPONENTS",
    "CoderRow",
    "GridResult",
    "GridRow",
    "PairResult",
    "RequestError",
    "RewardCore",
    "Row",
    "TesterRow",
    "coder_prompt",
    "gt_suite",
    "tester_prompt",
]


class RequestError(ValueError):
    """A row or request that cannot be scored; names the field that is wrong.

    Attributes:
        field: The offending field (``"labels[3]"``, ``"problem.tests"``), or None.
        message: What is wrong.
        status: The HTTP status the service answers with (400 by default).

    """

    def __init__(self, field: str | None, message: str, status: int = 400) -> None:
        self.field = field
        self.message = message
        self.status = status
        super().__init__(f"{field}: {message}" if field else message)


@dataclass(frozen=True)
class CoderRow:
    """A coder's answer; the core's frozen opponent writes the tests."""

    problem: Problem
    answer: str


@dataclass(frozen=True)
class TesterRow:
    """A tester's answer against a frozen coder's answer (the raw answer; its code is extracted)."""

    __test__ = False

    problem: Problem
    code: str
    tests: str


@dataclass(frozen=True)
class GridRow:
    """``codes x suites`` of one problem: ``suites[i]`` were written against ``codes[i]``.

    An empty ``suites[i]`` scores ``codes[i]`` without a tester (the mistake book and, in golden
    mode, the GT tests).
    """

    problem: Problem
    codes: tuple[str, ...]
    suites: tuple[tuple[str, ...], ...]


Row = CoderRow | TesterRow | GridRow


@dataclass(frozen=True)
class PairResult:
    """One scored (code, suite) pair.

    Attributes:
        coder: The coder's reward for this pair (the env's ``info["rewards"]["coder"]``).
        tester: The tester's reward (``info["rewards"]["tester"]``).
        info: :meth:`~codea1_env.game.duel.DuelOutcome.info` of the pair: ``rewards``, ``reasons``,
            ``tests``, ``verdicts``, ``rejected``, ``mistake_book_verdicts``, ``gt_pass_rate``
            and ``tester_reward_parts`` (plain JSON values).
        tests_text: The suite that was scored (for a coder row: what the frozen tester wrote).

    """

    coder: float
    tester: float
    info: dict[str, Any]
    tests_text: str = ""

    @property
    def reward(self) -> float:
        """Alias of :attr:`coder` (a coder row's reward)."""
        return self.coder

    def metrics(self, role: str) -> dict[str, float]:
        """The pair's numbers as the adapters log them, for the trained ``role``.

        Args:
            role: ``"coder"`` or ``"tester"``: whose reward is ``score`` and whose move
                ``scored`` is about.

        Returns:
            ``score`` (the role's reward), ``coder_reward``, ``tester_reward``,
            ``gt_pass_rate``, ``n_tests`` and ``n_failed`` (the suite's tests that were kept
            and those the code failed), and ``scored`` (1.0 unless the role's move could not
            score).

        """
        verdicts = self.info.get("verdicts") or []
        return {
            "score": float(self.tester if role == "tester" else self.coder),
            "coder_reward": float(self.coder),
            "tester_reward": float(self.tester),
            "gt_pass_rate": float(self.info.get("gt_pass_rate") or 0.0),
            "n_tests": float(len(verdicts)),
            "n_failed": float(sum(1 for v in verdicts if not v.get("passed"))),
            "scored": 0.0 if self.info["reasons"].get(role) else 1.0,
        }


@dataclass(frozen=True)
class GridResult:
    """A scored :class:`GridRow`.

    Attributes:
        coder_rewards: Per code, the mean of its pair rewards (golden: the GT pass rate; 0 for a
            move that cannot score).
        gt_pass_rates: Per code, the GT-test pass rate.
        pairs: ``pairs[i][j]``: code ``i`` against suite ``j`` (empty when ``suites[i]`` is).
        code_infos: Per code, the info of the code scored without suites (only for codes with
            no suite; None otherwise).

    """

    coder_rewards: tuple[float, ...]
    gt_pass_rates: tuple[float, ...]
    pairs: tuple[tuple[PairResult, ...], ...]
    code_infos: tuple[dict[str, Any] | None, ...] = ()


def coder_prompt(problem: Problem, template: str = CODER_PROMPT) -> str:
    """The coder's prompt for ``problem``, rendered from the env's observation (every adapter)."""
    return PromptTemplate(template).render_observation(observe(Duel(problem)))


def tester_prompt(
    problem: Problem, code: str, template: str = TESTER_PROMPT, num_tests: int = 8
) -> str:
    """The tester's prompt for a frozen coder answer (white-box), as the env shows it.

    Args:
        problem: The problem.
        code: The frozen coder's answer (its python block is extracted, as ``Duel.play_code``
            does).
        template: The tester prompt (``{prompt}``, ``{entry_point}``, ``{code}``,
            ``{num_tests}``).
        num_tests: How many asserts the prompt asks for.

    """
    duel = Duel(problem)
    duel.play_code(code)
    return PromptTemplate(template).render_observation(observe(duel), num_tests)


@dataclass
class _Slot:
    """Where a row's duels sit in the grid: (item, first code index, codes) and the duels."""

    duels: list[list[Duel]]
    item: int = -1
    first_code: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class RewardCore:
    """One referee, one mistake book, one problem source and one frozen opponent.

    Thread-safe: :meth:`score` may be called from several threads (the frozen tester's ``act``
    runs under a lock; the referee is thread-safe).

    Args:
        source: Problems that requests may name by id: a spec for
            :func:`codea1_env.problems.load_source` (``"bank"``, ``"humaneval"``,
            ``"procedural"``, ``"jsonl:PATH"``), a ProblemSource or a list of Problems. Full
            problem records in the JSONL schema are accepted whatever the source.
        opponent: The frozen tester of coder rows (see :data:`OPPONENTS`).
        mode: ``"code-a1"`` or ``"self-play"`` (ignored with ``opponent="gt"``, which is golden).
        alpha: Weight of validity in the tester's reward.
        k: Code-A1's K.
        mistake_book: None (in memory), a SQLite path (shared by every process that opens it) or
            a MistakeBook.
        sandbox: None/"local", "docker", "ray" or a Sandbox.
        workers: Sandbox workers when the core builds a local sandbox (default: one per core).
        limits: Per-job sandbox limits (a Limits).
        referee: A referee to use instead of building one (then ``mode``, ``alpha``, ``k``,
            ``mistake_book``, ``sandbox`` and ``limits`` are ignored; not closed by :meth:`close`).
        tester: A frozen tester policy (anything with the ``act(observations, infos)`` protocol)
            to use instead of the one ``opponent`` names.
        seed: Seed of the scripted testers.
        num_tests: Tests the scripted or HTTP tester writes per suite.
        update_book: Apply the mistake-book updates of every scored batch (rule 8).
        opponent_url: The OpenAI-compatible API root for ``opponent="http"``.
        opponent_model: The model name for ``opponent="http"``.
        max_action_chars: Longest move that scores (the env's ``max_action_chars``).

    """

    def __init__(
        self,
        source: Any = "bank",
        *,
        opponent: str = "boundary",
        mode: str = "code-a1",
        alpha: float = 0.5,
        k: int = 8,
        mistake_book: MistakeBook | str | None = None,
        sandbox: Sandbox | str | None = None,
        workers: int | None = None,
        limits: Limits | None = None,
        referee: Referee | None = None,
        tester: Any = None,
        seed: int = 0,
        num_tests: int = 8,
        update_book: bool = True,
        opponent_url: str | None = None,
        opponent_model: str = "tester",
        max_action_chars: int = MAX_ACTION_CHARS,
    ) -> None:
        if opponent not in OPPONENTS:
            raise ValueError(f"opponent must be one of {OPPONENTS}, got {opponent!r}")
        if opponent != "gt" and mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        from codea1_env.game.host import (
            DuelHost,
            make_limits,
            make_mistake_book,
            make_sandbox,
        )

        self.opponent = opponent
        self.update_book = update_book
        self.max_action_chars = int(max_action_chars)
        self._owns_referee = referee is None
        if referee is None:
            owns = sandbox is None or isinstance(sandbox, str)
            if workers is not None and sandbox in (None, "local"):
                from codea1_env.sandbox.factory import make_sandbox as backend

                sandbox = backend("local", workers=workers)
            config = RewardConfig(alpha=alpha, k=k, mode="golden" if opponent == "gt" else mode)
            referee = Referee(
                sandbox=make_sandbox(sandbox),
                reward_config=config,
                limits=make_limits(limits),
                mistake_book=make_mistake_book(mistake_book),
                owns_sandbox=owns,
            )
        self.referee = referee
        # the env's game layer: problem picking and the coder's move with the fixed opponent
        self.host = DuelHost(source, referee.reward_config, None, None, None, referee, None)
        self.source = self.host.picker.source
        fallback = source if isinstance(source, str) else type(self.source).__name__
        self.source_name = str(getattr(self.source, "name", fallback))
        self._tester_lock = threading.Lock()
        self._owns_tester = tester is None
        self.tester = (
            tester
            if tester is not None
            else self._make_tester(opponent, seed, num_tests, opponent_url, opponent_model)
        )
        self._custom: dict[str, Problem] = {}
        self._custom_lock = threading.Lock()

    # ------------------------------------------------------------------ setup
    def _make_tester(
        self, opponent: str, seed: int, num_tests: int, url: str | None, model: str
    ) -> Any:
        if opponent in ("gt", "gt+mistake_book"):
            return None
        if opponent == "http":
            if not url:
                raise ValueError("opponent='http' needs opponent_url (an OpenAI-compatible API)")
            from agents.lm.http import OpenAICompatibleLM
            from agents.players.policy import TesterPolicy

            return TesterPolicy(OpenAICompatibleLM(url, model=model), num_tests=num_tests)
        from codea1_env.baselines.scripted import BoundaryTester, RandomTester, TrivialTester

        if opponent == "trivial":
            return TrivialTester(n_tests=num_tests)
        cls = BoundaryTester if opponent == "boundary" else RandomTester
        return cls(seed=seed, n_tests=num_tests, sandbox=self.referee)

    @property
    def golden(self) -> bool:
        """True when the referee scores in golden mode (``opponent="gt"``)."""
        return self.host.golden

    @property
    def mistake_book(self) -> MistakeBook:
        """The referee's mistake book."""
        return self.referee.mistake_book

    def close(self) -> None:
        """Close the tester and referee this core built (the mistake book with it). Idempotent."""
        tester, self.tester = self.tester, None
        if self._owns_tester and tester is not None and hasattr(tester, "close"):
            tester.close()
        if self._owns_referee and self.referee is not None:
            self.referee.close()
            self.referee.mistake_book.close()
            self._owns_referee = False

    def __enter__(self) -> RewardCore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ problems
    def problem(self, spec: Any, where: str = "problem") -> Problem:
        """The problem a request names.

        Args:
            spec: A problem id of the loaded source, a record of the JSONL schema (a dict, or
                its JSON text), or a Problem.
            where: The request field, for error messages.

        Raises:
            RequestError: an unknown id, a malformed record, or another type.

        """
        if isinstance(spec, Problem):
            return spec
        record = problem_record(spec, where)
        if record is not None:
            return self._custom_problem(record, where)
        if isinstance(spec, str):
            text = spec.strip()
            try:
                problem = self.source[text]
            except (KeyError, IndexError, TypeError):
                raise RequestError(
                    where, f"no problem {text!r} in source {self.source_name!r}"
                ) from None
            if not isinstance(problem, Problem):
                raise RequestError(where, f"{text!r} does not name a problem")
            return problem
        raise RequestError(
            where, f"expected a problem id or a problem record, got {type(spec).__name__}"
        )

    def _custom_problem(self, record: Mapping[str, Any], where: str) -> Problem:
        try:
            key = json.dumps(record, sort_keys=True, default=str)
        except (TypeError, ValueError):
            raise RequestError(where, "a problem record must be JSON data") from None
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
        with self._custom_lock:
            cached = self._custom.get(digest)
        if cached is not None:
            return cached
        problem = problem_of_record(record, where)
        with self._custom_lock:
            if len(self._custom) >= 4096:
                self._custom.clear()
            return self._custom.setdefault(digest, problem)

    # ------------------------------------------------------------------ scoring
    def score(self, rows: Sequence[Row]) -> list[PairResult | GridResult]:
        """Score rows with one frozen-tester call and one referee call.

        Returns:
            One result per row: a :class:`PairResult` for a coder or tester row, a
            :class:`GridResult` for a grid row. Never raises because of the rows' texts.

        """
        if not rows:
            return []
        slots = [self._play(row) for row in rows]
        self._frozen_tests([s for s in slots if s.extra.get("needs_tests")])
        items: dict[tuple[str, str], int] = {}
        grid: list[list[list[Duel]]] = []
        for slot in slots:
            problem = slot.duels[0][0].problem
            key = (problem.task_id, _problem_key(problem))
            if key not in items:
                items[key] = len(grid)
                grid.append([])
            slot.item = items[key]
            slot.first_code = len(grid[slot.item])
            canonical = grid[slot.item][0][0].problem if grid[slot.item] else problem
            for row in slot.duels:
                for duel in row:
                    duel.problem = canonical
            grid[slot.item].extend(slot.duels)
        judgements = judge_grid(self.referee, grid, update_book=self.update_book)
        return [self._result(row, slot, judgements[slot.item]) for row, slot in zip(rows, slots)]

    def _play(self, row: Row) -> _Slot:
        limit = self.max_action_chars
        if isinstance(row, CoderRow):
            duel = Duel(row.problem)
            self.host.play_code(duel, row.answer, limit)  # golden mode: its fixed opponent too
            slot = _Slot([[duel]])
            if duel.finished:  # the host played the golden mode's fixed opponent
                return slot
            if self.tester is None:  # gt+mistake_book: the GT tests are the opponent's suite
                duel.play_tests(gt_suite(row.problem), limit)
            else:
                slot.extra["needs_tests"] = True
            return slot
        if isinstance(row, TesterRow):
            duel = Duel(row.problem)
            duel.play_code(row.code, limit)
            duel.play_tests(row.tests, limit)
            return _Slot([[duel]])
        if isinstance(row, GridRow):
            if not row.codes:
                raise RequestError("codes", "at least one code is needed")
            if len(row.suites) != len(row.codes):
                raise RequestError(
                    "suites", f"{len(row.codes)} codes but {len(row.suites)} suite lists"
                )
            duels: list[list[Duel]] = []
            for code, suites in zip(row.codes, row.suites):
                base = Duel(row.problem)
                base.play_code(code, limit)
                if not suites:
                    duels.append([base])
                    continue
                branches = [base] + [base.branch() for _ in suites[1:]]
                for duel, tests in zip(branches, suites):
                    duel.play_tests(tests, limit)
                duels.append(branches)
            return _Slot(duels)
        raise TypeError(f"cannot score a {type(row).__name__}")

    def _frozen_tests(self, slots: list[_Slot]) -> None:
        """The frozen tester writes one suite per coder row: one batched ``act`` call."""
        if not slots:
            return
        duels = [slot.duels[0][0] for slot in slots]
        observations = [observe(duel) for duel in duels]
        infos = [duel_info(duel) for duel in duels]
        with self._tester_lock:
            if self.tester is None:
                raise RuntimeError("RewardCore is closed")
            answers = self.tester.act(observations, infos)
        for duel, answer in zip(duels, answers, strict=True):
            duel.play_tests(answer, self.max_action_chars)

    def _result(self, row: Row, slot: _Slot, j: Judgement) -> PairResult | GridResult:
        first = slot.first_code
        if not isinstance(row, GridRow):
            return self._pair(slot.duels[0][0], j, first, 0)
        coder_rewards: list[float] = []
        pairs: list[tuple[PairResult, ...]] = []
        code_infos: list[dict[str, Any] | None] = []
        for offset, duels in enumerate(slot.duels):
            code = first + offset
            if duels[0].finished and j.suites[code]:
                scored = tuple(self._pair(d, j, code, s) for s, d in enumerate(duels))
                pairs.append(scored)
                code_infos.append(None)
                reward = 0.0 if duels[0].reasons["coder"] else float(j.coder_rewards[code])
            else:
                pairs.append(())
                outcome = pair_outcome(duels[0], j, code, None, golden=self.golden)
                outcome.reasons["tester"] = "golden_mode" if self.golden else "no_suite"
                reward = outcome.rewards["coder"]
                code_infos.append(outcome.info())
            coder_rewards.append(reward)
        return GridResult(
            coder_rewards=tuple(coder_rewards),
            gt_pass_rates=tuple(float(j.gt_pass_rates[first + i]) for i in range(len(slot.duels))),
            pairs=tuple(pairs),
            code_infos=tuple(code_infos),
        )

    def _pair(self, duel: Duel, j: Judgement, code: int, suite: int) -> PairResult:
        """One pair's rewards and info, as :func:`~codea1_env.game.duel.score_duels` reports."""
        outcome = pair_outcome(duel, j, code, suite, golden=self.golden)
        if self.golden:
            outcome.reasons["tester"] = "golden_mode"
        coder, tester = outcome.rewards["coder"], outcome.rewards["tester"]
        duel.outcome = outcome
        return PairResult(coder, tester, outcome.info(), duel.tests_text)


def problem_record(spec: Any, where: str) -> Mapping[str, Any] | None:
    """``spec`` as a problem record if it is one (a mapping, or JSON text of an object), else None.

    Raises:
        RequestError: JSON text that does not decode, naming ``where``.

    """
    if isinstance(spec, Mapping):
        return spec
    if isinstance(spec, str) and spec.strip().startswith("{"):
        try:
            record = decode_json(spec.strip())
        except json.JSONDecodeError as exc:
            raise RequestError(where, f"not valid JSON: {exc.msg}") from None
        if isinstance(record, Mapping):
            return record
    return None


def problem_of_record(record: Mapping[str, Any], where: str) -> Problem:
    """The problem a record of the JSONL schema describes (checked as a problem file's line is).

    Raises:
        RequestError: a malformed record, naming ``where`` and the field.

    """
    try:
        return problem_from_dict(record, where=where)
    except ProblemFormatError as exc:
        name = f"{where}.{exc.field}" if exc.field else where
        raise RequestError(name, exc.message) from None


class SharedCores:
    """One :class:`RewardCore` per distinct setting in a process, built on first use.

    What the adapters whose host builds many reward functions or envs per process (verl's
    reward workers, SkyRL's env workers) keep, so that they share one referee, sandbox and
    mistake book per setting. A setting is a mapping of :class:`RewardCore`'s keywords plus
    ``source``; values that are not plain scalars (a :class:`Sandbox` instance) are told apart
    by identity.
    """

    def __init__(self) -> None:
        self._cores: dict[tuple[Any, ...], RewardCore] = {}
        self._lock = threading.Lock()

    def get(self, setting: Mapping[str, Any]) -> RewardCore:
        """The core of ``setting`` (built now when it is the first of its kind)."""
        key = tuple(sorted((name, _setting_key(value)) for name, value in setting.items()))
        with self._lock:
            core = self._cores.get(key)
            if core is None:
                keywords = dict(setting)
                source = keywords.pop("source", "bank")
                core = self._cores[key] = RewardCore(source, **keywords)
            return core

    def close(self) -> None:
        """Close every core built so far (their sandboxes and mistake books); idempotent."""
        with self._lock:
            cores = list(self._cores.values())
            self._cores.clear()
        for core in cores:
            core.close()


def _setting_key(value: Any) -> Any:
    """A hashable stand-in for one setting's value (identity for anything but a scalar)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return ("object", type(value).__name__, id(value))


def _problem_key(problem: Problem) -> str:
    """A digest of the problem's record: rows group by (task_id, record)."""
    record = json.dumps(problem_to_dict(problem), sort_keys=True, default=str)
    return hashlib.sha256(record.encode("utf-8", "surrogatepass")).hexdigest()
