"""codea1 report on a hand-built run directory: PNGs, the self-contained page, monitor flags."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from agents import report_cli
from agents.report import load_run, monitor_flags, plot_run, write_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _fake_run(root: Path, steps: int = 6, flagged_step: int | None = 3) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for step in range(1, steps + 1):
        row = {
            "step": step,
            "coder/reward": 0.1 * step,
            "tester/reward": 0.5 - 0.05 * step,
            "coder/gt_pass_rate": 0.1 * step,
            "tester/validity": 0.8,
            "tester/adversarial": 0.2,
            "mistake_book/size": float(step),
            "losses/coder_kl": 0.001 * step,
            "monitor/programs": 8.0,
            "monitor/early_exit": 2.0 if step == flagged_step else 0.0,
        }
        lines.append(json.dumps(row))
    lines.append('{"step": 7, "coder/rew')  # a torn last line
    (root / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    (root / "config.json").write_text(json.dumps({"mode": "code-a1", "seed": 0}))
    (root / "summary.json").write_text(
        json.dumps({"before": {"coder/gt_pass_rate": 0.1}, "after": {"coder/gt_pass_rate": 0.4}})
    )
    return root


def test_load_run_skips_torn_lines(tmp_path: Path) -> None:
    data = load_run(_fake_run(tmp_path / "run"))
    assert [r["step"] for r in data.rows] == [1, 2, 3, 4, 5, 6]
    assert data.config["mode"] == "code-a1"
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        load_run(tmp_path / "missing")


def test_plots_are_pngs(tmp_path: Path) -> None:
    data = load_run(_fake_run(tmp_path / "run"))
    plots = plot_run(data.rows, tmp_path / "out")
    assert set(plots) == {"rewards", "pass_rate", "tester_rates", "mistake_book", "kl", "monitor"}
    for path in plots.values():
        assert path.read_bytes()[:8] == PNG_MAGIC
        assert path.stat().st_size > 5000  # a drawn figure, not an empty canvas


def test_report_page_is_self_contained_and_flags_the_monitor(tmp_path: Path) -> None:
    run = _fake_run(tmp_path / "run")
    duel = {
        "task_id": "bank/clamp",
        "prompt": "def clamp(x, lo, hi):",
        "code": "def clamp(x, lo, hi):\n    return x",
        "tests": "assert clamp(5, 0, 3) == 3",
        "verdicts": [{"test": "assert clamp(5, 0, 3) == 3", "valid": True, "passed": False}],
        "coder_reward": 0.0,
        "tester_reward": 0.5625,
    }
    (run / "duels.jsonl").write_text(json.dumps(duel) + "\n")
    page = write_report(run, duels=0)
    text = page.read_text()
    assert page == run / "report" / "report.html"
    assert text.count("data:image/png;base64,") == 6
    assert "src='report" not in text and ".png'" not in text  # no external files
    assert "monitor/early_exit: 2 in total" in text
    assert "bank/clamp" in text and "FAIL" in text and "clamp(5, 0, 3)" in text
    assert "0.400" in text  # after-RL pass rate from summary.json
    assert monitor_flags(load_run(run).rows) == {"monitor/early_exit": 2.0}


def test_report_without_duels_or_flags_says_so(tmp_path: Path) -> None:
    run = _fake_run(tmp_path / "run", flagged_step=None)
    text = write_report(run, tmp_path / "elsewhere", duels=0).read_text()
    assert "nothing flagged" in text
    assert "No example duels" in text


def test_report_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    report_cli.add_arguments(parser)
    run = _fake_run(tmp_path / "run")
    assert report_cli.run(parser.parse_args([str(run), "--duels", "0"])) == 0
    out = capsys.readouterr().out
    assert "6 plots" in out and "monitor/early_exit=2" in out
    assert report_cli.run(parser.parse_args([str(tmp_path / "nope")])) == 2
