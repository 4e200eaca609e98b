"""Kill ``codea1 train`` with SIGKILL after a checkpoint, rerun the same command, lose nothing.

The resumed run must (1) say it resumes from the last checkpoint, (2) leave a metrics log with
every step exactly once, and (3) end with exactly the parameters, optimizer moments and mistake
book of an uninterrupted run with the same seed. (3) holds because every piece of state is in the
checkpoint (models, optimizers, schedulers, Python/NumPy/torch RNGs, the problem sampler, the
mistake book snapshot), rollouts are seeded per step, and the nano preset runs torch on one
thread, where CPU kernels are deterministic.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import torch

from agents.training.checkpoint import latest_checkpoint
from agents.training.metrics import read_metrics

pytestmark = pytest.mark.slow(seconds=60)

STEPS = 6


def command(run_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "agents.cli",
        "train",
        "--preset",
        "nano",
        "--seed",
        "3",
        "--steps",
        str(STEPS),
        "--checkpoint-every",
        "2",
        "--output-dir",
        str(run_dir),
    ]


def env() -> dict[str, str]:
    out = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    out["PYTHONPATH"] = root + os.pathsep + out.get("PYTHONPATH", "")
    return out


def run_to_end(run_dir: Path) -> str:
    done = subprocess.run(
        command(run_dir), env=env(), capture_output=True, text=True, timeout=500, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def test_sigkill_then_same_command_resumes_exactly(tmp_path: Path) -> None:
    killed_dir, clean_dir = tmp_path / "killed", tmp_path / "clean"

    # 1. Start, wait for the first RL checkpoint (step 2), SIGKILL the whole process group.
    proc = subprocess.Popen(
        command(killed_dir),
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline:
            latest = latest_checkpoint(killed_dir)
            if latest is not None and latest.name != "step_0":
                break
            assert proc.poll() is None, "training ended before it could be killed"
            time.sleep(0.2)
        else:
            pytest.fail("no checkpoint after step 0 within 400 s")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    resume_point = latest_checkpoint(killed_dir)
    assert resume_point is not None
    resume_step = int(resume_point.name.split("_")[1])
    assert 2 <= resume_step < STEPS

    # 2. The same command again: resumes from that checkpoint and finishes.
    log = run_to_end(killed_dir)
    assert f"resuming from checkpoint step_{resume_step}" in log
    steps = [row["step"] for row in read_metrics(killed_dir / "metrics.jsonl")]
    assert steps == list(range(1, STEPS + 1))  # no step missing, none duplicated

    # 3. An uninterrupted run with the same seed ends in the same state.
    clean_log = run_to_end(clean_dir)
    assert "resuming" not in clean_log
    final_a, final_b = (
        killed_dir / "checkpoints" / f"step_{STEPS}",
        clean_dir / "checkpoints" / f"step_{STEPS}",
    )
    for name in ("coder_model.pt", "tester_model.pt", "coder_optimizer.pt", "tester_optimizer.pt"):
        a = torch.load(final_a / name, weights_only=False)
        b = torch.load(final_b / name, weights_only=False)
        assert_same(a, b, name)
    assert (final_a / "mistake_book.json").read_text() == (
        final_b / "mistake_book.json"
    ).read_text()
    rows_a = read_metrics(killed_dir / "metrics.jsonl")
    rows_b = read_metrics(clean_dir / "metrics.jsonl")
    for key in ("coder/reward", "tester/reward", "losses/coder_pg_loss", "mistake_book/size"):
        assert [r.get(key) for r in rows_a] == [r.get(key) for r in rows_b], key


def assert_same(a: object, b: object, where: str) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            assert_same(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def test_a_resume_from_what_is_left_of_a_damaged_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """config.json lost, a --steps below the checkpoint, a damaged checkpoint file."""
    import json
    import shutil

    from agents.commands.cli import main

    def train(run_dir: Path, *flags: str) -> tuple[int, str]:
        argv = ["train", "--preset", "nano", "--steps", "2", "--checkpoint-every", "1"]
        status = main([*argv, "--no-eval-before-after", "--output-dir", str(run_dir), *flags])
        return status, capsys.readouterr().err

    base = tmp_path / "base"
    assert train(base)[0] == 0
    lr = json.loads((base / "config.json").read_text())["lr"]

    # config.json lost: the checkpoint's copy is the saved config (a changed flag is ignored)
    lost = tmp_path / "lost"
    shutil.copytree(base, lost)
    (lost / "config.json").unlink()
    status, err = train(lost, "--steps", "3", "--lr", "0.5")
    assert status == 0, err
    assert "config.json is missing; using" in err and "step_2/config.json" in err
    assert "ignoring changed fields: lr" in err
    saved = json.loads((lost / "config.json").read_text())
    assert saved["lr"] == lr and saved["steps"] == 3

    # --steps below the checkpoint's step: said, and config.json says where the run ends
    fewer = tmp_path / "fewer"
    shutil.copytree(base, fewer)
    status, err = train(fewer, "--steps", "1")
    assert status == 0, err
    assert "the run is at step 2, past steps=1; it ends there" in err
    assert json.loads((fewer / "config.json").read_text())["steps"] == 2

    # a damaged checkpoint file: one line naming it, exit status 2
    damaged = tmp_path / "damaged"
    shutil.copytree(base, damaged)
    state = damaged / "checkpoints" / "step_2" / "trainer_state.pt"
    state.write_bytes(state.read_bytes()[:-100])
    status, err = train(damaged, "--steps", "3")
    assert status == 2 and "Traceback" not in err
    assert "CheckpointError" in err and "step_2/trainer_state.pt cannot be loaded" in err
    said = [line for line in err.splitlines() if "cannot be loaded" in line]
    assert len(said) == 1 and said[0].endswith(
        "remove checkpoints/step_2 to resume from the checkpoint before it"
    ), err
