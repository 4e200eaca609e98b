"""Scripted (model-free) baseline policies for both players of the duel.

Every policy follows the batched :class:`Policy` protocol shared with the LM policies: it maps a
batch of observations (and the matching ``info`` dicts) to one text action each.

**Privileged access.** These policies read ``infos[i]["problem"]``, the full
:class:`~codea1_env.problems.problem.Problem` with its ground-truth (GT) solution and GT tests,
which a real player never sees. That is what makes them oracles and baselines: they bound what a
player can reach (:class:`GroundTruthCoder`), supply plausible wrong candidates
(:class:`MutantCoder`), and give reference testers of known strength (:class:`BoundaryTester`,
:class:`RandomTester`, :class:`TrivialTester`). Calling ``act`` without ``infos`` raises
:class:`ValueError`.

**Where code runs.** The generating testers need outputs for the inputs they invent. With
``oracle=True`` they are the GT's outputs; with ``oracle=False`` the candidate's own outputs (a
weak tester that only writes tests its own reading of the code passes). Both programs are
untrusted text (a problem's GT may come from a user's ``reset(options={"problem": ...})`` or a
``jsonl:`` file), so they run only in a sandbox, in one batched call per ``act``: the ``sandbox``
handed in; the sandbox of a :class:`~codea1_env.scoring.referee.Referee` handed in as ``sandbox=``
(pass ``env.unwrapped.referee`` to share the env's sandbox); or, when none is given, a local sandbox
the tester starts on first use and stops in ``close()``. When that one cannot start, ``act`` raises
:class:`~codea1_env.sandbox.base.SandboxUnavailable` saying why. Nothing is executed in this
process: the host parses code with :mod:`ast` (and :class:`MutantCoder` compiles its mutants to
check their syntax), and compares plain values. Inputs on which the program fails or times out
are dropped.

Answers are formatted as the parsers expect: code and assert lines inside a ```` ```python ````
fence; stdio tests as fenced ```` ```input ```` / ```` ```output ```` block pairs.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from codea1_env.baselines.inputs import LARGE_INT as LARGE_INT
from codea1_env.baselines.inputs import LARGE_LEN as LARGE_LEN
from codea1_env.baselines.inputs import (
    ScriptedCall,
    boundary_calls,
    input_hints,
    perturbed_inputs,
    random_calls,
    random_inputs,
    unique_values,
)
from codea1_env.baselines.runner import RUN_FAILED, ProgramRun, ProgramRunner
from codea1_env.game.policy import Policy
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import Limits, Sandbox
from codea1_env.sandbox.worker.plain import to_source
from codea1_env.scoring.extraction import extract_code
from codea1_env.scoring.mutation import Mutant, MutantCache
from codea1_env.scoring.referee import Referee

__all__ = [
    "BoundaryTester",
    "GroundTruthCoder",
    "MutantCoder",
    "Policy",
    "RandomTester",
    "RoleRouter",
    "TrivialTester",
]


def _fenced(body: str, language: str = "python") -> str:
    return f"```{language}\n{body}\n```" if body else f"```{language}\n```"


def _problems(
    observations: Sequence[Mapping[str, Any]], infos: Sequence[Mapping[str, Any]] | None
) -> list[Problem]:
    """Return ``infos[i]["problem"]`` for every observation, or explain what is missing."""
    if infos is None or len(infos) != len(observations):
        raise ValueError(
            "scripted policies need one info per observation carrying info['problem'] "
            "(privileged access to the ground truth)"
        )
    problems = []
    for i, info in enumerate(infos):
        problem = info.get("problem")
        if not isinstance(problem, Problem):
            raise ValueError(f"infos[{i}]['problem'] must be a Problem, got {type(problem)}")
        problems.append(problem)
    return problems


# --- coders --------------------------------------------------------------------------------------


class GroundTruthCoder:
    """Answer every problem with its GT program in a ```` ```python ```` fence (an upper bound)."""

    def act(
        self,
        observations: Sequence[Mapping[str, Any]],
        infos: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """Return the fenced GT program of each problem."""
        return [_fenced(p.gt_program) for p in _problems(observations, infos)]


class MutantCoder:
    """Answer with the GT program or, with probability ``p_mutant``, a random mutant of it.

    Mutants come from :mod:`codea1_env.scoring.mutation` and are cached per GT program. When the GT
    has no mutant (for example a stdio program without functions), the GT is answered.

    Args:
        p_mutant: Probability of answering a mutant, in ``[0, 1]``.
        seed: Seed of the policy's numpy Generator.
        operators: Mutation operator names (None: all).
        cache: A shared cache; a private one is created when None.

    Attributes:
        last_mutants: For the last ``act`` batch, the mutant answered per observation (None where
            the GT was answered).

    """

    def __init__(
        self,
        p_mutant: float = 0.5,
        seed: int = 0,
        operators: Sequence[str] | None = None,
        cache: MutantCache | None = None,
    ) -> None:
        if not 0.0 <= p_mutant <= 1.0:
            raise ValueError(f"p_mutant must be in [0, 1], got {p_mutant}")
        self.p_mutant = p_mutant
        self.operators = None if operators is None else tuple(operators)
        MutantCache.key("", self.operators)  # validates the operator names now
        self.cache = cache if cache is not None else MutantCache()
        self.rng = np.random.default_rng(seed)
        self.last_mutants: list[Mutant | None] = []

    def act(
        self,
        observations: Sequence[Mapping[str, Any]],
        infos: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """Return the fenced GT or mutant program for each problem."""
        answers: list[str] = []
        self.last_mutants = []
        for problem in _problems(observations, infos):
            chosen: Mutant | None = None
            if self.rng.random() < self.p_mutant:
                mutants = self.cache.get(problem.gt_program, operators=self.operators)
                if mutants:
                    chosen = mutants[int(self.rng.integers(len(mutants)))]
            self.last_mutants.append(chosen)
            answers.append(_fenced(chosen.source if chosen else problem.gt_program))
        return answers


class RoleRouter:
    """Route each observation to the coder or the tester policy by ``observation["role"]``.

    One object can then drive both seats of ``CodeTestDuel-v0`` (role 0 = coder, 1 = tester);
    each sub-policy receives its observations as one batch.
    """

    def __init__(self, coder: Policy, tester: Policy) -> None:
        self.coder = coder
        self.tester = tester

    def close(self) -> None:
        """Close both sub-policies that have a ``close`` (the sandboxes they started)."""
        for policy in (self.coder, self.tester):
            close = getattr(policy, "close", None)
            if callable(close):
                close()

    def act(
        self,
        observations: Sequence[Mapping[str, Any]],
        infos: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """Return each observation's action from the policy of its role."""
        unknown = [i for i, obs in enumerate(observations) if obs.get("role") not in (0, 1)]
        if unknown:
            raise ValueError(f"observations {unknown} have no role 0 (coder) or 1 (tester)")
        answers = [""] * len(observations)
        for role, policy in ((0, self.coder), (1, self.tester)):
            idx = [i for i, obs in enumerate(observations) if obs.get("role") == role]
            if idx:
                sub_infos = None if infos is None else [infos[i] for i in idx]
                for i, answer in zip(
                    idx, policy.act([observations[i] for i in idx], sub_infos), strict=True
                ):
                    answers[i] = answer
        return answers


# --- testers -------------------------------------------------------------------------------------


def _asserts(entry_point: str, calls: Sequence[ScriptedCall], values: Sequence[Any]) -> list[str]:
    lines = []
    for call, value in zip(calls, values, strict=True):
        try:
            lines.append(f"assert {call.source(entry_point)} == {to_source(value)}")
        except ValueError:  # an int too long to print
            continue
    return lines


def _io_blocks(inputs: Sequence[str], outputs: Sequence[str]) -> str:
    """Format stdio tests as fenced ``input``/``output`` block pairs, one pair per test."""
    blocks = []
    for text, output in zip(inputs, outputs, strict=True):
        given = _fenced(text.rstrip("\n"), "input")
        expected = _fenced(output.rstrip("\n"), "output")
        blocks.append(f"{given}\n{expected}")
    return "\n\n".join(blocks)


class _GeneratingTester(abc.ABC):
    """Shared machinery: propose inputs, get expected outputs, keep the ones that ran."""

    boundary_share = 0.75
    """Share of the ``n_tests`` slots given to boundary inputs; the rest are random."""

    def __init__(
        self,
        seed: int = 0,
        n_tests: int = 8,
        sandbox: Sandbox | Referee | None = None,
        oracle: bool = True,
        timeout_s: float = 0.25,
        limits: Limits | None = None,
    ) -> None:
        if n_tests < 1:
            raise ValueError(f"n_tests must be >= 1, got {n_tests}")
        self.n_tests = n_tests
        self.oracle = oracle
        self.rng = np.random.default_rng(seed)
        self.runner = ProgramRunner(
            sandbox, limits or Limits(call_timeout_s=timeout_s), owner=type(self).__name__
        )

    def close(self) -> None:
        """Stop the sandbox this tester started itself, if any (a handed-in one is left alone)."""
        self.runner.close()

    def __enter__(self) -> _GeneratingTester:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def act(
        self,
        observations: Sequence[Mapping[str, Any]],
        infos: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """Return a fenced test suite for each observation's candidate code."""
        problems = _problems(observations, infos)
        n_preferred = round(self.n_tests * self.boundary_share)
        plans: list[tuple[ProgramRun, list[Any], int]] = []
        for obs, problem in zip(observations, problems, strict=True):
            code = str(obs.get("code", ""))
            stdio = problem.kind == "stdio"
            if stdio:
                preferred, extra = self._stdio_inputs(problem, n_preferred)
                inputs = preferred + extra
            else:
                preferred, extra = self._calls(problem, code, n_preferred)
                inputs = [c.source(problem.entry_point) for c in preferred + extra]
            program = problem.gt_program if self.oracle else extract_code(code)
            plans.append(
                (ProgramRun(program, stdio, tuple(inputs)), preferred + extra, len(preferred))
            )
        self.runner.start([run for run, _, _ in plans])
        answers = []
        for problem, (run, items, n_first) in zip(problems, plans, strict=True):
            chosen = self._select(run, n_first, n_preferred)
            picked = [items[i] for i, _ in chosen]
            outputs = [value for _, value in chosen]
            if problem.kind == "stdio":
                answers.append(_io_blocks(picked, outputs))
            else:
                answers.append(_fenced("\n".join(_asserts(problem.entry_point, picked, outputs))))
        return answers

    def _select(self, run: ProgramRun, n_first: int, n_preferred: int) -> list[tuple[int, Any]]:
        """Pick inputs that ran: up to ``n_preferred`` of the first ``n_first``, then any.

        Inputs are tried in order and only until the suite is full.
        """
        chosen: dict[int, Any] = {}

        def take(indices: range, limit: int) -> None:
            for i in indices:
                if len(chosen) >= limit:
                    return
                if i not in chosen:
                    value = self.runner.value(run, run.inputs[i])
                    if value is not RUN_FAILED:
                        chosen[i] = value

        take(range(n_first), n_preferred)
        take(range(n_first, len(run.inputs)), self.n_tests)
        take(range(n_first), self.n_tests)
        return sorted(chosen.items())

    @abc.abstractmethod
    def _calls(self, problem: Problem, code: str, n_preferred: int) -> tuple[list[Any], list[Any]]:
        """Return (preferred, extra) candidate calls, deduplicated, pools larger than needed."""

    @abc.abstractmethod
    def _stdio_inputs(self, problem: Problem, n_preferred: int) -> tuple[list[Any], list[Any]]:
        """Return (preferred, extra) candidate stdin inputs."""

    @staticmethod
    def _dedup_calls(
        problem: Problem, calls: Sequence[ScriptedCall], limit: int, seen: set[str] | None = None
    ) -> list[ScriptedCall]:
        """Return the first ``limit`` calls whose source is not in ``seen`` (which is updated)."""
        seen = set() if seen is None else seen
        out: list[ScriptedCall] = []
        for call in calls:
            try:
                key = call.source(problem.entry_point)
            except ValueError:
                continue
            if key not in seen:
                seen.add(key)
                out.append(call)
            if len(out) >= limit:
                break
        return out


class BoundaryTester(_GeneratingTester):
    """White-box tester: boundary inputs read off the candidate code, plus a few random ones.

    Function problems: the argument shapes come from the literal calls in the GT tests' asserts
    (or, failing that, the entry point's annotated signature). Boundary inputs vary one argument
    of the first example at a time: for integers ``c - 1``, ``c``, ``c + 1`` for each integer
    constant ``c`` in the candidate's comparisons, then ``0``, ``-1``, the neighbours of the
    integers in the GT tests' arguments and large values; for strings and lists empty, single
    element, lengths next to constants compared with ``len(...)`` and long ones. A quarter of the
    slots go to random inputs shaped like the GT tests' arguments. Each answer holds up to
    ``n_tests`` ``assert entry(args) == expected`` lines in a ```` ```python ```` fence.

    Stdio problems: the GT io pairs' inputs, then copies with one integer token shifted by +-1,
    written as fenced ```` ```input ```` / ```` ```output ```` block pairs.

    Args:
        seed: Seed of the policy's numpy Generator.
        n_tests: Most tests per answer (>= 1).
        sandbox: Where the programs run: a :class:`~codea1_env.sandbox.base.Sandbox` (left
            open by :meth:`close`), a :class:`~codea1_env.scoring.referee.Referee` whose sandbox is
            shared (``env.unwrapped.referee``), or None to start a local sandbox on first use
            (stopped by :meth:`close`). See the module docstring.
        oracle: Expected values from the GT (True) or from the candidate itself (False).
        timeout_s: Per-call deadline in the sandbox when ``limits`` is None.
        limits: Sandbox limits (default: :class:`Limits` with ``call_timeout_s=timeout_s``).

    """

    def _calls(self, problem: Problem, code: str, n_preferred: int) -> tuple[list[Any], list[Any]]:
        hints = input_hints(problem, code)
        n_random = max(self.n_tests - n_preferred, 1)
        seen: set[str] = set()
        boundary = self._dedup_calls(problem, boundary_calls(hints), 3 * self.n_tests, seen)
        randoms = random_calls(hints, self.rng, 6 * n_random)
        return boundary, self._dedup_calls(problem, randoms, 3 * n_random, seen)

    def _stdio_inputs(self, problem: Problem, n_preferred: int) -> tuple[list[Any], list[Any]]:
        originals = [pair.input for pair in problem.io_pairs]
        shifted = [s for text in originals for s in perturbed_inputs(text, (1, -1))]
        pool = unique_values(originals + shifted)[: 3 * self.n_tests]
        return pool[:n_preferred], pool[n_preferred:]


class RandomTester(_GeneratingTester):
    """Black-box tester: random inputs shaped like the GT tests' arguments, nothing else.

    Takes the same arguments as :class:`BoundaryTester`. Stdio problems: copies of the GT inputs
    with one integer token replaced by a random nearby value.
    """

    boundary_share = 0.0

    def _calls(self, problem: Problem, code: str, n_preferred: int) -> tuple[list[Any], list[Any]]:
        hints = input_hints(problem, "")
        calls = random_calls(hints, self.rng, 6 * self.n_tests)
        return [], self._dedup_calls(problem, calls, 3 * self.n_tests)

    def _stdio_inputs(self, problem: Problem, n_preferred: int) -> tuple[list[Any], list[Any]]:
        per_input = max(1, (3 * self.n_tests) // max(1, len(problem.io_pairs)))
        pool = [
            s for pair in problem.io_pairs for s in random_inputs(pair.input, self.rng, per_input)
        ]
        return [], unique_values(pool)[: 3 * self.n_tests]


class TrivialTester:
    """Lazy/colluding baseline: copy the GT tests verbatim (the first ``n_tests`` of them).

    Function problems: the GT assert lines in a ```` ```python ```` fence. Stdio problems: the
    GT io pairs as fenced ```` ```input ```` / ```` ```output ```` blocks.

    Args:
        n_tests: Most tests copied (None: all).

    """

    def __init__(self, n_tests: int | None = 8) -> None:
        if n_tests is not None and n_tests < 1:
            raise ValueError(f"n_tests must be >= 1 or None, got {n_tests}")
        self.n_tests = n_tests

    def act(
        self,
        observations: Sequence[Mapping[str, Any]],
        infos: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """Return the GT tests of each problem, formatted as a tester's answer."""
        answers = []
        for problem in _problems(observations, infos):
            if problem.kind == "stdio":
                pairs = problem.io_pairs[: self.n_tests]
                answers.append(_io_blocks([p.input for p in pairs], [p.output for p in pairs]))
            else:
                answers.append(_fenced("\n".join(problem.tests[: self.n_tests])))
        return answers
