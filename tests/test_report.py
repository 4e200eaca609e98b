"""codea1 report on a hand-built run directory: PNGs, the self-contained page, monitor flags."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from agents.commands import report_cli
from agents.evaluation.plots import is_report_plot
from agents.evaluation.report import (
    broke_the_code,
    ema,
    load_run,
    monitor_flags,
    pick_duels,
    plot_run,
    write_report,
)

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


@pytest.mark.requires("matplotlib")
def test_plots_are_pngs(tmp_path: Path) -> None:
    data = load_run(_fake_run(tmp_path / "run"))
    plots = plot_run(data.rows, tmp_path / "out")
    assert set(plots) == {"rewards", "pass_rate", "tester_rates", "mistake_book", "kl", "monitor"}
    for path in plots.values():
        assert path.read_bytes()[:8] == PNG_MAGIC
        assert path.stat().st_size > 5000  # a drawn figure, not an empty canvas


@pytest.mark.requires("matplotlib")
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


@pytest.mark.requires("matplotlib")
def test_report_says_what_the_monitor_totals_and_summary_rows_are(tmp_path: Path) -> None:
    run = _fake_run(tmp_path / "run")
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()[:-1]]
    for row in rows:
        row["losses/coder_approx_kl"] = 0.01
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = {"before": {"coder/all_gt_pass": 0.25}, "after": {"coder/all_gt_pass": 0.5}}
    (run / "summary.json").write_text(json.dumps(summary))
    text = write_report(run, duels=0).read_text()
    assert "summed over the 6 logged steps and all their problems" in text
    assert "monitor/early_exit: 2 in total over the logged steps" in text
    assert (
        "<td>coder/all_gt_pass</td><td>coder avg@k: share of samples passing all GT tests" in text
    )
    assert (run / "report" / "ppo_kl.png").is_file()  # the PPO estimate, apart from kl.png
    assert text.count("data:image/png;base64,") == 7


@pytest.mark.requires("matplotlib")
def test_report_without_duels_or_flags_says_so(tmp_path: Path) -> None:
    run = _fake_run(tmp_path / "run", flagged_step=None)
    text = write_report(run, tmp_path / "elsewhere", duels=0).read_text()
    assert "nothing flagged" in text
    assert "No example duels" in text


@pytest.mark.requires("matplotlib")
def test_report_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    report_cli.add_arguments(parser)
    run = _fake_run(tmp_path / "run")
    assert report_cli.run(parser.parse_args([str(run), "--duels", "0"])) == 0
    out = capsys.readouterr().out
    assert "6 plots" in out and "monitor/early_exit=2" in out
    assert report_cli.run(parser.parse_args([str(tmp_path / "nope")])) == 2


@pytest.mark.requires("matplotlib")
def test_report_into_a_reused_folder_counts_and_keeps_only_its_own_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    report_cli.add_arguments(parser)
    out = tmp_path / "report"
    full = _fake_run(tmp_path / "run")
    assert report_cli.run(parser.parse_args([str(full), "--duels", "0", "--out", str(out)])) == 0
    assert "6 plots" in capsys.readouterr().out
    (out / "notes.png").write_bytes(b"not ours")  # a file of the user's is left alone
    kept = sorted(out.glob("*.png"))[0]  # and one the user saved over a plot's name
    assert kept.name != "rewards.png" and is_report_plot(kept)
    kept.write_bytes(PNG_MAGIC + b"the user's own figure")
    assert not is_report_plot(kept)
    small = tmp_path / "small"
    small.mkdir()
    rows = [{"step": s, "coder/reward": s / 10} for s in (1, 3, 5)]
    text = "\n".join(json.dumps(r) for r in rows[:2]) + "\nnot json\n" + json.dumps(rows[2])
    (small / "metrics.jsonl").write_text(text + "\n", encoding="utf-8")
    with pytest.warns(UserWarning) as caught:
        assert (
            report_cli.run(parser.parse_args([str(small), "--duels", "0", "--out", str(out)])) == 0
        )
    assert "1 plots" in capsys.readouterr().out
    assert sorted(p.name for p in out.glob("*.png")) == sorted(
        ["notes.png", "rewards.png", kept.name]
    )  # the earlier report's other plots are gone
    assert kept.read_bytes().endswith(b"the user's own figure")
    said = [str(w.message) for w in caught if "metrics.jsonl:3" in str(w.message)]
    assert len(said) == 1, said  # the bad line is reported once, not once per read of the run


# --- smoothing and before/after markers ----------------------------------------------------------


def test_ema_is_tensorboards_debiased_moving_average() -> None:
    # By hand, weight 0.6: last = 0.4 * 1 = 0.4, / (1 - 0.6) = 1.0;
    # last = 0.6 * 0.4 + 0.4 * 0 = 0.24, / (1 - 0.36) = 0.375;
    # last = 0.6 * 0.24 + 0.4 * 1 = 0.544, / (1 - 0.216) = 0.693877...
    assert ema([1.0, 0.0, 1.0], 0.6) == pytest.approx([1.0, 0.375, 0.544 / 0.784])
    # weight 0.9 on 0, 10: 1.0 / 0.19 = 5.263...
    assert ema([0.0, 10.0], 0.9) == pytest.approx([0.0, 1.0 / 0.19])
    assert ema([3.0, 1.0, 2.0], 0.0) == [3.0, 1.0, 2.0]  # no smoothing: the raw values
    assert ema([0.7] * 5) == [0.7] * 5  # a constant series stays exactly constant
    for weight in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match="smoothing"):
            ema([1.0, 2.0], weight)


@pytest.mark.requires("matplotlib")
def test_plotted_curves_are_smoothed_over_raw_with_eval_markers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.axes import Axes

    calls: list[tuple[Axes, list[float], list[float], dict[str, Any]]] = []
    original = Axes.plot

    def spy(self: Axes, *args: Any, **kwargs: Any) -> Any:
        calls.append((self, list(args[0]), list(args[1]), kwargs))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", spy)
    data = load_run(_fake_run(tmp_path / "run"))
    summary = {
        "before": {"coder/reward": 0.05, "tester/validity": 0.6},
        "after": {"coder/reward": 0.7, "tester/suites_with_failure": 0.5},  # the last: no curve
    }
    plot_run(data.rows, tmp_path / "out", smoothing=0.5, summary=summary)
    drawn = [(ax.get_title(), xs, ys, kw) for ax, xs, ys, kw in calls]  # titles set after lines
    rewards = [(xs, ys, kw) for title, xs, ys, kw in drawn if title == "Rewards"]
    raw = [0.1 * step for step in range(1, 7)]
    by_hand, last = [], 0.0
    for i, value in enumerate(raw, start=1):
        last = 0.5 * last + 0.5 * value
        by_hand.append(last / (1 - 0.5**i))
    assert by_hand[:2] == pytest.approx([0.1, (0.5 * 0.05 + 0.5 * 0.2) / 0.75])
    coder_lines = [(ys, kw) for xs, ys, kw in rewards if kw.get("color") == "C0"]
    (raw_ys, raw_kw), (smooth_ys, smooth_kw), *markers = coder_lines
    assert raw_ys == pytest.approx(raw) and raw_kw["alpha"] < 0.5  # the faint raw line
    assert smooth_ys == pytest.approx(by_hand) and smooth_kw["label"] == "coder/reward"
    points = {(kw["marker"], xs[0], ys[0]) for xs, ys, kw in rewards if "marker" in kw}
    assert points == {("o", 1.0, 0.05), ("*", 6.0, 0.7)}  # first and last step of the metric
    assert len(markers) == 2
    tester = [(xs, ys, kw) for title, xs, ys, kw in drawn if title.startswith("Tester")]
    rates = {(kw["marker"], xs[0], ys[0]) for xs, ys, kw in tester if "marker" in kw}
    assert rates == {("o", 1.0, 0.6)}  # tester/suites_with_failure has no curve to mark


# --- example duels -------------------------------------------------------------------------------


def _duel(task_id: str, passed: list[bool], source: str = "generated") -> dict[str, Any]:
    return {
        "task_id": task_id,
        "prompt": f"def {task_id.split('/')[-1]}(x):",
        "code": "def f(x):\n    return x",
        "tests": "\n".join(f"assert f({i}) == {i}" for i in range(len(passed))),
        "verdicts": [
            {"test": f"assert f({i}) == {i}", "valid": True, "passed": p, "source": source}
            for i, p in enumerate(passed)
        ],
        "coder_reward": sum(passed) / max(len(passed), 1),
        "tester_reward": 0.25,
    }


def test_pick_duels_shows_a_broken_code_duel_when_the_logs_hold_one() -> None:
    duels = [_duel(f"bank/ok{i}", [True, True]) for i in range(10)]
    duels.insert(2, _duel("bank/broken", [True, False, False]))
    duels.append(_duel("bank/replayed", [False], source="mistake_book"))  # not the tester's test
    assert broke_the_code(duels[2]) == 2 and broke_the_code(duels[-1]) == 0
    assert broke_the_code({"verdicts": "garbage"}) == 0
    shown = pick_duels(duels, 4)
    assert len(shown) == 4 and shown[0]["task_id"] == "bank/broken"  # in log order
    assert [d["task_id"] for d in shown[1:]] == ["bank/ok8", "bank/ok9", "bank/replayed"]
    assert pick_duels(duels, 1) == [duels[2]]
    assert pick_duels(duels, 0) == []
    assert [d["task_id"] for d in pick_duels(duels[3:], 2)] == ["bank/ok9", "bank/replayed"]


@pytest.mark.requires("matplotlib")
def test_report_table_holds_the_broken_duel_and_says_when_there_is_none(tmp_path: Path) -> None:
    run = _fake_run(tmp_path / "run")
    logged = [_duel(f"bank/ok{i}", [True]) for i in range(20)]
    logged.insert(5, _duel("bank/broken", [True, False]))
    (run / "duels.jsonl").write_text("".join(json.dumps(d) + "\n" for d in logged))
    text = write_report(run, duels=0, shown_duels=3).read_text()
    assert "bank/broken" in text and "tester broke the code: 1 kept test failed" in text
    assert "3 of 21 logged duels; the tester broke the code (a kept test failed) in 1" in text
    assert "bank/ok0<" not in text  # only the picked rows are shown
    assert "No logged duel in which a kept test failed" not in text
    (run / "duels.jsonl").write_text("".join(json.dumps(d) + "\n" for d in logged[:5]))
    text = write_report(run, duels=0).read_text()
    assert "No logged duel in which a kept test failed the code: in all 5 duels" in text
    assert "tester broke the code:" not in text


@pytest.mark.requires("matplotlib")
def test_report_escapes_model_text(tmp_path: Path) -> None:
    run = _fake_run(tmp_path / "run")
    evil = _duel("bank/<script>alert(1)</script>", [False])
    evil["code"] = "</pre><script>alert(2)</script>"
    (run / "duels.jsonl").write_text(json.dumps(evil) + "\n")
    text = write_report(run, duels=0).read_text()
    assert "<script>" not in text and "&lt;script&gt;alert(2)" in text


@pytest.mark.requires("matplotlib")
def test_report_cli_smoothing_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agents.evaluation.plots as plots

    seen: list[float] = []
    original = plots.ema

    def spy(values: Any, weight: float = plots.DEFAULT_SMOOTHING) -> list[float]:
        seen.append(weight)
        return original(values, weight)

    monkeypatch.setattr(plots, "ema", spy)
    parser = argparse.ArgumentParser()
    report_cli.add_arguments(parser)
    run = _fake_run(tmp_path / "run")
    assert parser.parse_args([str(run)]).smoothing == 0.6  # TensorBoard's default
    assert report_cli.run(parser.parse_args([str(run), "--duels", "0", "--smoothing", "0.9"])) == 0
    assert seen and set(seen) == {0.9}
    for path in (run / "report").glob("*.png"):
        assert path.read_bytes()[:8] == PNG_MAGIC
    assert {p.stem for p in (run / "report").glob("*.png")} >= {"rewards", "pass_rate"}
    for bad in ("1", "-0.5", "x"):
        with pytest.raises(SystemExit):
            parser.parse_args([str(run), "--smoothing", bad])


@pytest.mark.slow
@pytest.mark.requires("matplotlib", "torch", "transformers")
def test_report_plays_duels_on_a_procedural_family_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run on ``procedural:SEED:SPLIT:FAMILY`` (the tiny preset's spec) gets played duels.

    They are scored with the run's own scoring settings, not the defaults.
    """
    from agents.training.config import from_preset
    from agents.training.trainer import Trainer
    from codea1_env.scoring import referee as referee_module

    run = tmp_path / "run"
    cfg = from_preset(
        "nano",
        steps=1,
        problems="procedural:0:train:edge",
        eval_problems="procedural:0:test:edge",
        output_dir=str(run),
        equality="strict",
        inline="anywhere",
    )
    Trainer(cfg, log=lambda _m: None).train()
    assert not list(run.glob("duels*.jsonl"))  # so the report has to play them
    made: list[referee_module.Referee] = []

    class Recorded(referee_module.Referee):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(referee_module, "Referee", Recorded)
    text = write_report(run, duels=2).read_text()
    assert [r.reward_config for r in made] == [cfg.reward_config()]
    assert made[0].reward_config.equality == "strict" and made[0].limits == cfg.limits
    assert "none could be played" not in text
    assert "of 4 duels played with the latest checkpoint on held-out problems" in text
    # the held-out split of the edge family (ids from 1e9 on), as the run evaluated it
    assert "<td><b>proc/0/100000000" in text and "<b>proc/0/0</b>" not in text


@pytest.mark.requires("matplotlib")
def test_a_report_that_fails_midway_leaves_its_directory_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agents.evaluation.report as report

    run = _fake_run(tmp_path / "run")
    out = tmp_path / "r"
    first = write_report(run, out, duels=0)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def interrupted(*args: Any, **kwargs: Any) -> str:
        raise KeyboardInterrupt  # Ctrl-C after the plots, before the page

    monkeypatch.setattr(report, "render_html", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_report(run, out, duels=0, smoothing=0.0)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging
    fresh = tmp_path / "fresh"
    with pytest.raises(KeyboardInterrupt):
        write_report(run, fresh, duels=0)
    assert not fresh.exists() and first.is_file()


@pytest.mark.requires("matplotlib")
@pytest.mark.requires("torch")
def test_a_damaged_checkpoint_is_said_on_the_page_instead_of_failing_it(tmp_path: Path) -> None:
    from agents.training.config import from_preset

    run = _fake_run(tmp_path / "run")
    from_preset("nano").save(run / "config.json")  # built-in models: nothing to download
    step = run / "checkpoints" / "step_1"
    step.mkdir(parents=True)
    (step / "COMPLETE").write_text("")
    (step / "coder_model.pt").write_bytes(b"damaged")
    text = write_report(run, tmp_path / "r", duels=2).read_text()
    assert "none could be played" in text and "coder_model.pt cannot be loaded" in text
