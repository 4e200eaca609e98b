"""Evaluate coder and tester policies on a problem source: code and test-generation metrics.

One function, :func:`evaluate_policies`, takes policy specs and a problem source and returns one
result per policy with:

* **code metrics**: pass@k (unbiased estimator) for each requested k, avg@n (Code-A1's avg@k
  with n = the number of samples), and per-problem sample outcomes. Each answer is played as the
  env plays the coder's move (a :class:`~codea1_env.game.duel.Duel`) and scored by the
  :class:`~codea1_env.scoring.referee.Referee` through :func:`codea1_env.game.duel.judge_grid`
  (``gt_pass_rates``, ``update_book=False``); a sample is correct when it passes every GT test.
  Every policy reads the env's observations (:func:`codea1_env.game.spaces.observe`).
* **test-generation metrics** (policies that can play the tester): validity@k, all-valid@k,
  mut@k, discrimination, CURE's unit-test accuracy / p01 / p00, and best-of-N, measured by
  :class:`~codea1_env.evaluation.SuiteEvaluator`, and next to them the training numbers of the
  same suites (``R_val``, ``n_kept``, ``n_invalid``: the referee's, rule 3 of
  docs/deviations.md; the evaluator grades through the referee, so these equal what training
  would give). The tester is
  shown each problem with its GT program (white-box, as in the paper's test-generation
  evaluation), LCov@k / BCov@k (line and branch coverage of the GT by each suite's first k kept
  tests, traced in the sandbox: :mod:`codea1_env.evaluation.coverage`) and UTRL's UT fidelity
  (:mod:`codea1_env.evaluation.fidelity`, over the candidate pool below); its suites are run on the
  GT, on the GT's mutants and on a shared pool of candidate codes (``candidates`` spec, the same
  pool for every policy so that testers are compared on the same codes). Every tester's suites
  are judged in one batch (:meth:`~codea1_env.evaluation.SuiteEvaluator.evaluate_pooled`): which
  mutants are likely equivalent, and so left out of mut@k, is judged per problem on the GT
  tests' inputs and the inputs of every evaluated tester's suites together, so every tester of
  one call is scored against the same mutants (``per_problem[i]["mutants"]["counted"]`` lists
  them, the row's ``mutants_judged_with`` names the testers whose suites judged them). mut@k
  figures from separate calls are therefore not comparable unless the same testers were
  evaluated together.
* **monitor**: :mod:`codea1_env.scoring.monitor` counts over the coder's programs (static scan and
  the sandbox runs, captured by a recording wrapper around the sandbox) and the tester's suites.

Policy specs (``scripted:...``, ``checkpoint:RUN_DIR``, ``hf:PATH``, ``http:BASE_URL#MODEL``) are
loaded by :mod:`agents.evaluation.policies` (re-exported here).
"""

from __future__ import annotations

import math
import statistics
import tokenize
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.evaluation.policies import (
    EvalSettings,
    LoadedPolicy,
    PolicyLike,
    check_policy_spec,
    load_policy,
    policy_name,
)
from codea1_env.envs.duel_env import duel_info
from codea1_env.evaluation import coverage
from codea1_env.evaluation import fidelity as fidelity_module
from codea1_env.evaluation import metrics as measures
from codea1_env.evaluation.suite_eval import ProblemEvaluation, SuiteEvaluator
from codea1_env.game.duel import Duel, Role, answer_for, judge_grid
from codea1_env.game.spaces import observe
from codea1_env.problems.problem import Problem
from codea1_env.sandbox.base import IsolationReport, Job, JobResult, Sandbox
from codea1_env.scoring.monitor import MonitorCounts, scan_programs, scan_suite
from codea1_env.scoring.testcases import parse_tests

__all__ = [
    "EvalSettings",
    "LoadedPolicy",
    "RecordingSandbox",
    "evaluate_policies",
    "load_policy",
    "select_problems",
]


class RecordingSandbox:
    """A sandbox wrapper that keeps the results of jobs whose tag starts with a prefix.

    The referee tags a problem's candidate jobs ``code:{task_id}:{n}``, one job per distinct
    program (samples with the same program share it); the evaluation reads the results back
    for the monitor without a second run, by problem and program (:meth:`results_of`).

    Args:
        inner: The real sandbox.
        prefix: Tags to record.

    """

    def __init__(self, inner: Sandbox, prefix: str = "code:") -> None:
        self.inner = inner
        self.prefix = prefix
        self.recorded: dict[tuple[str, str], list[JobResult]] = {}

    def run(self, jobs: Sequence[Job]) -> list[JobResult]:
        """Run the jobs on the inner sandbox and record the tagged results."""
        results = self.inner.run(jobs)
        for job, result in zip(jobs, results):
            if job.tag.startswith(self.prefix):
                problem_tag = job.tag.rsplit(":", 1)[0]  # code:{task_id}
                self.recorded.setdefault((problem_tag, job.program), []).append(result)
        return results

    def results_of(self, task_id: str, program: str) -> list[JobResult]:
        """The recorded results of ``program``'s job(s) on problem ``task_id`` (none: ``[]``)."""
        return list(self.recorded.get((f"{self.prefix}{task_id}", program), []))

    def isolation(self) -> IsolationReport:
        """The inner sandbox's isolation report."""
        return self.inner.isolation()

    def close(self) -> None:
        """Leave the inner sandbox open (its owner closes it)."""

    def __enter__(self) -> RecordingSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def select_problems(
    source: Any, limit: int | None = None, seed: int | None = None
) -> list[Problem]:
    """The first ``limit`` problems of a source (a seeded random subset when ``seed`` is set).

    Raises:
        ValueError: ``limit`` is not None and below 1.

    """
    if limit is not None and (isinstance(limit, bool) or limit < 1):
        raise ValueError(f"the number of problems must be >= 1, got {limit!r}")
    ids = list(source.ids())
    if limit is not None and limit < len(ids):
        if seed is None:
            ids = ids[:limit]
        else:
            keep = np.random.default_rng(seed).choice(len(ids), size=limit, replace=False)
            ids = [ids[int(i)] for i in sorted(keep)]
    return [source[i] for i in ids]


def _turn(problem: Problem, role: Role) -> Duel:
    """The env's duel at ``role``'s turn; the tester's is played against the GT program."""
    duel = Duel(problem)
    if role is Role.TESTER:
        duel.play_code(answer_for(problem.gt_program))
    return duel


def _sample(policy: PolicyLike, problems: Sequence[Problem], role: Role, n: int) -> list[list[str]]:
    """``n`` answers per problem from one batched ``act`` call, on the env's observations."""
    duels = [_turn(p, role) for p in problems]
    obs = [observe(d) for d in duels for _ in range(n)]
    infos = [duel_info(d) for d in duels for _ in range(n)]
    answers = list(policy.act(obs, infos)) if obs else []
    return [answers[i * n : (i + 1) * n] for i in range(len(problems))]


@dataclass
class _Shared:
    problems: list[Problem]
    candidates: list[list[str]]
    referee: Any
    recorder: RecordingSandbox
    evaluator: SuiteEvaluator
    settings: EvalSettings
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Played:
    """One policy's samples and code metrics, before its suites are judged with the others'.

    Holds no reference to the policy itself, so a closed policy's model can be freed before the
    next one is loaded.

    Attributes:
        name: The policy's name (its row's key).
        spec: The policy's spec.
        roles: The roles it plays (``"coder"``, ``"tester"``).
        code: The code metrics (None without a coder).
        monitor: The monitor's counts so far (the coder's programs, the tester's suites).
        per_problem: The per-problem rows, the code's entries filled.
        suites: Per problem, the tester's suites (None without a tester).
        tests: The test metrics, once the suites are judged (None without a tester).
        judged_with: The names of the testers whose suites judged the mutants with this one's.

    """

    name: str
    spec: str
    roles: list[str]
    code: dict[str, Any] | None
    monitor: MonitorCounts
    per_problem: list[dict[str, Any]]
    suites: list[list[str]] | None = None
    tests: dict[str, Any] | None = None
    judged_with: list[str] = field(default_factory=list)


def evaluate_policies(
    specs: Sequence[str | LoadedPolicy],
    problems: Sequence[Problem],
    settings: EvalSettings | None = None,
    *,
    sandbox: Sandbox | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Evaluate each policy spec on ``problems``.

    Args:
        specs: Policy specs (see the module docstring), one result row each; a
            :class:`~agents.evaluation.policies.LoadedPolicy` evaluates your own policy
            objects (``LoadedPolicy("mine", "mine", coder=..., tester=...)``: anything with
            ``act(observations, infos) -> list[str]``; the caller closes it).
        problems: The problems (for example from :func:`select_problems`).
        settings: Sampling and scoring settings.
        sandbox: The sandbox to use (a local one is started and stopped when None).
        progress: Called with a line of progress text.

    Returns:
        One dict per spec: ``name``, ``spec``, ``roles``, ``code`` (metrics or None),
        ``tests`` (metrics or None), ``monitor`` (counts) and ``per_problem`` rows; a tester's
        row also has ``mutants_judged_with``, the names of every tester of the call, whose
        suites judged together which mutants mut@k leaves out as likely equivalent.

    Raises:
        ValueError: a bad policy spec, found before any work starts (``EvalSettings`` checks
            its own values, the candidates spec included, when it is made).

    """
    from codea1_env.scoring.referee import Referee
    from codea1_env.scoring.rewards import RewardConfig

    settings = settings or EvalSettings()
    names: dict[str, str] = {}
    for spec in specs:
        if isinstance(spec, LoadedPolicy):
            if spec.coder is None and spec.tester is None:
                raise ValueError(f"policy {spec.name!r}: neither a coder nor a tester")
            name, spec = spec.name, spec.spec
        else:
            check_policy_spec(spec)  # every spec, before any work
            name = policy_name(spec)
        if name in names:
            raise ValueError(
                f"policy {spec!r}: the name {name!r} is already that of policy {names[name]!r}; "
                "rows are keyed by name, so give each policy its own (NAME=SPEC)"
            )
        names[name] = spec
    say = progress or (lambda _line: None)
    owned = sandbox is None
    if sandbox is None:
        from codea1_env.sandbox.factory import make_sandbox

        sandbox = make_sandbox("local")
    recorder = RecordingSandbox(sandbox)
    referee = Referee(sandbox=recorder, reward_config=RewardConfig(k=8), owns_sandbox=False)
    try:
        shared = _Shared(
            list(problems),
            [],
            referee,
            recorder,
            SuiteEvaluator(sandbox, max_mutants=settings.max_mutants),
            settings,
        )
        if settings.n_candidates:
            pool = load_policy(settings.candidates, sandbox, settings)
            if pool.coder is None:
                raise ValueError(f"candidates spec {settings.candidates!r} writes no code")
            shared.candidates = _sample(
                pool.coder, shared.problems, Role.CODER, settings.n_candidates
            )
            pool.close()
        else:
            shared.candidates = [[] for _ in shared.problems]
        played: list[_Played] = []
        for spec in specs:
            if isinstance(spec, LoadedPolicy):  # the caller's own objects: the caller closes
                say(f"evaluating {spec.spec} on {len(shared.problems)} problems")
                played.append(_play(spec, shared))
                continue
            say(f"evaluating {spec} on {len(shared.problems)} problems")
            policy = load_policy(spec, sandbox, settings)
            try:
                played.append(_play(policy, shared))
            finally:
                policy.close()
        testers = sum(p.suites is not None for p in played)
        if testers > 1:
            say(f"judging the suites of {testers} testers together (mutants judged on all)")
        _judge_suites(played, shared)
        return [_row(p) for p in played]
    finally:
        referee.close()
        if owned:
            sandbox.close()


def _evaluate_one(policy: LoadedPolicy, shared: _Shared) -> dict[str, Any]:
    """One policy evaluated alone (its suites' mutants judged on its own suites and the GT's)."""
    played = _play(policy, shared)
    _judge_suites([played], shared)
    return _row(played)


def _play(policy: LoadedPolicy, shared: _Shared) -> _Played:
    """Sample the policy's codes (scored now) and suites (judged later, with every tester's)."""
    per_problem: list[dict[str, Any]] = [{"task_id": p.task_id} for p in shared.problems]
    roles = [r for r, p in (("coder", policy.coder), ("tester", policy.tester)) if p is not None]
    played = _Played(policy.name, policy.spec, roles, None, MonitorCounts(), per_problem)
    if policy.coder is not None:
        played.code, code_monitor = _code_metrics(policy.coder, shared, per_problem)
        played.monitor = played.monitor + code_monitor
    if policy.tester is not None:
        played.suites, test_monitor = _sample_suites(policy.tester, shared)
        played.monitor = played.monitor + test_monitor
    return played


def _judge_suites(played: Sequence[_Played], shared: _Shared) -> None:
    """Judge every tester's suites in one pooled batch and fill each one's test metrics."""
    testers = [p for p in played if p.suites is not None]
    if not testers:
        return
    groups = [p.suites for p in testers if p.suites is not None]
    evaluations = shared.evaluator.evaluate_pooled(shared.problems, groups, shared.candidates)
    names = [p.name for p in testers]
    for tester, evaluated in zip(testers, evaluations):
        assert tester.suites is not None
        tester.tests = _test_metrics(evaluated, tester.suites, shared, tester.per_problem)
        tester.judged_with = names


def _row(played: _Played) -> dict[str, Any]:
    """The result row of one policy (see :func:`evaluate_policies`)."""
    row: dict[str, Any] = {
        "name": played.name,
        "spec": played.spec,
        "roles": list(played.roles),
        "code": played.code,
        "tests": played.tests,
        "monitor": played.monitor.as_metrics(),
        "per_problem": played.per_problem,
    }
    if played.tests is not None:
        row["mutants_judged_with"] = list(played.judged_with)
    return row


def _code_metrics(
    coder: PolicyLike, shared: _Shared, per_problem: list[dict[str, Any]]
) -> tuple[dict[str, Any], MonitorCounts]:
    settings = shared.settings
    answers = _sample(coder, shared.problems, Role.CODER, settings.samples)
    shared.recorder.recorded.clear()
    duels = [[Duel(p) for _ in texts] for p, texts in zip(shared.problems, answers)]
    for played, texts in zip(duels, answers):
        for duel, text in zip(played, texts):
            duel.play_code(text)  # the env's move: checks and extraction (no tester follows)
    grid = [[[duel] for duel in played] for played in duels]
    judgements = judge_grid(shared.referee, grid, update_book=False)
    correct: list[list[bool]] = []
    programs: list[str | None] = []
    results: list[list[JobResult]] = []
    for problem, texts, coded, judgement, row in zip(
        shared.problems, answers, duels, judgements, per_problem
    ):
        flags = [rate >= 1.0 for rate in judgement.gt_pass_rates]
        correct.append(flags)
        row["code_correct"] = flags
        row["code_gt_pass_rates"] = [round(r, 4) for r in judgement.gt_pass_rates]
        row["code_sample"] = texts[0][:2000] if texts else ""
        for duel in coded:
            programs.append(duel.program if duel.program.strip() else None)
            results.append(shared.recorder.results_of(problem.task_id, duel.program))
    out: dict[str, Any] = {
        "problems": len(shared.problems),
        "samples": settings.samples,
        "gt_pass_rate": measures.mean_or_none([r for j in judgements for r in j.gt_pass_rates]),
        f"avg@{settings.samples}": measures.avg_at_k(correct, settings.samples),
    }
    for k in settings.ks:
        out[f"pass@{k}"] = measures.mean_pass_at_k([(len(c), sum(c)) for c in correct], k)
    return out, scan_programs(programs, results)


def _sample_suites(tester: PolicyLike, shared: _Shared) -> tuple[list[list[str]], MonitorCounts]:
    """The tester's suites per problem, and the monitor's counts over them."""
    suites = _sample(tester, shared.problems, Role.TESTER, shared.settings.samples)
    monitor = MonitorCounts()
    for problem, texts in zip(shared.problems, suites):
        for text in texts:
            parsed = parse_tests(text, problem.entry_point)
            monitor = monitor + scan_suite(parsed.cases, parsed.rejected, problem.entry_point)
    return suites, monitor


def _test_metrics(
    evaluations: Sequence[ProblemEvaluation],
    suites: Sequence[Sequence[str]],
    shared: _Shared,
    per_problem: list[dict[str, Any]],
) -> dict[str, Any]:
    """The test metrics of one tester from its judged suites (see :func:`evaluate_policies`)."""
    settings = shared.settings
    k = settings.test_k
    validity: list[float] = []
    all_valid: list[float] = []
    mut_entries: list[tuple[Sequence[bool], Sequence[Sequence[bool]]]] = []
    discrimination: list[float] = []
    accuracy_flags: list[bool] = []
    p01_suites: list[tuple[list[tuple[bool, ...]], tuple[bool, ...]]] = []
    best: list[float] = []
    tests_written: list[int] = []
    r_vals: list[float] = []
    kept_counts: list[float] = []
    invalid_counts: list[float] = []
    totals = {"mutants": 0, "crashing": 0, "equivalent": 0}
    for evaluation, texts, row in zip(evaluations, suites, per_problem):
        _problem_row(evaluation, texts, row, k)
        totals["mutants"] += evaluation.n_mutants
        totals["crashing"] += evaluation.n_crashing
        totals["equivalent"] += evaluation.n_equivalent
        wrong = [i for i, ok in enumerate(evaluation.candidate_correct) if not ok]
        for suite in evaluation.suites:
            tests_written.append(len(suite.valid))
            r_vals.append(suite.r_val)
            kept_counts.append(float(suite.n_kept))
            invalid_counts.append(float(suite.n_invalid))
            validity.append(measures.validity_at_k(suite.valid, k))
            all_valid.append(1.0 if measures.all_valid_at_k(suite.valid, k) else 0.0)
            mut_entries.append((suite.valid, suite.mutant_kills))
            accuracy_flags.extend(suite.valid)
            # the tests the candidates ran: the kept ones (a duplicate, a call the GT raised on,
            # arguments that did not evaluate, a filtered test: never run, so neither passed
            # nor failed, and left out of p01/p00)
            run = [s in ("valid", "wrong_expected") for s in suite.statuses]
            run_valid = tuple(v for v, r in zip(suite.valid, run) if r)
            wrong_rows = [
                tuple(p for p, r in zip(suite.candidate_passes[i], run) if r) for i in wrong
            ]
            # a suite with no valid test catches no wrong code: 0, not left out
            score = measures.discrimination(wrong_rows, run_valid)
            if score is not None:
                discrimination.append(score)
            p01_suites.append((wrong_rows, run_valid))
            if evaluation.candidate_correct:
                counts = [sum(row_) for row_ in suite.candidate_passes]
                scores = [1.0 if ok else 0.0 for ok in evaluation.candidate_correct]
                value = measures.best_of_n(counts, scores)
                if value is not None:
                    best.append(value)
    lcov, bcov = _coverage(shared, evaluations, k, per_problem)
    fidelity = _fidelity(evaluations, per_problem)
    p01, p00 = measures.pooled_p01_p00(p01_suites)
    random_pick = [
        sum(e.candidate_correct) / len(e.candidate_correct)
        for e in evaluations
        if e.candidate_correct
    ]
    out: dict[str, Any] = {
        "k": k,
        "suites": len(validity),
        "tests_per_suite": measures.mean_or_none([float(n) for n in tests_written]),
        f"validity@{k}": measures.mean_or_none(validity),
        # the training numbers of the same suites, from the referee (rule 3 of docs/deviations.md)
        "R_val": measures.mean_or_none(r_vals),
        "n_kept": measures.mean_or_none(kept_counts),
        "n_invalid": measures.mean_or_none(invalid_counts),
        f"all_valid@{k}": measures.mean_or_none(all_valid),
        f"mut@{k}": measures.mut_at_k(mut_entries, k),
        f"mut@{k}_suites": sum(
            1 for v, kills in mut_entries if measures.all_valid_at_k(v, k) and kills
        ),
        f"lcov@{k}": lcov,
        f"bcov@{k}": bcov,
        "ut_fidelity": fidelity.mean,
        "discrimination": measures.mean_or_none(discrimination),
        "ut_accuracy": measures.unit_test_accuracy(accuracy_flags),
        "p01": p01,
        "p00": p00,
        f"best_of_{settings.n_candidates}": measures.mean_or_none(best),
        "random_pick": measures.mean_or_none(random_pick),
        **totals,
    }
    return out


def _coverage(
    shared: _Shared,
    evaluations: Sequence[ProblemEvaluation],
    k: int,
    per_problem: list[dict[str, Any]],
) -> tuple[float | None, float | None]:
    """LCov@k and BCov@k of the GT by each suite's first k kept tests, traced in the sandbox.

    One batched sandbox call of coverage jobs (:func:`codea1_env.evaluation.coverage.coverage_job`)
    over every suite; averaged over suites (BCov over the suites whose GT has a branch).
    """
    jobs: list[Job] = []
    models: list[Any] = []
    owners: list[int] = []
    for index, (problem, evaluation) in enumerate(zip(shared.problems, evaluations)):
        if problem.kind != "function":
            continue
        try:
            model = coverage.analyze_program(problem.gt_program)
        except (SyntaxError, ValueError, RecursionError, tokenize.TokenError):
            continue
        for suite in evaluation.suites:
            calls = [
                case.call
                for status, case in zip(suite.statuses, suite.cases)
                if status in ("valid", "wrong_expected") and case is not None
            ][:k]
            jobs.append(
                coverage.coverage_job(
                    problem.gt_program, calls, limits=shared.evaluator.limits, tag="coverage"
                )
            )
            models.append(model)
            owners.append(index)
    results = shared.evaluator.sandbox.run(jobs) if jobs else []
    lines: list[float | None] = []
    branches: list[float | None] = []
    rows: dict[int, list[float | None]] = {}
    for model, owner, result in zip(models, owners, results):
        runs = [call.coverage for call in result.calls if call.ok]
        figures = coverage.coverage_at_k(model, runs, k)
        lines.append(figures.lcov)
        branches.append(figures.bcov)
        rows.setdefault(owner, []).append(figures.lcov)
    for owner, values in rows.items():
        per_problem[owner][f"lcov@{k}"] = values
    return coverage.mean_coverage(lines), coverage.mean_coverage(branches)


def _fidelity(
    evaluations: Sequence[ProblemEvaluation], per_problem: list[dict[str, Any]]
) -> fidelity_module.FidelityReport:
    """UTRL's UT fidelity per suite over the candidate pool, averaged per problem and overall."""
    rates: dict[str, tuple[list[float], list[float]]] = {}
    for evaluation in evaluations:
        for index, suite in enumerate(evaluation.suites):
            rates[f"{evaluation.task_id}#{index}"] = (
                fidelity_module.pass_rates(suite.candidate_passes),
                list(evaluation.candidate_gt_pass_rates),
            )
    report = fidelity_module.fidelity_report(rates)
    for evaluation, row in zip(evaluations, per_problem):
        values = [
            report.per_problem[f"{evaluation.task_id}#{i}"] for i in range(len(evaluation.suites))
        ]
        row["ut_fidelity"] = values
    return report


def _problem_row(
    evaluation: ProblemEvaluation, texts: Sequence[str], row: dict[str, Any], k: int
) -> None:
    """One problem's entries of a tester's ``per_problem`` row.

    ``mutation_scores`` has every suite's killed share of the counted mutants, ``mut@k_counted``
    whether that suite enters mut@k (its first k tests all valid and a mutant to score), and
    ``mutants`` the problem's mutants: ``counted`` (the indices, in generation order, of those
    mut@k scores: neither crashing nor likely equivalent), ``changes`` (what each mutant
    changes, same order) and ``judged_on_suites`` (how many suites' inputs, every tester's of
    the call, judged equivalence with the GT tests').
    """
    row["test_sample"] = texts[0][:2000] if texts else ""
    row["test_statuses"] = [list(s.statuses) for s in evaluation.suites]
    row["mutation_scores"] = [measures.mutation_score(s.mutant_kills, k) for s in evaluation.suites]
    row[f"mut@{k}_counted"] = [
        measures.all_valid_at_k(s.valid, k) and bool(s.mutant_kills) for s in evaluation.suites
    ]
    row["mutants"] = {
        "total": evaluation.n_mutants,
        "crashing": evaluation.n_crashing,
        "equivalent": evaluation.n_equivalent,
        "counted": [i for i, kind in enumerate(evaluation.mutant_classes) if kind == "scored"],
        "changes": list(evaluation.mutant_changes),
        "judged_on_suites": evaluation.judged_on_suites,
    }
    row["candidate_correct"] = list(evaluation.candidate_correct)


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------


def table_columns(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """``(section, key, header)`` of every metric present in at least one row, in table order."""
    columns: list[tuple[str, str, str]] = []
    for section in ("code", "tests"):
        seen: list[str] = []
        for row in rows:
            for key in row.get(section) or {}:
                if key not in seen:
                    seen.append(key)
        skip = {"problems", "samples", "k", "suites", "mutants", "crashing", "equivalent"}
        for key in seen:
            if key not in skip and not key.endswith("_suites"):
                columns.append((section, key, key))
    columns.append(("monitor", "monitor/flagged", "monitor flags"))
    return columns


def format_cell(value: Any) -> str:
    """A metric as table text: three decimals, ``-`` when undefined."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def markdown_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The side-by-side Markdown table of :func:`evaluate_policies` rows (one row per policy)."""
    columns = table_columns(rows)
    header = "| policy | " + " | ".join(h for _s, _k, h in columns) + " |"
    rule = "|---|" + "|".join("---:" for _ in columns) + "|"
    lines = [header, rule]
    for row in rows:
        cells = [format_cell((row.get(s) or {}).get(k)) for s, k, _h in columns]
        lines.append(f"| {row['name']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summarize_seeds(rows_per_seed: Sequence[Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Mean and spread over seeds, matched by policy name.

    Returns:
        One row per name with ``code``/``tests`` metrics as ``"mean ± std"`` strings (sample
        std over seeds; ``± 0`` with one seed), followed by ``" (N of M seeds)"`` when the metric
        is undefined on some of the row's seeds (mut@k without an all-valid suite), and
        ``seeds`` (how many rows were averaged).

    """
    names: list[str] = []
    for rows in rows_per_seed:
        for row in rows:
            if row["name"] not in names:
                names.append(row["name"])
    out = []
    for name in names:
        matched = [row for rows in rows_per_seed for row in rows if row["name"] == name]
        merged: dict[str, Any] = {"name": name, "seeds": len(matched)}
        for section in ("code", "tests", "monitor"):
            keys: list[str] = []
            for row in matched:
                keys += [k for k in (row.get(section) or {}) if k not in keys]
            values: dict[str, Any] = {}
            for key in keys:
                numbers = [
                    float(v)
                    for row in matched
                    if isinstance(v := (row.get(section) or {}).get(key), (int, float))
                ]
                if not numbers:
                    values[key] = None
                    continue
                mean = statistics.fmean(numbers)
                spread = statistics.stdev(numbers) if len(numbers) > 1 else 0.0
                values[key] = f"{mean:.3f} ± {spread:.3f}"
                if len(numbers) < len(matched):  # undefined on some seeds (e.g. mut@k)
                    values[key] += f" ({len(numbers)} of {len(matched)} seeds)"
            merged[section] = values or None
        out.append(merged)
    return out
