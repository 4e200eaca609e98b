"""The examples and `codea1 duel` run as a user would run them (subprocesses, real sandbox)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(ROOT), **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize(
    "script, expect",
    [
        ("examples/quickstart.py", "'tester'"),
        ("examples/custom_problem.py", "tester reward parts"),
        ("examples/pettingzoo_loop.py", "returns:"),
        ("examples/vector_env.py", "tester reward per group"),
        ("examples/stability_options.py", "what the tester saw (anonymized)"),
    ],
)
def test_example_runs(script, expect):
    assert expect in run(script)


@pytest.mark.requires("stable_baselines3", "torch")
def test_sb3_ppo_runs_on_the_token_env():
    out = run("examples/sb3_token_tester.py", "--timesteps", "512")
    assert "a trained tester's text" in out


def test_duel_cli_prints_a_table_and_json(tmp_path):
    out_json = tmp_path / "duels.json"
    out = run(
        "-m",
        "agents.cli",
        "duel",
        "--episodes",
        "16",
        "--batch",
        "8",
        "--json",
        str(out_json),
    )
    assert "coder" in out and "mutants caught" in out
    rows = json.loads(out_json.read_text())
    assert len(rows) == 16
    assert {"task_id", "candidate", "coder_reward", "tester_reward"} <= set(rows[0])
    gt_rows = [r for r in rows if r["candidate"] == "gt"]
    assert all(r["gt_pass_rate"] == 1.0 for r in gt_rows)


def test_duel_cli_in_golden_mode_counts_what_the_gt_tests_catch() -> None:
    from agents.commands.duel_cli import summary

    rows = [
        {"candidate": "gt", "failed": 0, "gt_pass_rate": 1.0, "coder_reward": 1.0},
        {"candidate": "swap@3", "failed": 0, "gt_pass_rate": 0.5, "coder_reward": 0.5},
        {"candidate": "neg@2", "failed": 0, "gt_pass_rate": 1.0, "coder_reward": 1.0},
    ]
    for row in rows:
        row["tester_reward"] = 0.0
    line = summary(rows, golden=True)
    assert "no tester (golden mode" in line and "caught by a GT test 1/2" in line
    assert "caught by a test 0/2" in summary(rows)  # no suite failed them


@pytest.mark.slow(seconds=120)
@pytest.mark.requires("torch", "transformers")
def test_reproduce_paper_table_smoke(tmp_path: Path) -> None:
    out_dir = tmp_path / "paper_table"
    # two seeds at a time (worker processes), 1 RL step, a tiny warm start, two problems
    out = run(
        "examples/reproduce_paper_table.py",
        *("--seeds", "0", "1", "--jobs", "2", "--steps", "1", "--sft-steps", "4"),
        *("--eval-problems", "2", "--samples", "1", "--out", str(out_dir)),
        timeout=900,
        env={"MPLCONFIGDIR": str(tmp_path / "mpl")},  # not the repo's HOME
    )
    assert "estimate, 5 seeds at --jobs 2" in out
    names = ("table.md", "results.json", "comparison.png", "collusion.png", "timings.json")
    for name in names:
        assert (out_dir / name).is_file(), name
    table = (out_dir / "table.md").read_text()
    assert "difference [95% t interval]" in table and "Self-collusion" in table
    results = json.loads((out_dir / "results.json").read_text())
    assert set(results["per_seed"]) == {"0", "1"}
    assert {"paired_differences", "self_collusion", "timings", "estimate"} <= set(results)
    pairs = {(p["row"], p["baseline"], p["metric"]) for p in results["paired_differences"]}
    assert ("code-a1", "golden", "pass@1") in pairs
    assert ("code-a1", "self-play", "discrimination") in pairs
    for entry in results["paired_differences"]:
        if entry["n"]:
            assert entry["low"] <= entry["mean"] <= entry["high"], entry
    collusion = results["self_collusion"]["summary"]
    assert set(collusion) == {"self-play", "code-a1"}
    assert {"first", "last", "seeds"} <= set(collusion["code-a1"]["trivial_rate"])
    curves = results["self_collusion"]["curves"]
    assert curves["code-a1"]["1"]["step"] == [1.0] and curves["self-play"]["0"]["step"] == [1.0]
    # golden started from code-a1's warm start instead of running its own
    warm = json.loads((out_dir / "golden__seed0" / "warm_start.json").read_text())
    assert warm == {"init/from_step": 0.0}
    assert results["estimate"]["full_seconds"] > 0
