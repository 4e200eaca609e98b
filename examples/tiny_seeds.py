"""The first command on several seeds: how often the ``tiny`` preset shows the Code-A1 dynamics.

One run of ``codea1 train --preset tiny`` is one sample of a chaotic warm start
(docs/tiny_preset.md), so this script runs the same command on several seeds, two at a time on
2 cores (one torch thread each), and tabulates each run's ``summary.json``: the before/after
evaluation and, per seed, whether the tester's adversarial rate and validity each rose by at
least 0.05 and the coder's held-out GT pass rate did not fall. Runs that finished are read
back, not retrained; an interrupted run resumes from its checkpoint. Arguments after ``--``
go to ``codea1 train``::

    python examples/tiny_seeds.py --seeds 0 1 2 3 4 --jobs 2 --out runs/tiny_seeds
    python examples/tiny_seeds.py --seeds 0 1 --out runs/tiny_seeds_lr -- --tester-lr 5e-4

Writes ``OUT/seeds.md`` (the table) and ``OUT/seeds.json`` (every seed's before/after and the
criteria), and prints the table. Each seed takes 13-20 minutes with two at a time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agents.training.heldout_eval import SUMMARY_ROWS

CRITERIA: tuple[tuple[str, str, float], ...] = (
    ("tester/adversarial", "adversarial +0.05", 0.05),
    ("tester/validity", "validity +0.05", 0.05),
    ("coder/gt_pass_rate", "coder not falling", 0.0),
)
"""(summary key, label, least change) of each criterion: after minus before must be >= it."""


def seed_row(seed: int, summary: Mapping[str, Any]) -> dict[str, Any]:
    """One seed's before/after/change per summary key and which criteria it meets.

    Args:
        seed: The run's seed.
        summary: The run's ``summary.json`` (its ``before`` and ``after`` evaluations).

    Raises:
        ValueError: the summary lacks ``before`` or ``after`` or a criterion's key.
    """
    before, after = summary.get("before"), summary.get("after")
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        raise ValueError(f"seed {seed}: summary.json has no 'before'/'after' evaluation")
    change = {k: after[k] - before[k] for k, _ in SUMMARY_ROWS if k in before and k in after}
    missing = [key for key, _, _ in CRITERIA if key not in change]
    if missing:
        raise ValueError(f"seed {seed}: summary.json lacks {missing}")
    # 1e-9: 0.35 - 0.30 is 0.04999999999999999 in floating point, and means a change of +0.05
    met = {label: change[key] >= least - 1e-9 for key, label, least in CRITERIA}
    return {
        "seed": seed,
        "before": dict(before),
        "after": dict(after),
        "change": change,
        "met": met,
        "all": all(met.values()),
    }


def seeds_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table of :func:`seed_row` rows and a line counting the seeds per criterion."""
    keys = [key for key, _, _ in CRITERIA]
    head = "| seed | " + " | ".join(f"{k} before | Δ" for k in keys) + " | all met |"
    lines = [head, "|---:|" + "---:|---:|" * len(keys) + ":---:|"]
    for row in rows:
        cells = [f"{row['before'][k]:.3f} | {row['change'][k]:+.3f}" for k in keys]
        lines.append(
            f"| {row['seed']} | " + " | ".join(cells) + f" | {'yes' if row['all'] else 'no'} |"
        )
    n = len(rows)
    counts = [f"{label}: {sum(r['met'][label] for r in rows)} of {n}" for _, label, _ in CRITERIA]
    lines.append("")
    lines.append(
        "Seeds meeting each criterion: "
        + "; ".join(counts)
        + f"; all three: {sum(r['all'] for r in rows)} of {n}."
    )
    return "\n".join(lines)


def run_seed(seed: int, out: Path, extra: Sequence[str]) -> dict[str, Any]:
    """Train (or resume, or read back) one seed's run and return its :func:`seed_row`."""
    run_dir = out / f"seed_{seed}"
    summary_file = run_dir / "summary.json"
    if not summary_file.exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "agents.commands.cli",
            "train",
            "--preset",
            "tiny",
            "--seed",
            str(seed),
            "--output-dir",
            str(run_dir),
            "--no-progress-bar",
            "--num-threads",  # one core per run (the first command uses the preset's 2)
            "1",
            *extra,
        ]
        started = time.perf_counter()
        print(f"seed {seed}: training ({run_dir / 'train.log'})", flush=True)
        with open(run_dir / "train.log", "ab") as log:
            done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"seed {seed}: codea1 train exited {done.returncode}; see {run_dir / 'train.log'}"
            )
        print(f"seed {seed}: done in {time.perf_counter() - started:.0f} s", flush=True)
    return seed_row(seed, json.loads(summary_file.read_text()))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the seeds, write ``seeds.md`` and ``seeds.json``, print the table."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one core each)")
    parser.add_argument("--out", type=Path, default=Path("runs/tiny_seeds"))
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be >= 1")
    args.out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda s: run_seed(s, args.out, extra), args.seeds))
    table = seeds_table(rows)
    (args.out / "seeds.md").write_text(table + "\n")
    (args.out / "seeds.json").write_text(json.dumps({"extra_args": extra, "seeds": rows}, indent=2))
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
