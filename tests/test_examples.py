"""The examples and `codea1 duel` run as a user would run them (subprocesses, real sandbox)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, timeout: float = 300) -> str:
    proc = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(ROOT)},
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


def test_sb3_ppo_runs_on_the_token_env():
    out = run("examples/sb3_token_tester.py", "--timesteps", "512")
    assert "a trained tester's text" in out


def test_duel_cli_prints_a_table_and_json(tmp_path):
    out_json = tmp_path / "duels.json"
    out = run(
        "-m", "agents.cli", "duel", "--episodes", "16", "--batch", "8", "--json", str(out_json)
    )
    assert "coder" in out and "mutants caught" in out
    rows = json.loads(out_json.read_text())
    assert len(rows) == 16
    assert {"task_id", "candidate", "coder_reward", "tester_reward"} <= set(rows[0])
    gt_rows = [r for r in rows if r["candidate"] == "gt"]
    assert all(r["gt_pass_rate"] == 1.0 for r in gt_rows)
