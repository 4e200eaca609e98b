"""Score the same duels with the authors' released reward code and with codea1; count agreements.

The authors' reward code (ZJU-REAL/Code-A1: ``code/rl/reward.py``, the ``MistakeBook`` class of
``code/rl/trainer_a1.py``) is loaded from a checkout you point to; nothing of it is copied into
codea1. It is run the way their ``acg_llm`` reward manager runs it, step after step:
``extract_code_from_response`` and ``extract_testcase_from_response`` read the texts, the book's
``get_attack_testcases`` gives each problem's replayed tests, ``evaluate`` builds one program per
code (the GT, every suite and the candidate inlined), ``compute_dual_model_reward`` scores each
(code, suite) pair and ``update_mistake_book`` updates the book. Their programs are sent to
SandboxFusion by ``sandbox_fusion.run_concurrent``; here a stand-in module runs each of them in
codea1's own sandbox instead (stdio mode: the program as ``__main__``, its stdout returned; a
10-second wall-clock limit per program, their ``run_timeout``), so no text a model or a data file
wrote runs outside the sandbox. Their harness code (parsing with ``ast``, string handling,
arithmetic) runs in this process, as a library would.

The same duels go through codea1's :class:`~codea1_env.scoring.referee.Referee` with the options
that restore the authors' behaviour where codea1 has one (``candidate_context="authors"``, the
book's ``tie_order="authors"``, wall-clock timeouts), each step after the other with both books
carried over. The script reports, per step and in all, how many tester rewards, coder pair
rewards, code rewards and books' top 8 agree, and lists every duel that does not with both
sides' figures, for a reader to match against docs/deviations.md.

The duels: HumanEval problems (those whose 64 duels finish within short limits, as
``benchmarks/bench_referee.py`` screens them), 8 codes per problem (the GT and AST mutants; with
``--perturb``, some made invalid: a syntax error, a top level that raises) and 8 suites per code
from the scripted testers; with ``--perturb``, suites are edited as a Test LLM's often are: an
expectation made wrong, a test repeated, a call the GT rejects, a non-printable character in the
text around the code block, extra tests past the eighth.

Usage::

    git clone https://github.com/ZJU-REAL/Code-A1 /path/to/Code-A1
    python scripts/compare_authors.py --authors-repo /path/to/Code-A1 --problems 24 --steps 3 \
        --perturb --out compare.json

Exit status 0 when every difference is explained by a listed deviation (or there is none), 1
when some difference is not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import enum
import importlib.util
import json
import os
import sys
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from benchmarks.bench_referee import Duels, make_workload
from codea1_env.atomic import write_text_atomic
from codea1_env.mistake_book import InMemoryMistakeBook
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import CallStatus, Job, Limits, Sandbox
from codea1_env.sandbox.local import LocalSandbox
from codea1_env.scoring.referee import Referee
from codea1_env.scoring.rewards import RewardConfig

RUN_TIMEOUT_S = 10.0  # the authors' run_timeout for every program
TOLERANCE = 1e-9
K = 8


# ------------------------------------------------------------------ the authors' code, loaded
class _RunStatus(str, enum.Enum):
    Success = "Success"
    Failed = "Failed"
    SandboxError = "SandboxError"


class _CommandRunStatus(str, enum.Enum):
    Finished = "Finished"
    Error = "Error"
    TimeLimitExceeded = "TimeLimitExceeded"


@dataclass
class _CommandRunResult:
    status: _CommandRunStatus | None = None
    stdout: str = ""
    stderr: str = ""


@dataclass
class _RunCodeRequest:
    code: str
    language: str = "python"
    run_timeout: float = RUN_TIMEOUT_S


@dataclass
class _RunCodeResponse:
    status: _RunStatus
    message: str = ""
    run_result: _CommandRunResult | None = None


class SandboxFusionStandIn:
    """What the authors' ``execute_code`` needs of ``sandbox_fusion``, on codea1's sandbox.

    ``run_concurrent(fn, args=[[index, request], ...])`` runs every request's program in one
    batched sandbox call and returns ``[(index, response), ...]``, as their ``safe_run_wrapper``
    would; ``run_code`` runs one.
    """

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.programs = 0
        self.timeouts = 0

    def module(self) -> types.ModuleType:
        module = types.ModuleType("sandbox_fusion")
        module.run_code = lambda request: self._run([request])[0]  # type: ignore[attr-defined]
        module.run_concurrent = self.run_concurrent  # type: ignore[attr-defined]
        module.RunCodeRequest = _RunCodeRequest  # type: ignore[attr-defined]
        module.RunStatus = _RunStatus  # type: ignore[attr-defined]
        module.CommandRunStatus = _CommandRunStatus  # type: ignore[attr-defined]
        module.RunCodeResponse = _RunCodeResponse  # type: ignore[attr-defined]
        return module

    def run_concurrent(self, fn: Any, args: Sequence[Sequence[Any]], concurrency: int = 1) -> Any:
        # their wrapper only calls run_code(request) and pairs the response with its index
        del fn, concurrency
        responses = self._run([request for _, request in args])
        return [(index, response) for (index, _), response in zip(args, responses)]

    def _run(self, requests: Sequence[_RunCodeRequest]) -> list[_RunCodeResponse]:
        jobs = [
            Job(
                program=request.code,
                stdin_inputs=("",),
                limits=Limits(
                    call_timeout_s=float(request.run_timeout),
                    setup_timeout_s=float(request.run_timeout),
                    cpu_time_s=float(request.run_timeout) * 2,
                    timeout_clock="wall",
                ),
            )
            for request in requests
        ]
        out = []
        for result in self.sandbox.run(jobs):
            self.programs += 1
            call = result.calls[0] if result.calls else None
            if call is not None and call.status == CallStatus.OK:
                out.append(
                    _RunCodeResponse(
                        _RunStatus.Success,
                        run_result=_CommandRunResult(_CommandRunStatus.Finished, str(call.value)),
                    )
                )
            elif call is not None and call.status == CallStatus.TIMEOUT:
                self.timeouts += 1
                out.append(
                    _RunCodeResponse(
                        _RunStatus.Failed,
                        run_result=_CommandRunResult(_CommandRunStatus.TimeLimitExceeded),
                    )
                )
            else:  # the program exited with an error: its stdout is not returned by stdio mode
                error = call.error if call is not None else result.setup_error
                out.append(
                    _RunCodeResponse(
                        _RunStatus.Failed,
                        run_result=_CommandRunResult(_CommandRunStatus.Error, "", error),
                    )
                )
        return out


def _find(repo: Path, relative: str) -> Path:
    for base in (repo / "Code-A1", repo):
        if (base / relative).is_file():
            return base / relative
    raise FileNotFoundError(f"{repo}: no {relative} (expected the ZJU-REAL/Code-A1 checkout)")


@contextlib.contextmanager
def _stand_in_modules(fusion: SandboxFusionStandIn) -> Iterator[None]:
    """``verl`` and ``sandbox_fusion`` as the reward module imports them, for its import only."""
    verl = types.ModuleType("verl")
    verl.DataProto = object  # type: ignore[attr-defined]
    workers = types.ModuleType("verl.workers")
    managers = types.ModuleType("verl.workers.reward_manager")
    managers.register = lambda name: lambda cls: cls  # type: ignore[attr-defined]
    models = types.ModuleType("sandbox_fusion.models")
    models.CommandRunResult = _CommandRunResult  # type: ignore[attr-defined]
    stand_ins = {
        "verl": verl,
        "verl.workers": workers,
        "verl.workers.reward_manager": managers,
        "sandbox_fusion": fusion.module(),
        "sandbox_fusion.models": models,
    }
    with contextlib.suppress(ImportError):
        import torch  # noqa: F401  (their module imports it; only their manager uses it)
    if "torch" not in sys.modules:
        stand_ins["torch"] = types.ModuleType("torch")
    saved = {name: sys.modules.get(name) for name in stand_ins}
    sys.modules.update(stand_ins)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def load_authors(repo: Path, fusion: SandboxFusionStandIn) -> tuple[types.ModuleType, type]:
    """Their reward module and their ``MistakeBook`` class, from a checkout of their repository.

    Only the ``MistakeBook`` class is taken from ``trainer_a1.py`` (that module imports all of
    verl); its methods use ``json``, ``os``, ``socket`` and ``typing.List``.
    """
    path = _find(repo, "code/rl/reward.py")
    spec = importlib.util.spec_from_file_location("codea1_authors_reward", path)
    assert spec is not None and spec.loader is not None
    reward = importlib.util.module_from_spec(spec)
    with _stand_in_modules(fusion):
        spec.loader.exec_module(reward)
    trainer = _find(repo, "code/rl/trainer_a1.py")
    tree = ast.parse(trainer.read_text(encoding="utf-8"), str(trainer))
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MistakeBook"]
    if not found:
        raise ValueError(f"{trainer}: no class MistakeBook")
    namespace: dict[str, Any] = {}
    exec(  # noqa: S102  (the authors' trusted harness class, not a model's text)
        "import json, os, socket\nfrom typing import List, Dict, Any\n",
        namespace,
    )
    exec(compile(ast.Module([found[0]], []), str(trainer), "exec"), namespace)  # noqa: S102
    return reward, namespace["MistakeBook"]


class AuthorsHarness:
    """The authors' ``acg_llm`` reward path, step by step, with their mistake book."""

    def __init__(self, reward: types.ModuleType, book_class: Any) -> None:
        self.r = reward
        self.book: Any = book_class.__new__(book_class)  # no load() from a directory
        self.book.mistake_book = {}
        self.book.mistake_book_dir = ""

    def step(self, duels: Duels) -> list[dict[str, Any]]:
        """Score ``duels`` as one step; returns per problem the rewards and the replayed tests."""
        code_texts = [code for _, codes, _ in duels for code in codes]
        suite_texts = [s for _, codes, suites in duels for row in suites for s in row]
        qids = [problem.task_id for problem, _, _ in duels]
        gt_codes = [problem.gt_program for problem, codes, _ in duels for _ in codes]
        n_a = len(duels[0][1])
        n_b = len(duels[0][2][0])
        codes, code_info = self.r.extract_code_from_response(code_texts)
        tests, test_info = self.r.extract_testcase_from_response(suite_texts)
        attack = self.r.get_attack_testcases_from_mistake_book(self.book, qids, n_a)
        (
            valid_code,
            valid_tests,
            invalid,
            total,
            _gt_passed,
            _gt_total,
            _gt_msgs,
            gen_passed,
            gen_total,
            gen_msgs,
            _stdout,
            _timeouts,
            _errors,
            attack_total,
            attack_passed,
            gen_failed_tcs,
        ) = self.r.evaluate(codes, tests, gt_codes, [], attack)
        out = []
        for p in range(len(qids)):
            coder: list[list[float]] = []
            tester: list[list[float]] = []
            for c in range(n_a):
                a = p * n_a + c
                coder.append([])
                tester.append([])
                for s in range(n_b):
                    b = a * n_b + s
                    result = self.r.compute_dual_model_reward(
                        is_code_valid=valid_code[a],
                        gt_passed=-1,
                        gt_total=-1,
                        gt_failed_msgs=[],
                        valid_generated_tests=valid_tests[b],
                        invalid_count=invalid[b],
                        total_generated_count=total[b],
                        gen_passed=gen_passed[b],
                        gen_failed_msgs=gen_msgs[b],
                        test_phase="adversarial",
                        test_nonprintable_ratio=test_info["nonprintable_ratio"][b],
                        test_space_ratio=test_info["space_ratio"][b],
                        test_nonrelated_ratio=test_info["nonrelated_ratio"][b],
                        test_overlong_ratio=test_info["overlong_ratio"][b],
                        code_nonrelated_ratio=code_info["nonrelated_ratio"][a],
                        attack_gen_passed=len(attack_passed[a]) if attack_passed else 0,
                        attack_gen_total=attack_total[a] if attack_total else 0,
                    )
                    coder[-1].append(float(result["reward_a"]))
                    tester[-1].append(float(result["reward_b"]))
            out.append(
                {
                    "coder_pair": coder,
                    "tester": tester,
                    "valid_code": [bool(valid_code[p * n_a + c]) for c in range(n_a)],
                    "replayed": list(attack[p * n_a]) if attack else [],
                    "gen_total": [
                        [gen_total[(p * n_a + c) * n_b + s] for s in range(n_b)] for c in range(n_a)
                    ],
                    "gen_passed": [
                        [gen_passed[(p * n_a + c) * n_b + s] for s in range(n_b)]
                        for c in range(n_a)
                    ],
                }
            )
        self.r.update_mistake_book(
            self.book,
            question_ids=qids,
            n_samples_a=n_a,
            n_samples_b=n_b,
            generated_code_list=codes,
            is_code_valid_list=valid_code,
            attack_gen_total=attack_total,
            attack_gen_passed_tcs=attack_passed,
            gen_adv_total_phase2=gen_total,
            gen_adv_passed_phase2=gen_passed,
            gen_failed_tcs_phase2=gen_failed_tcs,
        )
        return out

    def golden(self, duels: Duels) -> list[list[float]]:
        """Golden mode, as their ``acg_gt`` manager scores it: per problem, each code's reward."""
        code_texts = [code for _, codes, _ in duels for code in codes]
        gt_codes = [problem.gt_program for problem, codes, _ in duels for _ in codes]
        gt_tests = [list(problem.tests) for problem, codes, _ in duels for _ in codes]
        codes, code_info = self.r.extract_code_from_response(code_texts)
        (valid_code, _, _, _, gt_passed, gt_total, gt_msgs, *_rest) = self.r.evaluate(
            codes, [], gt_codes, gt_tests
        )
        rewards = [
            float(
                self.r.compute_dual_model_reward(
                    is_code_valid=valid_code[a],
                    gt_passed=gt_passed[a],
                    gt_total=gt_total[a],
                    gt_failed_msgs=gt_msgs[a],
                    valid_generated_tests=[],
                    invalid_count=0,
                    total_generated_count=0,
                    gen_passed=0,
                    gen_failed_msgs=[],
                    test_phase="comprehensive",
                    code_nonrelated_ratio=code_info["nonrelated_ratio"][a],
                )["reward_a"]
            )
            for a in range(len(codes))
        ]
        n_a = len(duels[0][1])
        return [rewards[p * n_a : (p + 1) * n_a] for p in range(len(duels))]

    def entries(self, qid: str) -> list[tuple[str, int]]:
        """Every entry of the problem as (call, frequency), in stored order."""
        stored = self.book.mistake_book.get(qid, {}).get("attack_testcases", [])
        return [(_call_of(e["testcase"]), int(e["frequency"])) for e in stored]

    def top(self, qid: str) -> list[tuple[str, int]]:
        """The problem's top 8 as (call, frequency), without sorting the stored list (a read)."""
        entries = list(self.book.mistake_book.get(qid, {}).get("attack_testcases", []))
        entries = sorted(entries, key=lambda e: e.get("frequency", 0), reverse=True)[:K]
        return [(_call_of(e["testcase"]), int(e["frequency"])) for e in entries]


def _call_of(assert_text: str) -> str:
    node = ast.parse(assert_text).body[0]
    assert isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)
    return ast.unparse(node.test.left)


# ------------------------------------------------------------------ the duels
SUITE_EDITS = ("wrong", "repeat", "gt-error", "extra", "penalty")
"""How ``--perturb`` edits a suite: an expectation made wrong (kept with the GT value, invalid),
a test repeated (a duplicate), a call the GT rejects (no arguments: invalid, not kept), the tests
written a second time with each call's first argument as ``(x,)[0]`` (more than 8 kept tests;
deviation 24 where they fail), non-printable characters in the text around the block (the
tester's penalty)."""

CODE_EDITS = ("syntax", "raises")
"""How ``--perturb`` edits a code: a syntax error; a top level that raises."""


def _perturb_suite(text: str, problem: Problem, kind: str, rng: np.random.Generator) -> str:
    """A scripted suite edited as a Test LLM's text often is (see :data:`SUITE_EDITS`)."""
    lines = [ln for ln in text.splitlines() if ln.startswith("assert ")]
    if not lines:
        return text
    i = int(rng.integers(len(lines)))
    if kind == "wrong":
        lines[i] = f"{lines[i].split(' == ', 1)[0]} == 'wrong'"
    elif kind == "repeat":
        lines.insert(i + 1, lines[i])
    elif kind == "gt-error":
        lines.insert(i, f"assert {problem.entry_point}() == 0")
    elif kind == "extra":
        lines = lines + [_first_argument_wrapped(ln) for ln in lines]
    fenced = "```python\n" + "\n".join(lines) + "\n```"
    if kind == "penalty":
        return f"Tests für {problem.entry_point} — edge cases:\n{fenced}"
    return fenced


def _first_argument_wrapped(line: str) -> str:
    """``assert f(x, y) == z`` as ``assert f((x,)[0], y) == z``: the same input, not a literal."""
    node = ast.parse(line).body[0]
    if not (
        isinstance(node, ast.Assert)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Call)
        and node.test.left.args
    ):
        return line
    first = node.test.left.args[0]
    node.test.left.args[0] = ast.Subscript(
        ast.Tuple([first], ast.Load()), ast.Constant(0), ast.Load()
    )
    return ast.unparse(node)


def _perturb_code(problem: Problem, kind: str) -> str:
    if kind == "syntax":
        return f"```python\n{problem.gt_program}\n    return (\n```"
    return f"```python\n{problem.gt_program}\nraise RuntimeError('top level')\n```"


def perturb(duels: Duels, kinds: Sequence[str], seed: int) -> Duels:
    """Half the suites edited (each by one of ``kinds``' suite edits, drawn at random); in
    every third problem, the last code edited by one of ``kinds``' code edits."""
    rng = np.random.default_rng(seed)
    suite_kinds = [k for k in kinds if k in SUITE_EDITS]
    code_kinds = [k for k in kinds if k in CODE_EDITS]
    out: Duels = []
    for p, (problem, codes, suites) in enumerate(duels):
        codes = list(codes)
        if code_kinds and p % 3 == 0:
            codes[-1] = _perturb_code(problem, code_kinds[(p // 3) % len(code_kinds)])
        rows = [
            [
                _perturb_suite(text, problem, suite_kinds[int(rng.integers(len(suite_kinds)))], rng)
                if suite_kinds and (c + s) % 2
                else text
                for s, text in enumerate(row)
            ]
            for c, row in enumerate(suites)
        ]
        out.append((problem, codes, rows))
    return out


# ------------------------------------------------------------------ comparing
def _ours_top(book: InMemoryMistakeBook, qid: str) -> list[tuple[str, int]]:
    return [(entry.call, int(entry.frequency)) for entry in book.top(qid, K)]


def _ours_all(book: InMemoryMistakeBook, qid: str) -> list[tuple[str, int]]:
    return [(entry.call, int(entry.frequency)) for entry in book.entries(qid)]


def marker_passes(passed: Sequence[bool]) -> int:
    """How many kept tests the authors' harness reads as passed, given each test's true verdict.

    Their harness looks for the marker ``__GEN_PASS__{suite}_{j}`` anywhere in the program's
    stdout, so test ``j`` reads as passed when any test ``k`` whose number starts with ``j``'s
    digits passed (test 1 when test 10..19 did): with 11 or more kept tests in a suite, a failed
    test can read as passed (deviation 1 of docs/deviations.md: verdicts read from markers).
    """
    return sum(
        any(passed[k] and str(k).startswith(str(j)) for k in range(len(passed)))
        for j in range(len(passed))
    )


SIZE_LIMITS = {"too_long", "too_many", "cut_off"}


_KEY_PROGRAM = """import json
def _key(*args, **kwargs):
    return repr((args, sorted(kwargs.items())))
out = []
for expression in json.loads({expressions}):
    try:
        out.append(eval(expression))
    except BaseException:
        out.append(None)
print(json.dumps(out))
"""


def evaluated_keys(fusion: SandboxFusionStandIn, calls: Sequence[str]) -> dict[str, str]:
    """Each call's key with its arguments evaluated: ``name`` and the repr of the values.

    The authors' book keys a test by its evaluated input (deviation 24); two written calls with
    equal arguments (``add(3, 4)``, ``add((3,)[0], 4)``) get the same key. The arguments are test
    text, so they are evaluated in the sandbox (one program for all the calls); a call whose
    arguments raise, or a program that fails, keys as written.
    """
    probes: dict[str, tuple[str, str]] = {}
    for call in calls:
        node = ast.parse(call, mode="eval").body
        assert isinstance(node, ast.Call)
        probe = ast.Call(func=ast.Name("_key", ast.Load()), args=node.args, keywords=node.keywords)
        probes[call] = (ast.unparse(node.func), ast.unparse(probe))
    if not probes:
        return {}
    expressions = json.dumps(json.dumps([probe for _, probe in probes.values()]))
    response = fusion._run([_RunCodeRequest(code=_KEY_PROGRAM.format(expressions=expressions))])[0]
    values: list[str | None] = [None] * len(probes)
    if response.status == _RunStatus.Success and response.run_result is not None:
        with contextlib.suppress(ValueError):
            decoded = json.loads(response.run_result.stdout)
            if isinstance(decoded, list) and len(decoded) == len(probes):
                values = decoded
    return {
        call: f"{name}{value}" if isinstance(value, str) else call
        for (call, (name, _)), value in zip(probes.items(), values)
    }


def _merged(entries: Sequence[tuple[str, int]], keys: Mapping[str, str]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for call, frequency in entries:
        merged[keys.get(call, call)] = merged.get(keys.get(call, call), 0) + frequency
    return merged


def explain_book(
    pid: str,
    ours: Sequence[tuple[str, int]],
    theirs: Sequence[tuple[str, int]],
    differed: set[str],
    fusion: SandboxFusionStandIn,
) -> str:
    """Why a problem's top entries differ, given every entry of both books for it.

    Deviation 24 explains it only when the two books differ as written but agree once each
    call's arguments are evaluated (the same evaluated input counted as often on both sides): a
    difference in the counts themselves, or in the order of equal books, is unexplained.
    """
    if pid in differed:
        return "follows an earlier difference of this problem"
    if sorted(ours) != sorted(theirs):
        keys = evaluated_keys(fusion, sorted({call for call, _ in [*ours, *theirs]}))
        if _merged(ours, keys) == _merged(theirs, keys):
            return "deviation 24: the book keys a test by its call with the arguments evaluated"
    return "unexplained"


def _explain_pair(mine: Any, their: dict[str, Any], c: int, s: int, replay_same: bool) -> str:
    sv = mine.suites[c][s]
    if SIZE_LIMITS & {reason for _, reason, _ in sv.rejected}:
        return "deviation 10: a statement past codea1's size limits is not read"
    passed = [v.passed for v in sv.verdicts]
    read_as_passed = marker_passes(passed)
    if their["gen_total"][c][s] == sv.n_kept and their["gen_passed"][c][s] == read_as_passed != sum(
        passed
    ):
        return "deviation 1: a failed test read as passed from another test's marker"
    if not replay_same:
        return "follows an earlier difference of this problem (the replayed tests differ)"
    return "unexplained"


def compare(
    duels: Duels,
    steps: int,
    batch: int,
    authors: AuthorsHarness,
    referee: Referee,
    fusion: SandboxFusionStandIn,
) -> dict[str, Any]:
    """Score ``duels`` ``steps`` times on both sides; count and explain the differences.

    ``fusion`` runs what explaining a book difference needs evaluated (:func:`explain_book`).
    """
    book: InMemoryMistakeBook = referee.mistake_book  # type: ignore[assignment]
    kinds = ("tester", "coder_pair", "coder", "valid_code", "replayed", "book_top")
    counts = {k: [0, 0] for k in kinds}
    differences: list[dict[str, Any]] = []
    explained: dict[str, int] = {}
    differed: set[str] = set()  # problems with a difference so far
    per_step = []
    values: dict[str, list[float]] = {"tester": [], "coder_pair": []}

    def tally(kind: str, same: bool) -> None:
        counts[kind][0] += int(same)
        counts[kind][1] += 1

    def note(row: dict[str, Any]) -> None:
        differences.append(row)
        explained[row["explained"]] = explained.get(row["explained"], 0) + 1
        differed.add(row["problem"])

    for step in range(steps):
        before = {k: list(v) for k, v in counts.items()}
        for start in range(0, len(duels), batch):
            chunk = duels[start : start + batch]
            replay_ours = {
                p.task_id: [c for c, _ in _ours_top(book, p.task_id)] for p, _, _ in chunk
            }
            theirs = authors.step(chunk)
            ours = referee.judge_many(chunk)
            for (problem, codes, _), mine, their in zip(chunk, ours, theirs):
                pid = problem.task_id
                replay_same = replay_ours[pid] == [_call_of(t) for t in their["replayed"]]
                tally("replayed", replay_same)
                if not replay_same:
                    note(
                        {
                            "step": step,
                            "problem": pid,
                            "replayed": {"ours": replay_ours[pid], "theirs": their["replayed"]},
                            "explained": "follows an earlier difference of this problem"
                            if pid in differed
                            else "unexplained",
                        }
                    )
                for c in range(len(codes)):
                    valid_same = mine.compiled[c] == their["valid_code"][c]
                    tally("valid_code", valid_same)
                    code_same = (
                        abs(mine.coder_rewards[c] - float(np.mean(their["coder_pair"][c])))
                        <= TOLERANCE
                    )
                    tally("coder", code_same)
                    pairs_same = all(
                        abs(sv.coder_pair_reward - their["coder_pair"][c][s]) <= TOLERANCE
                        for s, sv in enumerate(mine.suites[c])
                    )
                    if not valid_same or (not code_same and pairs_same):
                        # a code's validity, or its reward while every pair of it agrees: no
                        # deviation row explains either (a pair's difference is noted below)
                        note(
                            {
                                "step": step,
                                "problem": pid,
                                "code": c,
                                "valid_code": {
                                    "ours": mine.compiled[c],
                                    "theirs": their["valid_code"][c],
                                },
                                "coder": {
                                    "ours": mine.coder_rewards[c],
                                    "theirs": float(np.mean(their["coder_pair"][c])),
                                },
                                "explained": "follows an earlier difference of this problem"
                                if pid in differed
                                else "unexplained",
                            }
                        )
                    for s, sv in enumerate(mine.suites[c]):
                        values["tester"].append(mine.tester_rewards[c][s])
                        values["coder_pair"].append(sv.coder_pair_reward)
                        pair_gap = abs(sv.coder_pair_reward - their["coder_pair"][c][s])
                        tester_gap = abs(mine.tester_rewards[c][s] - their["tester"][c][s])
                        pair_same, tester_same = pair_gap <= TOLERANCE, tester_gap <= TOLERANCE
                        tally("coder_pair", pair_same)
                        tally("tester", tester_same)
                        if pair_same and tester_same:
                            continue
                        note(
                            {
                                "step": step,
                                "problem": pid,
                                "code": c,
                                "suite": s,
                                "explained": _explain_pair(mine, their, c, s, replay_same),
                                "ours": {
                                    "coder_pair": sv.coder_pair_reward,
                                    "tester": mine.tester_rewards[c][s],
                                    "n_kept": sv.n_kept,
                                    "passed": sum(v.passed for v in sv.verdicts),
                                    "n_invalid": sv.n_invalid,
                                    "rejected": [r[1] for r in sv.rejected],
                                    "compiled": mine.compiled[c],
                                    "code_error": mine.code_errors[c][:120],
                                },
                                "theirs": {
                                    "coder_pair": their["coder_pair"][c][s],
                                    "tester": their["tester"][c][s],
                                    "n_kept": their["gen_total"][c][s],
                                    "passed": their["gen_passed"][c][s],
                                    "valid_code": their["valid_code"][c],
                                },
                            }
                        )
            for problem, _, _ in chunk:
                pid = problem.task_id
                mine_top, their_top = _ours_top(book, pid), authors.top(pid)
                tally("book_top", mine_top == their_top)
                if mine_top != their_top:
                    note(
                        {
                            "step": step,
                            "problem": pid,
                            "book_top": {"ours": mine_top, "theirs": their_top},
                            "explained": explain_book(
                                pid, _ours_all(book, pid), authors.entries(pid), differed, fusion
                            ),
                        }
                    )
        per_step.append(
            {k: f"{counts[k][0] - before[k][0]}/{counts[k][1] - before[k][1]}" for k in counts}
        )
    return {
        "agree": {k: {"same": v[0], "compared": v[1]} for k, v in counts.items()},
        "per_step": per_step,
        "explained": explained,
        "differences": differences,
        "rewards_seen": {
            k: {
                "mean": round(float(np.mean(v)), 4),
                "distinct": len(set(round(x, 9) for x in v)),
                "zero_share": round(sum(x == 0 for x in v) / max(1, len(v)), 4),
            }
            for k, v in values.items()
        },
        "book_entries_at_end": sum(len(book.top(p.task_id, 10**6)) for p, _, _ in duels),
    }


def compare_golden(
    duels: Duels, batch: int, authors: AuthorsHarness, referee: Referee
) -> dict[str, Any]:
    """Golden mode (no tester): each code's reward, the GT-test pass rate, on both sides."""
    same = compared = 0
    differences: list[dict[str, Any]] = []
    explained: dict[str, int] = {}
    for start in range(0, len(duels), batch):
        chunk = duels[start : start + batch]
        theirs = authors.golden(chunk)
        ours = referee.judge_many([(p, codes, [[] for _ in codes]) for p, codes, _ in chunk])
        for (problem, codes, _), mine, their in zip(chunk, ours, theirs):
            for c in range(len(codes)):
                compared += 1
                if abs(mine.coder_rewards[c] - their[c]) <= TOLERANCE:
                    same += 1
                    continue
                counted = len(mine.gt_tests[c])
                passed = [v.passed for v in mine.gt_tests[c]]
                if counted != len(problem.tests):
                    why = (
                        "deviation 17: a GT test the GT itself fails, or one codea1 does not "
                        "parse, is left out"
                    )
                elif (
                    mine.compiled[c]
                    and abs(marker_passes(passed) / counted - their[c]) <= TOLERANCE
                ):
                    why = "deviation 1: a failed test read as passed from another test's marker"
                else:
                    why = "unexplained"
                explained[why] = explained.get(why, 0) + 1
                differences.append(
                    {
                        "problem": problem.task_id,
                        "code": c,
                        "explained": why,
                        "ours": {"reward": mine.coder_rewards[c], "gt_tests_counted": counted},
                        "theirs": {"reward": their[c], "gt_tests": len(problem.tests)},
                    }
                )
    return {
        "agree": {"coder": {"same": same, "compared": compared}},
        "explained": explained,
        "differences": differences,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--authors-repo", type=Path, required=True, help="a ZJU-REAL/Code-A1 checkout"
    )
    parser.add_argument("--problems", type=int, default=16, help="HumanEval problems (default 16)")
    parser.add_argument(
        "--steps", type=int, default=3, help="steps over the same duels (default 3)"
    )
    parser.add_argument("--batch", type=int, default=8, help="problems per step's call (default 8)")
    parser.add_argument(
        "--perturb",
        nargs="?",
        const=",".join(SUITE_EDITS + CODE_EDITS),
        default="",
        metavar="KINDS",
        help="edit suites and codes; KINDS: comma-separated of "
        f"{', '.join(SUITE_EDITS + CODE_EDITS)} (default: all)",
    )
    parser.add_argument(
        "--mode",
        choices=("code-a1", "golden"),
        default="code-a1",
        help="code-a1: coder, tester and book over --steps steps (default); golden: each "
        "code's GT-test pass rate, once (their acg_gt manager)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the full report (JSON) here")
    args = parser.parse_args(argv)
    if args.problems < 1 or args.steps < 1 or args.batch < 1:
        parser.error("--problems, --steps and --batch must be >= 1")
    if args.out is not None:
        folder = args.out.resolve().parent
        if not folder.is_dir():
            parser.error(f"--out {args.out}: no such folder {folder}")
        if args.out.is_dir():
            parser.error(f"--out {args.out}: is a folder; name the report's file")
        if not os.access(folder, os.W_OK):
            parser.error(f"--out {args.out}: the folder {folder} is not writable")
    kinds = [k for k in args.perturb.split(",") if k]
    unknown = sorted(set(kinds) - set(SUITE_EDITS + CODE_EDITS))
    if unknown:
        parser.error(f"--perturb: unknown {', '.join(unknown)}")
    with LocalSandbox() as sandbox:
        fusion = SandboxFusionStandIn(sandbox)
        try:
            reward, book_class = load_authors(args.authors_repo, fusion)
        except (OSError, ValueError, SyntaxError) as exc:
            print(f"compare_authors: {exc}", file=sys.stderr)
            return 2
        print(f"building {args.problems} problems' duels ...", file=sys.stderr)
        duels, skipped, _ = make_workload(sandbox, args.problems, seed=args.seed)
        if kinds:
            duels = perturb(duels, kinds, args.seed)
        referee = Referee(
            sandbox=sandbox,
            reward_config=RewardConfig(mode=args.mode, candidate_context="authors"),
            limits=Limits(timeout_clock="wall"),
            mistake_book=InMemoryMistakeBook(tie_order="authors"),
            owns_sandbox=False,
        )
        harness = AuthorsHarness(reward, book_class)
        if args.mode == "golden":
            report = compare_golden(duels, args.batch, harness, referee)
        else:
            report = compare(duels, args.steps, args.batch, harness, referee, fusion)
        report["workload"] = {
            "problems": len(duels),
            "skipped_hanging": skipped,
            "duels_per_step": sum(len(c) * len(s[0]) for _, c, s in duels),
            "mode": args.mode,
            "steps": args.steps if args.mode == "code-a1" else 1,
            "perturbed": kinds,
            "authors_programs": fusion.programs,
            "authors_program_timeouts": fusion.timeouts,
        }
    summary = {k: f"{v['same']}/{v['compared']}" for k, v in report["agree"].items()}
    shown = ("per_step", "explained", "rewards_seen", "book_entries_at_end", "workload")
    print(json.dumps({"agree": summary, **{k: report[k] for k in shown if k in report}}, indent=2))
    if args.out:
        write_text_atomic(args.out, json.dumps(report, indent=1) + "\n")
    return 1 if report["explained"].get("unexplained") else 0


if __name__ == "__main__":
    raise SystemExit(main())
