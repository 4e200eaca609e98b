"""``benchmarks/bench_generation.py``: our sampling loop timed beside two transformers anchors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_generation.py"


pytestmark = pytest.mark.requires("torch", "transformers")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_a_tiny_cpu_run_reports_every_way_on_every_shape() -> None:
    done = _run("--shapes", "coder:2,tester:3", "--max-new-tokens", "3", "--repeats", "2")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)  # stdout holds the JSON alone
    assert report["device"] == "cpu" and report["tf32"] is False
    assert report["layers"] == 28 and report["vocab_size"] == 4096
    assert [(s["role"], s["batch"], s["dtype"]) for s in report["shapes"]] == [
        ("coder", 2, "float32"),
        ("tester", 3, "float32"),
    ]
    for shape in report["shapes"]:
        ways = shape["ms_per_step"]
        assert set(ways) == {"ours", "bare", "hf_generate"}
        assert all(len(runs) == 2 for runs in shape["ms_per_step_runs"].values())
        assert all(ms > 0 for ms in ways.values())
        assert shape["ours_over_bare"] == round(ways["ours"] / ways["bare"], 3)
        assert shape["ours_over_hf_generate"] == round(ways["ours"] / ways["hf_generate"], 3)
        assert shape["prompt_tokens_mean"] > 20  # the chat-style prompts, not empty ones


def test_a_malformed_shape_is_refused_by_name() -> None:
    done = _run("--shapes", "coder:2,judge:4")
    assert done.returncode == 2
    assert "'judge:4' is not role:batch" in done.stderr
    done = _run("--shapes", "tester:0")
    assert done.returncode == 2
    assert "'tester:0' is not role:batch" in done.stderr
