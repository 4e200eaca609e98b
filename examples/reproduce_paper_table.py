"""The paper's comparison at toy scale: base, golden, self-play and Code-A1 on procedural problems.

For each seed, three runs with the CPU preset (``tiny``: a ~10M-parameter Qwen2 built from config,
supervised warm start, then GRPO on ``procedural:SEED``):

* ``golden``: the coder rewarded by the GT tests (no tester);
* ``self-play``: one model plays both roles;
* ``code-a1``: two models, the coder and the tester trained against each other;
* ``base``: the Code-A1 run's warm-started models before RL (its ``step_0`` checkpoint).

All four rows are then evaluated with ``agents.evaluate`` on held-out problems of
``procedural-test:0`` (pass@k, avg@n, and for rows with a tester validity@k, mut@k,
discrimination, CURE's accuracy/p01/p00, best-of-N), and the script writes, under ``--out``:
``table.md`` (mean ± sample std over seeds, the paper's layout), ``results.json`` (every seed),
``comparison.png`` (bars with std error bars) and each run's ``report/`` (``codea1 report``).

Full run (not for CI), with the preset's own warm start (600 coder steps, 400 tester steps) and 60
RL steps per run; a shorter warm start leaves the base coder too weak to compare anything (200
steps: pass@1 near 0 for every row). Measured time is in the README::

    PYTHONPATH=. python examples/reproduce_paper_table.py --seeds 0 1 2 --out runs/paper_table

Smoke run (1 seed, a few steps, a few minutes)::

    PYTHONPATH=. python examples/reproduce_paper_table.py --seeds 0 --steps 2 --sft-steps 20 \\
        --eval-problems 8 --samples 2 --out /tmp/paper_table_smoke
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

MODES = ("golden", "self-play", "code-a1")
ROWS = ("base", "golden", "self-play", "code-a1")
SHOWN = ("pass@1", "avg@{n}", "validity@5", "mut@5", "discrimination", "best_of_8")


def train_row(mode: str, seed: int, out: Path, args: argparse.Namespace) -> Path:
    """Train one run (skipped when its summary.json exists) and return its run directory."""
    from agents.config import from_preset
    from agents.trainer import Trainer

    run_dir = out / f"{mode}__seed{seed}"
    if (run_dir / "summary.json").is_file():
        print(f"[{mode} seed {seed}] already trained: {run_dir}", flush=True)
        return run_dir
    overrides: dict[str, Any] = {
        "mode": mode,
        "seed": seed,
        "problems": f"procedural:{seed}",
        "output_dir": str(run_dir),
        "eval_before_after": False,
        "progress_bar": False,
        "tensorboard": False,
        # keep step_0 (the base row) and the final checkpoint only
        "checkpoint_every": 10**6,
        "keep_checkpoints": 2,
    }
    if args.steps is not None:
        overrides["steps"] = args.steps
    if args.sft_steps is not None:
        overrides["sft_steps"] = args.sft_steps
        overrides["sft_tester_steps"] = args.sft_steps
    config = from_preset("tiny", **overrides)
    started = time.perf_counter()
    Trainer(config, log=lambda line: print(f"[{mode} seed {seed}] {line}", flush=True)).train()
    print(f"[{mode} seed {seed}] trained in {time.perf_counter() - started:.0f} s", flush=True)
    return run_dir


def evaluate_seed(runs: dict[str, Path], seed: int, args: argparse.Namespace) -> list[dict]:
    """Evaluate the four rows of one seed on the held-out problems."""
    from agents.evaluate import EvalSettings, evaluate_policies, select_problems
    from codea1_env.problems import ProceduralSource

    problems = select_problems(ProceduralSource(seed=0, split="test"), args.eval_problems)
    specs = [f"base=checkpoint:{runs['code-a1'] / 'checkpoints' / 'step_0'}"]
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
    return evaluate_policies(specs, problems, settings, progress=print)


def write_outputs(out: Path, per_seed: dict[int, list[dict]], samples: int) -> str:
    """Write table.md, results.json and comparison.png; return the table."""
    from agents.evaluate import summarize_seeds

    summary = summarize_seeds(list(per_seed.values()))
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
    (out / "table.md").write_text(
        f"# Toy Code-A1 comparison (procedural family, CPU preset)\n\nSeeds: {seeds}. "
        f"Held-out problems: procedural-test:0. Cells: mean ± sample std over seeds.\n\n"
        f"{table}\n"
    )
    (out / "results.json").write_text(json.dumps({str(s): r for s, r in per_seed.items()}))
    _plot(out / "comparison.png", per_seed, keys)
    return table


def _plot(path: Path, per_seed: dict[int, list[dict]], keys: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4), dpi=110)
    width = 0.8 / len(ROWS)
    for r_index, name in enumerate(ROWS):
        means, errors = [], []
        for key in keys:
            section = "code" if key.startswith(("pass@", "avg@")) else "tests"
            values = [
                float(v)
                for rows in per_seed.values()
                for row in rows
                if row["name"] == name and (v := (row.get(section) or {}).get(key)) is not None
            ]
            means.append(statistics.fmean(values) if values else 0.0)
            errors.append(statistics.stdev(values) if len(values) > 1 else 0.0)
        xs = [i + (r_index - 1.5) * width for i in range(len(keys))]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=None, help="RL steps (preset: 60)")
    parser.add_argument(
        "--sft-steps",
        type=int,
        default=None,
        help="warm-start steps per role (preset: 600 coder, 400 tester)",
    )
    parser.add_argument("--eval-problems", type=int, default=48, help="held-out problems")
    parser.add_argument("--samples", type=int, default=4, help="samples per problem")
    parser.add_argument("--out", default="runs/paper_table")
    args = parser.parse_args()

    from agents.report import write_report

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    per_seed: dict[int, list[dict]] = {}
    for seed in args.seeds:
        runs = {mode: train_row(mode, seed, out, args) for mode in MODES}
        for run_dir in runs.values():
            write_report(run_dir, duels=0)
        per_seed[seed] = evaluate_seed(runs, seed, args)
        write_outputs(out, per_seed, args.samples)  # after every seed: partial results survive
    table = write_outputs(out, per_seed, args.samples)
    print(table)
    print(f"total {time.perf_counter() - started:.0f} s; wrote {out}/table.md, comparison.png")


if __name__ == "__main__":
    main()
