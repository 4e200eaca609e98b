"""The paper's comparison at toy scale: base, golden, self-play and Code-A1 on procedural problems.

For each seed, three runs with the CPU preset (``tiny``: a ~1.4M-parameter Qwen2 built from config,
supervised warm start, then GRPO on ``procedural:SEED:train:edge``):

* ``code-a1``: two models, the coder and the tester trained against each other, after the
  preset's supervised warm start of both;
* ``golden``: the coder rewarded by the GT tests (no tester), started from the Code-A1 run's
  warm-started coder (``Trainer(init_from=.../code-a1__seedS/checkpoints/step_0)``: the same
  weights golden's own warm start would train, computed once, and a paired comparison);
* ``self-play``: one model plays both roles, with its own interleaved one-model warm start;
* ``base``: the Code-A1 run's warm-started models before RL (its ``step_0`` checkpoint);
* ``self-play-base``: the self-play run's warm-started model before RL (its ``step_0``), so that
  what self-play's RL did (``self-play - self-play-base``) is told apart from what its one-model
  warm start did (one model trained on both roles' examples).

All five rows are then evaluated with ``agents.evaluation.evaluate`` on held-out problems of
``procedural:0:test:edge`` (pass@k, avg@n, and for rows with a tester validity@k, mut@k,
discrimination, CURE's accuracy/p01/p00, best-of-N), a seed's rows in one call, so mut@5's
likely-equivalent mutants are judged on the suites of all its testers together and every row of
a seed is scored against the same mutants (docs/metrics.md; table.md says how the rows it shows
were judged). ``--jobs J`` runs J runs at a time in worker processes (one torch thread each;
golden waits for its seed's Code-A1 warm start, a seed's evaluation for its three runs). Under
``--out`` the script writes:

* ``table.md``: the rows (mean ± sample std over seeds, the paper's layout), then the paired
  differences over seeds with 95% Student-t intervals on the per-seed differences
  (``mean ± t(0.975, n - 1) · sd / sqrt(n)``, n the seeds where both rows have the metric,
  stated next to each interval; no interval with one seed): Code-A1 − golden and Code-A1 − base
  on pass@1; Code-A1 − self-play and Code-A1 − base on validity@5, mut@5 and discrimination;
  self-play − self-play-base on all four (what self-play's RL did); then the self-collusion
  table (first vs last 10 steps). Versions of this script before 2026-12-06 gave
  percentile-bootstrap intervals, which at n = 5 cover the mean about 83% of the time, not 95%
  (simulated on normal data);
* ``results.json``: ``per_seed`` (every row of every seed), ``paired_differences``,
  ``self_collusion`` (per mode and seed, the per-step rates), ``learning_rates`` (what each
  player's runs trained at, from their ``config.json``), ``timings`` and ``estimate``;
* ``comparison.png`` (bars with std error bars), ``collusion.png`` (the monitor's trivial-test
  rate and the always-pass rate per training step, self-play vs Code-A1, mean over seeds with a
  min-max band), ``timings.json`` and each run's ``report/`` (``codea1 report``).

Self-collusion is measured from each run's ``metrics.jsonl``: the trivial-test rate is the
monitor's ``(monitor/trivial_constant + monitor/trivial_tautology + monitor/trivial_filtered) /
monitor/tests`` (tests of a suite that all expect one value, ``f(x) == f(x)`` tautologies, and
tests the quality filter removed); the always-pass rate is ``1 - tester/valid_failure_rate`` as
each run logged it (undefined at a step without valid tests). Runs trained from 2026-12-06 on log
``tester/valid_failure_rate`` as the pooled share of the step's kept valid tests that the code
under test fails (failures over valid tests, summed over the step's problems; absent at a step
without one), so the always-pass rate is the share of the step's kept valid tests the code
passes. Runs trained before (every run in ``docs/results/``) logged the mean over the step's
problems of each problem's failure share, a problem without a kept valid test counted as 0
failures, which leans towards 1 when validity is low; ``results.json``'s
``always_pass_definition`` says which (``"pooled"`` or ``"problem_mean"``; a file without it is
from before). A rerun that reuses runs trained before that date mixes the two.

``--from-results DIR`` recomputes a finished comparison's paired intervals from its stored
``DIR/results.json`` (no training, no evaluation) and rewrites ``DIR/table.md`` and the
``paired_differences`` of ``DIR/results.json``; the figures and plots are left as they are.

Full run (not for CI): 5 seeds, the preset's own warm start (600 coder steps, 800 tester steps;
self-play's one model 1,400 interleaved) and 150 RL steps per run, two runs at a time::

    PYTHONPATH=. python examples/reproduce_paper_table.py --seeds 0 1 2 3 4 --jobs 2 \\
        --out runs/paper_table

Measured at 5e14afa on the 2-core machine (its first 10 minutes beside another training run):
66 min 6 s wall for the five seeds. Per seed: Code-A1 658-957 s (warm start 350-440 s), self-play
592-962 s, golden 35-72 s, evaluation 34-54 s. The RL steps vary with how long the players'
programs and suites run. The script prints its own estimate at the end, from the per-run times it
measured (see :func:`estimate`). The results of that run are in ``docs/results/paper_table/``.

Self-play's one model trains at the preset's ``lr`` (the coder's, 5e-5); Code-A1's tester at
``tester_lr`` (5e-4). ``--self-play-lr 5e-4`` puts the self-play model at the tester's rate (a
rerun into a copy of ``--out`` reuses the Code-A1 and golden runs and retrains self-play; a
self-play run trained at another rate is refused). Measured that way at 913d2b5: 36 min 9 s for
the five self-play runs and the evaluations; the results are in
``docs/results/paper_table_self_play_lr5e-4/``.

Smoke run (2 seeds, a few steps, a few minutes)::

    PYTHONPATH=. python examples/reproduce_paper_table.py --seeds 0 1 --jobs 2 --steps 2 \\
        --sft-steps 20 --eval-problems 4 --samples 2 --out /tmp/paper_table_smoke
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import statistics
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

MODES = ("golden", "self-play", "code-a1")
ROWS = ("base", "self-play-base", "golden", "self-play", "code-a1")
SHOWN = ("pass@1", "avg@{n}", "validity@5", "mut@5", "discrimination", "best_of_8")
TESTER_METRICS = ("validity@5", "mut@5", "discrimination")
PAIRS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("code-a1", "golden", ("pass@1",)),
    ("code-a1", "base", ("pass@1",)),
    ("code-a1", "self-play", TESTER_METRICS),
    ("code-a1", "base", TESTER_METRICS),
    ("self-play", "self-play-base", ("pass@1", *TESTER_METRICS)),
)
"""(row, baseline, metrics): the paired differences ``row - baseline`` over seeds."""
COLLUSION_MODES = ("self-play", "code-a1")
COLLUSION_SIGNALS = ("trivial_rate", "always_pass_rate")
WINDOW = 10
"""Training steps averaged at the start and at the end of a run in the self-collusion table."""
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95
"""Coverage of the paired differences' Student-t intervals."""
ALWAYS_PASS = {
    "pooled": (
        "the always-pass rate, 1 - tester/valid_failure_rate: the share of the step's kept valid "
        "tests (summed over its problems) that the code under test passes"
    ),
    "problem_mean": (
        "the always-pass rate, 1 - tester/valid_failure_rate as these runs logged it: 1 minus the "
        "mean over the step's problems of each problem's share of kept valid tests that the code "
        "under test fails, a problem without a kept valid test counted as 0 failures (the "
        "definition before 2026-12-06; runs since log the pooled share of the step's kept valid "
        "tests)"
    ),
}
"""table.md's sentence on the always-pass rate, by ``results.json``'s ``always_pass_definition``."""
FAMILY = "edge"
"""The procedural family of the ``tiny`` preset (its ``problems``/``eval_problems``), used for
every row's training problems (``procedural:SEED:train:edge``) and the held-out set."""


def _preset_full() -> dict[str, int]:
    from agents.training.presets import PRESETS

    tiny = PRESETS["tiny"]
    coder, tester = int(tiny["sft_steps"]), int(tiny["sft_tester_steps"])
    return {
        "steps": int(tiny["steps"]),
        "coder": coder,
        "tester": tester,
        "coder+tester": coder + tester,
    }


PRESET_FULL = _preset_full()
"""The ``tiny`` preset's RL steps and warm-start steps per warm-start role (``warm_start.json``'s
``sft/ROLE_seconds``; ``coder+tester`` is self-play's interleaved one)."""


# --------------------------------------------------------------------------------------------
# statistics


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` for ``0 <= x <= 1``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
        + a * math.log(x) + b * math.log1p(-x)
    )  # fmt: skip
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def student_t_cdf(x: float, df: float) -> float:
    """``P(T <= x)`` for Student's t with ``df`` degrees of freedom (``df > 0``)."""
    if df <= 0:
        raise ValueError(f"student_t_cdf needs df > 0, got {df}")
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + x * x))
    return 1.0 - tail if x >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom, by bisection on its CDF.

    Pure Python (``math`` only), so the script needs no SciPy; agrees with
    ``scipy.stats.t.ppf`` to about 1e-10 (``tests/test_paper_stats.py``).

    Raises:
        ValueError: ``p`` outside (0, 1) or ``df <= 0``.

    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile needs 0 < p < 1, got {p}")
    if df <= 0:
        raise ValueError(f"t_quantile needs df > 0, got {df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while student_t_cdf(high, df) < p:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if student_t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def t_mean_ci(values: Sequence[float], confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Mean of ``values`` with a Student-t confidence interval for it.

    ``mean ± t((1 + confidence) / 2, n - 1) · s / sqrt(n)``, ``s`` the sample standard deviation:
    for paired differences over seeds, the paired t interval. Exact for normal differences; at
    n = 5 a percentile bootstrap of the same values covers about 83%, not 95%.

    Args:
        values: One number per seed (for a paired comparison, the per-seed differences).
        confidence: Coverage of the interval.

    Returns:
        ``{"mean", "low", "high", "n", "df", "sd", "interval"}`` (``interval``:
        ``"student-t"``); ``low``, ``high`` and ``sd`` None with one value (no interval).

    Raises:
        ValueError: ``values`` is empty, or ``confidence`` is not in (0, 1).

    """
    if not values:
        raise ValueError("t_mean_ci needs at least one value")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = len(values)
    mean = math.fsum(values) / n
    out: dict[str, Any] = {"mean": mean, "low": None, "high": None, "n": n, "df": n - 1}
    out.update({"sd": None, "interval": "student-t"})
    if n > 1:
        sd = statistics.stdev(values)
        half = t_quantile((1.0 + confidence) / 2.0, n - 1) * sd / math.sqrt(n)
        out.update({"low": mean - half, "high": mean + half, "sd": sd})
    return out


def bootstrap_mean_ci(
    values: Sequence[float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, float]:
    """Mean of ``values`` with a percentile-bootstrap confidence interval.

    Not what the table uses (:func:`t_mean_ci`): over five seeds the percentile bootstrap's 95%
    interval is too narrow (about 83% coverage); kept to compare with earlier tables.

    Resamples the values with replacement ``resamples`` times (NumPy, fixed ``seed``) and takes
    the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles of the resampled means.

    Args:
        values: One number per seed (for a paired comparison, the per-seed differences).
        resamples: Bootstrap resamples.
        confidence: Coverage of the interval.
        seed: Seed of the resampling generator.

    Returns:
        ``{"mean", "low", "high", "n"}``.

    Raises:
        ValueError: ``values`` is empty.

    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("bootstrap_mean_ci needs at least one value")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    mean = float(data.mean())
    # a constant sample's resampled means equal its mean up to rounding: keep low <= mean <= high
    return {
        "mean": mean,
        "low": min(float(low), mean),
        "high": max(float(high), mean),
        "n": int(data.size),
    }


def _metric(row: Mapping[str, Any], key: str) -> float | None:
    section = "code" if key.startswith(("pass@", "avg@")) else "tests"
    value = (row.get(section) or {}).get(key)
    return float(value) if isinstance(value, (int, float)) else None


def paired_differences(per_seed: Mapping[int, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """The :data:`PAIRS` differences over the seeds where both rows have the metric.

    Args:
        per_seed: The evaluation rows of each seed (``name`` and ``code``/``tests`` metrics).

    Returns:
        One dict per (row, baseline, metric): ``row``, ``baseline``, ``metric``, ``seeds`` (the
        seeds used), ``differences`` (per seed) and :func:`t_mean_ci`'s ``mean``, ``low``,
        ``high``, ``n``, ``df``, ``sd`` and ``interval`` (absent, with ``n`` 0, when no seed has
        both).

    """
    out: list[dict[str, Any]] = []
    for name, baseline, metrics in PAIRS:
        for key in metrics:
            seeds, diffs = [], []
            for seed, rows in per_seed.items():
                by_name = {row["name"]: row for row in rows}
                if name not in by_name or baseline not in by_name:
                    continue
                a, b = _metric(by_name[name], key), _metric(by_name[baseline], key)
                if a is not None and b is not None:
                    seeds.append(seed)
                    diffs.append(a - b)
            entry: dict[str, Any] = {"row": name, "baseline": baseline, "metric": key}
            entry.update({"seeds": seeds, "differences": diffs})
            entry.update(t_mean_ci(diffs) if diffs else {"n": 0})
            out.append(entry)
    return out


# --------------------------------------------------------------------------------------------
# self-collusion, from the training logs


def collusion_rates(metrics_file: Path) -> dict[str, list[float]]:
    """Per training step, the trivial-test and always-pass rates of one run.

    Args:
        metrics_file: The run's ``metrics.jsonl``.

    Returns:
        ``{"step": [...], "trivial_rate": [...], "always_pass_rate": [...]}`` over the steps that
        logged tester metrics (NaN where a step had no tests, or for the always-pass rate no
        valid test: ``tester/valid_share`` 0, or ``tester/valid_failure_rate`` not logged, as
        runs since 2026-12-06 do at such a step). See the module docstring.

    """
    out: dict[str, list[float]] = {"step": [], "trivial_rate": [], "always_pass_rate": []}
    if not metrics_file.is_file():
        return out
    for line in metrics_file.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        tester_step = "tester/valid_failure_rate" in row or "tester/validity" in row
        if "step" not in row or not tester_step:
            continue
        tests = float(row.get("monitor/tests", 0.0))
        trivial = sum(
            float(row.get(f"monitor/{k}", 0.0))
            for k in ("trivial_constant", "trivial_tautology", "trivial_filtered")
        )
        out["step"].append(float(row["step"]))
        out["trivial_rate"].append(trivial / tests if tests > 0 else math.nan)
        failing = row.get("tester/valid_failure_rate")
        no_valid = failing is None or float(row.get("tester/valid_share", 1.0)) <= 0.0
        out["always_pass_rate"].append(math.nan if no_valid else 1.0 - float(failing))
    return out


def _nanmean(values: Sequence[float]) -> float | None:
    finite = [v for v in values if not math.isnan(v)]
    return statistics.fmean(finite) if finite else None


def collusion_summary(
    curves: Mapping[str, Mapping[int, Mapping[str, list[float]]]], window: int = WINDOW
) -> dict[str, dict[str, dict[str, Any]]]:
    """Mean over seeds of each signal's first-``window`` and last-``window`` step means.

    Args:
        curves: ``{mode: {seed: collusion_rates(...)}}``.
        window: Steps at each end of a run.

    Returns:
        ``{mode: {signal: {"first", "last", "seeds"}}}`` (``first``/``last`` None without data).

    """
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for mode, by_seed in curves.items():
        out[mode] = {}
        for signal in COLLUSION_SIGNALS:
            firsts, lasts = [], []
            for rates in by_seed.values():
                values = rates.get(signal, [])
                if (first := _nanmean(values[:window])) is not None:
                    firsts.append(first)
                if (last := _nanmean(values[-window:])) is not None:
                    lasts.append(last)
            out[mode][signal] = {
                "first": statistics.fmean(firsts) if firsts else None,
                "last": statistics.fmean(lasts) if lasts else None,
                "seeds": len(lasts),
            }
    return out


# --------------------------------------------------------------------------------------------
# the runs (worker-process entry points: top-level functions of picklable arguments)


def train_row(mode: str, seed: int, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Train one run (skipped when its summary.json exists) and write its report.

    ``golden`` starts from the seed's ``code-a1`` warm start (its ``checkpoints/step_0``), which
    must exist.

    Args:
        mode: ``golden``, ``self-play`` or ``code-a1``.
        seed: The run's seed (and its training problems, ``procedural:SEED:train:edge``).
        out: The comparison's output directory (the run goes to ``out/MODE__seedSEED``).
        args: The command line (``steps``, ``sft_steps``, ``self_play_lr``).

    Returns:
        Timings: ``kind`` (the mode), ``seed``, ``seconds`` (0 when skipped), ``warm_seconds``,
        ``rl_seconds`` (the RL steps' ``charts/step_seconds``), ``other_seconds`` (building,
        checkpoints, the report), ``steps``, ``warm`` (per warm-start role, its ``seconds`` and
        ``steps``; empty when the run started from Code-A1's) and ``skipped``.

    """
    from agents.evaluation.report import write_report
    from agents.training.config import from_preset
    from agents.training.trainer import Trainer

    run_dir = out / f"{mode}__seed{seed}"
    timing: dict[str, Any] = {"kind": mode, "seed": seed, "seconds": 0.0, "skipped": False}
    lr = args.self_play_lr if mode == "self-play" else None
    if (run_dir / "summary.json").is_file():
        if lr is not None:
            trained = json.loads((run_dir / "config.json").read_text()).get("lr")
            if trained != lr:
                raise SystemExit(
                    f"{run_dir} was trained at lr {trained}, not --self-play-lr {lr}: "
                    "use another --out, or delete that run"
                )
        print(f"[{mode} seed {seed}] already trained: {run_dir}", flush=True)
        timing["skipped"] = True
        return timing
    overrides: dict[str, Any] = {
        "mode": mode,
        "seed": seed,
        # the preset's family (its training split, this seed's problems)
        "problems": f"procedural:{seed}:train:{FAMILY}",
        "output_dir": str(run_dir),
        "eval_before_after": False,
        "progress_bar": False,
        "tensorboard": False,
        "num_threads": 1,
        # keep step_0 (the base row) and the final checkpoint only
        "checkpoint_every": 10**6,
        "keep_checkpoints": 2,
    }
    if lr is not None:
        overrides["lr"] = lr
    if args.steps is not None:
        overrides["steps"] = args.steps
    if args.sft_steps is not None:
        overrides["sft_steps"] = args.sft_steps
        overrides["sft_tester_steps"] = args.sft_steps
    config = from_preset("tiny", **overrides)
    init_from = (
        out / f"code-a1__seed{seed}" / "checkpoints" / "step_0" if mode == "golden" else None
    )
    started = time.perf_counter()
    Trainer(
        config,
        log=lambda line: print(f"[{mode} seed {seed}] {line}", flush=True),
        init_from=init_from,
    ).train()
    print(f"[{mode} seed {seed}] trained in {time.perf_counter() - started:.0f} s", flush=True)
    write_report(run_dir, duels=0)
    seconds = time.perf_counter() - started
    warm_file = run_dir / "warm_start.json"  # absent without warm-start steps
    warm = json.loads(warm_file.read_text()) if warm_file.is_file() else {}
    role_steps = {
        "coder": config.sft_steps,
        "tester": config.tester_sft_steps,
        "coder+tester": config.sft_steps + config.tester_sft_steps,
    }
    roles = {
        role: {"seconds": float(warm[f"sft/{role}_seconds"]), "steps": steps}
        for role, steps in role_steps.items()
        if f"sft/{role}_seconds" in warm
    }
    warm_seconds = sum(r["seconds"] for r in roles.values())
    rows = [
        json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line
    ]
    rl_seconds = sum(float(r.get("charts/step_seconds", 0.0)) for r in rows)
    timing.update(
        {
            "seconds": seconds,
            "warm_seconds": warm_seconds,
            "rl_seconds": rl_seconds,
            "other_seconds": max(0.0, seconds - warm_seconds - rl_seconds),
            "steps": config.steps,
            "warm": roles,
        }
    )
    return timing


def evaluate_seed(seed: int, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Evaluate the five rows of one seed on the held-out problems.

    Args:
        seed: The seed whose runs (``out/MODE__seedSEED``) are evaluated.
        out: The comparison's output directory.
        args: The command line (``eval_problems``, ``samples``).

    Returns:
        ``{"kind": "eval", "seed", "seconds", "problems", "samples", "rows"}`` (``rows``: one
        :func:`agents.evaluation.evaluate.evaluate_policies` row per row of the table).

    """
    import torch

    from agents.evaluation.evaluate import EvalSettings, evaluate_policies, select_problems
    from codea1_env.problems import ProceduralSource

    torch.set_num_threads(1)
    started = time.perf_counter()
    runs = {mode: out / f"{mode}__seed{seed}" for mode in MODES}
    problems = select_problems(
        ProceduralSource(seed=0, split="test", families=[FAMILY]), args.eval_problems
    )
    specs = [
        f"base=checkpoint:{runs['code-a1'] / 'checkpoints' / 'step_0'}",
        f"self-play-base=checkpoint:{runs['self-play'] / 'checkpoints' / 'step_0'}",
    ]
    specs += [f"{mode}=checkpoint:{runs[mode]}" for mode in MODES]
    settings = EvalSettings(
        samples=args.samples,
        ks=tuple(sorted({1, args.samples})),
        test_k=5,
        temperature=0.7,
        top_p=0.95,
        seed=seed,
        n_candidates=8,
        max_mutants=64,
    )
    rows = evaluate_policies(
        specs, problems, settings, progress=lambda line: print(f"[eval seed {seed}] {line}")
    )
    return {
        "kind": "eval",
        "seed": seed,
        "seconds": time.perf_counter() - started,
        "problems": len(problems),
        "samples": args.samples,
        "rows": rows,
    }


# --------------------------------------------------------------------------------------------
# scheduling

ORDER = {"code-a1": 0, "golden": 1, "self-play": 2, "eval": 3}
"""Priority within a seed: Code-A1 first (golden waits for its warm start), evaluation last."""
DEPENDS = {"code-a1": (), "self-play": (), "golden": ("code-a1",), "eval": MODES}


def schedule(
    seeds: Sequence[int],
    jobs: int,
    start: Callable[[str, int], Future[dict[str, Any]]] | None = None,
    durations: Mapping[str, float] | None = None,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> float:
    """Run (or simulate) every seed's tasks, ``jobs`` at a time, in dependency order.

    The tasks of a seed are ``code-a1``, ``self-play``, ``golden`` (after ``code-a1``) and
    ``eval`` (after the three runs). When a slot frees, the ready task of the lowest
    ``(seed, ORDER)`` starts.

    Args:
        seeds: The seeds.
        jobs: Tasks at a time.
        start: Starts a task (kind, seed) and returns its future (real runs).
        durations: Instead of ``start``, simulate with these seconds per kind.
        on_done: Called, in this thread, with each finished task's result (real runs).

    Returns:
        The wall-clock seconds (measured, or simulated with ``durations``).

    """
    if (start is None) == (durations is None):
        raise ValueError("schedule: give exactly one of start and durations")
    started = time.perf_counter()
    done: set[tuple[str, int]] = set()
    pending = [(seed, ORDER[kind], kind) for seed in seeds for kind in ORDER]
    running: dict[Any, tuple[str, int]] = {}
    clock = 0.0
    simulated: list[tuple[float, int, str, int]] = []  # (finish time, tie, kind, seed)

    def ready() -> list[tuple[int, int, str]]:
        return [t for t in pending if all((dep, t[0]) in done for dep in DEPENDS[t[2]])]

    while pending or running or simulated:
        for task in sorted(ready())[: max(0, jobs - len(running) - len(simulated))]:
            pending.remove(task)
            seed, _, kind = task
            if durations is not None:
                heapq.heappush(simulated, (clock + durations[kind], len(done), kind, seed))
            else:
                assert start is not None
                running[start(kind, seed)] = (kind, seed)
        if durations is not None:
            if not simulated:
                raise RuntimeError("schedule: a task waits on one that never runs")
            clock, _, kind, seed = heapq.heappop(simulated)
            done.add((kind, seed))
            continue
        if not running:
            raise RuntimeError("schedule: a task waits on one that never runs")
        finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
        for future in finished:
            result = future.result()  # a failed run stops the comparison
            done.add(running.pop(future))
            if on_done is not None:
                on_done(result)
    return clock if durations is not None else time.perf_counter() - started


class _Inline:
    """The executor of ``--jobs 1``: runs each task at submission, in this process."""

    def submit(self, fn: Callable[..., dict[str, Any]], *args: Any) -> Future[dict[str, Any]]:
        future: Future[dict[str, Any]] = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as error:  # surfaced by schedule's future.result()
            future.set_exception(error)
        return future

    def shutdown(self, cancel_futures: bool = False) -> None:
        """Nothing to stop."""


def estimate(timings: Sequence[Mapping[str, Any]], seeds: int, jobs: int) -> dict[str, Any]:
    """Wall time of a comparison, from the per-run times measured in this one.

    Two estimates, each a simulation of :func:`schedule` with the mean measured seconds per kind:
    ``this_config`` (this command's settings for ``seeds`` seeds) and ``full`` (the preset's
    warm start and RL steps, 48 held-out problems with 4 samples: each run's fixed seconds kept,
    its warm-start and RL seconds scaled linearly by steps, each evaluation's seconds by problems
    times samples; an extrapolation only as good as a short run's per-step times are for a long
    one, and only for a machine as busy as this one was).

    Args:
        timings: The tasks' timing dicts (skipped runs are left out).
        seeds: Seeds of the estimated comparison.
        jobs: Tasks at a time.

    Returns:
        ``{"seeds", "jobs", "per_kind_seconds", "this_config_seconds", "full_per_kind_seconds",
        "full_seconds"}`` (empty dicts and None where nothing was measured).

    """
    measured = [t for t in timings if not t.get("skipped")]
    per_kind: dict[str, float] = {}
    full: dict[str, float] = {}
    for kind in ORDER:
        rows = [t for t in measured if t["kind"] == kind]
        if not rows:
            continue
        per_kind[kind] = statistics.fmean(float(t["seconds"]) for t in rows)
        if kind == "eval":
            scale = (48 * 4) / max(1, rows[0]["problems"] * rows[0]["samples"])
            full[kind] = per_kind[kind] * scale
            continue
        seconds = 0.0
        for t in rows:
            seconds += float(t.get("other_seconds", 0.0))
            seconds += float(t["rl_seconds"]) / max(1, int(t["steps"])) * PRESET_FULL["steps"]
            for role, part in t.get("warm", {}).items():
                seconds += part["seconds"] / max(1, part["steps"]) * PRESET_FULL[role]
        full[kind] = seconds / len(rows)
    complete = set(per_kind) == set(ORDER)
    return {
        "seeds": seeds,
        "jobs": jobs,
        "per_kind_seconds": per_kind,
        "this_config_seconds": (
            schedule(range(seeds), jobs, durations=per_kind) if complete else None
        ),
        "full_per_kind_seconds": full,
        "full_seconds": schedule(range(seeds), jobs, durations=full) if complete else None,
    }


# --------------------------------------------------------------------------------------------
# outputs


def mutation_support(per_seed: Mapping[int, Sequence[Mapping[str, Any]]]) -> str:
    """A sentence saying how many suites each row's mut@5 rests on.

    mut@5 is averaged over the suites whose first 5 tests are all valid; with a tiny tester that
    can be a few suites of a seed, or none (then the seed has no mut@5 and the cell says so).
    """
    parts = []
    for name in ROWS:  # rows without a tester (golden) have no counts and are left out
        counts = [
            (int(tests.get("mut@5_suites") or 0), int(tests.get("suites") or 0))
            for rows in per_seed.values()
            for row in rows
            if row["name"] == name and (tests := row.get("tests"))
        ]
        if counts:
            per = ", ".join(str(c) for c, _ in counts)
            parts.append(f"{name} {per} of {counts[0][1]}")
    return (
        "mut@5 is the killed share of the GT's mutants over the suites whose first 5 tests are "
        "all valid; per seed, the suites it rests on: " + "; ".join(parts) + "."
    )


def learning_rates(out: Path, seeds: Sequence[int]) -> dict[str, list[float]]:
    """The RL learning rates the runs trained at, read from their ``config.json``.

    Returns:
        Per player (``code-a1 coder``, ``code-a1 tester``, ``golden coder``, ``self-play
        model``) the distinct rates over ``seeds``, sorted (one entry when all seeds agree);
        a run without a ``config.json`` is left out.
    """
    found: dict[str, set[float]] = {}
    players = (
        ("code-a1", "code-a1 coder", False),
        ("code-a1", "code-a1 tester", True),
        ("golden", "golden coder", False),
        ("self-play", "self-play model", False),
    )
    for seed in seeds:
        for mode, player, tester in players:
            path = out / f"{mode}__seed{seed}" / "config.json"
            if not path.is_file():
                continue
            config = json.loads(path.read_text())
            rate = (config.get("tester_lr") or config["lr"]) if tester else config["lr"]
            found.setdefault(player, set()).add(float(rate))
    return {player: sorted(rates) for player, rates in found.items()}


def format_rates(rates: Mapping[str, Sequence[float]]) -> str:
    """``player lr`` pairs for table.md (``a/b`` where the seeds differ)."""
    return (
        "; ".join(
            f"{player} {'/'.join(f'{r:g}' for r in values)}" for player, values in rates.items()
        )
        or "unknown"
    )


def mutation_judgement(per_seed: Mapping[int, Sequence[Mapping[str, Any]]]) -> str:
    """A sentence saying on what the rows' mutants were judged, and whether they are the same.

    Since 2026-12-06 ``evaluate_policies`` judges which mutants are likely equivalent (left out of
    mut@k) per problem on the GT tests' inputs and the suites of every tester it evaluates
    together (a seed's rows here), and each row names them in ``mutants_judged_with``. Rows
    without it were judged on their own suites only; the sentence then says, from the rows'
    counts, whether that left them different mutants.
    """
    rows = [row for rows in per_seed.values() for row in rows if row.get("tests")]
    if rows and all("mutants_judged_with" in row for row in rows):
        return (
            "Each seed's rows were evaluated together: a mutant left out of mut@5 as likely "
            "equivalent matched the GT on the GT tests' inputs and on every row's suites of that "
            "seed, so a seed's rows are scored against the same mutants; each row still averages "
            "its own all-valid suites."
        )
    counts = {
        (int(r["tests"]["mutants"]), int(r["tests"]["crashing"]), int(r["tests"]["equivalent"]))
        for r in rows
    }
    if len(counts) == 1 and (only := next(iter(counts)))[2] == 0:
        total, crashing, _ = only
        return (
            "These rows were evaluated before 2026-12-06, when a row's likely-equivalent mutants "
            "were judged on the GT tests' inputs and its own suites only; here no row of any "
            f"seed had one (0 equivalent and {crashing} crashing of {total} mutants, in every "
            f"row), so every row was scored against the same {total - crashing} mutants; each "
            "row averages its own all-valid suites."
        )
    return (
        "These rows were evaluated before 2026-12-06, when a row's likely-equivalent mutants were "
        "judged on the GT tests' inputs and its own suites only: a mutant that all of a row's "
        "suites miss (and the GT tests too) was left out of that row's mut@5 instead of counted "
        "as surviving, and the rows' counts of such mutants differ, so their mut@5 are not on "
        "the same mutants (and each averages its own all-valid suites)."
    )


def table_page(
    per_seed: Mapping[int, Sequence[Mapping[str, Any]]],
    samples: int,
    paired: Sequence[Mapping[str, Any]],
    collusion: Mapping[str, Mapping[str, Mapping[str, Any]]],
    rates: Mapping[str, Sequence[float]] | None,
    always_pass: str = "pooled",
) -> tuple[str, str]:
    """The text of table.md, and its mean ± std table alone.

    Args:
        per_seed: The evaluation rows of each evaluated seed.
        samples: Samples per problem (the ``avg@n`` column).
        paired: :func:`paired_differences`.
        collusion: :func:`collusion_summary`.
        rates: :func:`learning_rates` (None: not recorded, and not mentioned).
        always_pass: How the runs logged ``tester/valid_failure_rate``: a key of
            :data:`ALWAYS_PASS`.

    Returns:
        ``(page, table)``.

    """
    from agents.evaluation.evaluate import summarize_seeds

    summary = summarize_seeds([list(rows) for rows in per_seed.values()])
    keys = [k.format(n=samples) for k in SHOWN]
    header = "| row | seeds | " + " | ".join(keys) + " |"
    lines = [header, "|---|---:|" + "---:|" * len(keys)]
    for row in summary:
        cells = []
        for key in keys:
            section = "code" if key.startswith(("pass@", "avg@")) else "tests"
            cells.append(str(((row.get(section) or {}).get(key)) or "-"))
        lines.append(f"| {row['name']} | {row['seeds']} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    seeds = ", ".join(str(s) for s in per_seed)
    rates_text = "" if rates is None else f" RL learning rates: {format_rates(rates)}."
    page = (
        f"# Toy Code-A1 comparison (procedural family, CPU preset)\n\nSeeds: {seeds}. "
        f"Held-out problems: procedural:0:test:edge. Cells: mean ± sample std over seeds."
        f"{rates_text}\n\n"
        f"{table}\n\n{mutation_support(per_seed)} {mutation_judgement(per_seed)}\n\n"
        f"## Paired differences over seeds\n\n"
        f"Per seed the row's metric minus the baseline's, then the mean over the n seeds where "
        f"both rows have the metric, with a {CONFIDENCE:.0%} Student-t interval: mean ± "
        f"t({(1 + CONFIDENCE) / 2:g}, n - 1) · sd / sqrt(n), sd the sample standard deviation of "
        f"the n differences (no interval when n = 1).\n\n{format_paired(paired)}\n\n"
        f"## Self-collusion over training\n\n"
        f"Per-step rates from each run's metrics.jsonl (the reward-hacking monitor's trivial "
        f"tests over its tests; {ALWAYS_PASS[always_pass]}), mean of the first and last "
        f"{WINDOW} steps, averaged over seeds. Plot: collusion.png.\n\n"
        f"{format_collusion(collusion)}\n"
    )
    return page, table


def write_outputs(
    out: Path,
    per_seed: Mapping[int, Sequence[Mapping[str, Any]]],
    samples: int,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """Write table.md, results.json, comparison.png and collusion.png; return the table.

    Args:
        out: The output directory (holding the runs).
        per_seed: The evaluation rows of each evaluated seed.
        samples: Samples per problem (the ``avg@n`` column).
        extra: More top-level entries of results.json (timings, estimate).

    Returns:
        The mean ± std table (Markdown).

    """
    paired = paired_differences(per_seed)
    curves = {
        mode: {
            seed: collusion_rates(out / f"{mode}__seed{seed}" / "metrics.jsonl")
            for seed in per_seed
        }
        for mode in COLLUSION_MODES
    }
    collusion = collusion_summary(curves)
    rates = learning_rates(out, list(per_seed))
    page, table = table_page(per_seed, samples, paired, collusion, rates, "pooled")
    (out / "table.md").write_text(page)
    results = {
        "per_seed": {str(s): list(r) for s, r in per_seed.items()},
        "paired_differences": paired,
        "self_collusion": {
            "summary": collusion,
            "curves": {m: {str(s): _finite(c) for s, c in by.items()} for m, by in curves.items()},
        },
        "learning_rates": rates,
        "always_pass_definition": "pooled",
        **(extra or {}),
    }
    (out / "results.json").write_text(json.dumps(results))
    _plot(out / "comparison.png", per_seed, keys=[k.format(n=samples) for k in SHOWN])
    _plot_collusion(out / "collusion.png", curves)
    return table


def rewrite_from_results(directory: Path) -> str:
    """Recompute a finished comparison's paired intervals from its stored results.json.

    Reads ``directory/results.json`` (nothing is trained or evaluated), recomputes
    :func:`paired_differences` from its ``per_seed`` rows, writes them into its
    ``paired_differences`` and rewrites ``directory/table.md`` from the stored rows, collusion
    summary and learning rates; every other entry and the plots are left as they are. A file
    without ``always_pass_definition`` is from before 2026-12-06 (``"problem_mean"``), and gets
    that key.

    Args:
        directory: A comparison's output directory (``--out`` of an earlier run).

    Returns:
        The paired differences as a Markdown table.

    Raises:
        FileNotFoundError: ``directory/results.json`` does not exist.

    """
    path = directory / "results.json"
    results = json.loads(path.read_text())
    per_seed = {int(seed): rows for seed, rows in results["per_seed"].items()}
    samples_seen = {
        int(row["code"]["samples"]) for rows in per_seed.values() for row in rows if row["code"]
    }
    if len(samples_seen) != 1:
        raise ValueError(f"{path}: rows sampled {sorted(samples_seen)} times per problem")
    paired = paired_differences(per_seed)
    results["paired_differences"] = paired
    results.setdefault("always_pass_definition", "problem_mean")
    page, _table = table_page(
        per_seed,
        samples_seen.pop(),
        paired,
        results["self_collusion"]["summary"],
        results.get("learning_rates"),
        results["always_pass_definition"],
    )
    (directory / "table.md").write_text(page)
    path.write_text(json.dumps(results))
    return format_paired(paired)


def _finite(curve: Mapping[str, list[float]]) -> dict[str, list[float | None]]:
    """A curve for JSON: NaN (a step without tests) as null."""
    return {k: [None if math.isnan(v) else v for v in vs] for k, vs in curve.items()}


def format_paired(paired: Sequence[Mapping[str, Any]]) -> str:
    """The paired differences as a Markdown table: ``difference [95% t interval]`` and ``n``."""
    lines = [
        f"| comparison | metric | difference [{CONFIDENCE:.0%} t interval] | n (seeds) |",
        "|---|---|---:|---:|",
    ]
    for entry in paired:
        cell = "-"
        if entry["n"]:
            cell = f"{entry['mean']:+.3f}"
            if entry.get("low") is not None:
                cell += f" [{entry['low']:+.3f}, {entry['high']:+.3f}]"
            else:
                cell += " (one seed: no interval)"
        name = f"{entry['row']} − {entry['baseline']}"
        lines.append(f"| {name} | {entry['metric']} | {cell} | {entry['n']} |")
    return "\n".join(lines)


def format_collusion(summary: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """The self-collusion summary as a Markdown table (first vs last steps, per mode)."""
    lines = [
        f"| mode | signal | first {WINDOW} steps | last {WINDOW} steps | seeds |",
        "|---|---|---:|---:|---:|",
    ]
    for mode, signals in summary.items():
        for signal, cell in signals.items():
            first, last = ("-" if cell[k] is None else f"{cell[k]:.3f}" for k in ("first", "last"))
            lines.append(f"| {mode} | {signal} | {first} | {last} | {cell['seeds']} |")
    return "\n".join(lines)


def _plot(path: Path, per_seed: Mapping[int, Sequence[Mapping[str, Any]]], keys: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4), dpi=110)
    width = 0.8 / len(ROWS)
    for r_index, name in enumerate(ROWS):
        means, errors = [], []
        for key in keys:
            values = [
                v
                for rows in per_seed.values()
                for row in rows
                if row["name"] == name and (v := _metric(row, key)) is not None
            ]
            means.append(statistics.fmean(values) if values else 0.0)
            errors.append(statistics.stdev(values) if len(values) > 1 else 0.0)
        xs = [i + (r_index - (len(ROWS) - 1) / 2) * width for i in range(len(keys))]
        ax.bar(xs, means, width, yerr=errors, capsize=3, label=name)
    ax.set_xticks(range(len(keys)), keys)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score")
    ax.set_title(f"Toy comparison over {len(per_seed)} seed(s) (mean ± std)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plot_collusion(
    path: Path, curves: Mapping[str, Mapping[int, Mapping[str, list[float]]]]
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(COLLUSION_SIGNALS), figsize=(10, 3.6), dpi=110)
    titles = {"trivial_rate": "trivial-test rate (monitor)", "always_pass_rate": "always-pass rate"}
    for ax, signal in zip(axes, COLLUSION_SIGNALS, strict=True):
        for mode, by_seed in curves.items():
            series = [c[signal] for c in by_seed.values() if c[signal]]
            if not series:
                continue
            length = min(len(s) for s in series)
            data = np.array([s[:length] for s in series], dtype=float)
            steps = np.asarray(next(iter(by_seed.values()))["step"][:length])
            with warnings.catch_warnings():  # a step without data in every seed: NaN, no line
                warnings.simplefilter("ignore", RuntimeWarning)
                mean = np.nanmean(data, axis=0)
                low, high = np.nanmin(data, axis=0), np.nanmax(data, axis=0)
            ax.plot(steps, mean, label=f"{mode} (mean of {len(series)})")
            ax.fill_between(steps, low, high, alpha=0.2)
        ax.set_title(titles[signal], fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Self-collusion signals over training (band: min-max over seeds)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# --------------------------------------------------------------------------------------------


def earlier_timings(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The measured timings of an earlier invocation with the same ``--out`` (by kind and seed).

    A rerun skips the runs already trained; their times, measured when they were trained, are
    taken from the earlier ``timings.json`` (marked ``"earlier": true``) so that ``results.json``
    and the estimate keep them. Entries that were themselves skipped are not measurements.

    Args:
        path: The earlier ``timings.json`` (absent: nothing earlier).

    Returns:
        ``{(kind, seed): timing}`` for every measured entry of the file.

    Raises:
        ValueError: The file is not a JSON list of timing objects (its path in the message).

    """
    if not path.is_file():
        return {}
    try:
        entries = json.loads(path.read_text())
        if not isinstance(entries, list):
            raise TypeError("not a list")
        return {
            (str(t["kind"]), int(t["seed"])): {**t, "earlier": True}
            for t in entries
            if not t.get("skipped")
        }
    except (ValueError, TypeError, KeyError) as error:
        raise ValueError(f"{path}: not a list of timings from this script ({error})") from error


def main() -> None:
    """Train, evaluate and write the comparison (see the module docstring)."""
    from agents.training.presets import PRESETS

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument(
        "--steps", type=int, default=None, help=f"RL steps (preset: {PRESET_FULL['steps']})"
    )
    parser.add_argument(
        "--sft-steps",
        type=int,
        default=None,
        help=(
            f"warm-start steps per role (preset: {PRESET_FULL['coder']} coder, "
            f"{PRESET_FULL['tester']} tester)"
        ),
    )
    parser.add_argument(
        "--self-play-lr",
        type=float,
        default=None,
        help=(
            "RL learning rate of self-play's one model (preset: the coder's lr, "
            f"{PRESETS['tiny']['lr']:g}; Code-A1's tester trains at "
            f"{PRESETS['tiny']['tester_lr']:g})"
        ),
    )
    parser.add_argument("--eval-problems", type=int, default=48, help="held-out problems")
    parser.add_argument("--samples", type=int, default=4, help="samples per problem")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (processes)")
    parser.add_argument("--out", default="runs/paper_table")
    parser.add_argument(
        "--from-results",
        metavar="DIR",
        default=None,
        help="only recompute DIR/results.json's paired intervals and rewrite DIR/table.md "
        "(no training, no evaluation)",
    )
    args = parser.parse_args()
    if args.from_results is not None:
        print(rewrite_from_results(Path(args.from_results)))
        return
    if args.jobs < 1:
        parser.error("--jobs must be >= 1")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    per_seed: dict[int, list[dict]] = {}
    timings: list[dict[str, Any]] = []
    earlier = earlier_timings(out / "timings.json")
    executor: Any = (
        ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn"))
        if args.jobs > 1
        else _Inline()
    )

    def collect(result: dict[str, Any]) -> None:
        result = dict(result)
        rows = result.pop("rows", None)
        if result.get("skipped"):  # trained earlier: keep the time measured then
            result = earlier.get((result["kind"], result["seed"]), result)
        timings.append(result)
        (out / "timings.json").write_text(json.dumps(timings, indent=2))
        if rows is not None:  # after every seed: partial results survive
            per_seed[result["seed"]] = rows
            write_outputs(out, dict(sorted(per_seed.items())), args.samples, {"timings": timings})

    def start(kind: str, seed: int) -> Future[dict[str, Any]]:
        if kind == "eval":
            return executor.submit(evaluate_seed, seed, out, args)
        return executor.submit(train_row, kind, seed, out, args)

    try:
        wall = schedule(args.seeds, args.jobs, start=start, on_done=collect)
    finally:  # after a failed run: the queued ones do not start
        executor.shutdown(cancel_futures=True)
    guess = estimate(timings, 5, args.jobs)
    table = write_outputs(
        out,
        dict(sorted(per_seed.items())),
        args.samples,
        {"timings": timings, "estimate": guess},
    )
    print(table)
    print(format_paired(paired_differences(per_seed)))
    for t in sorted(timings, key=lambda t: (t["seed"], ORDER[t["kind"]])):
        extra = " (already trained)" if t.get("skipped") else ""
        if t["kind"] != "eval" and not t.get("skipped"):
            extra = f" (warm start {t['warm_seconds']:.0f} s, {t['steps']} RL steps "
            extra += f"{t['rl_seconds']:.0f} s)"
        if t.get("earlier"):
            extra += " (measured when it was trained)"
        print(f"[timing] {t['kind']} seed {t['seed']}: {t['seconds']:.0f} s{extra}")
    if guess["this_config_seconds"] is not None:
        print(
            f"estimate, 5 seeds at --jobs {args.jobs}: {guess['this_config_seconds'] / 60:.1f} min "
            f"with these settings; {guess['full_seconds'] / 60:.1f} min with the preset's "
            f"({PRESET_FULL['coder']}+{PRESET_FULL['tester']} warm-start and "
            f"{PRESET_FULL['steps']} RL steps, 48 problems x 4 samples; per-step times of "
            f"this run extrapolated)"
        )
    print(f"total {wall:.0f} s; wrote {out}/table.md, results.json, comparison.png, collusion.png")


if __name__ == "__main__":
    main()
