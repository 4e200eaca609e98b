"""The toy comparison's pure parts (bootstrap, pairs, schedule, collusion) and Trainer(init_from)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def table() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reproduce_paper_table", ROOT / "examples" / "reproduce_paper_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclass-free, but keeps pickling by name possible
    spec.loader.exec_module(module)
    return module


def test_bootstrap_of_constant_differences_has_zero_width(table: ModuleType) -> None:
    ci = table.bootstrap_mean_ci([0.25] * 5)
    assert ci == {"mean": 0.25, "low": 0.25, "high": 0.25, "n": 5}


def test_bootstrap_interval_contains_the_mean_and_is_reproducible(table: ModuleType) -> None:
    values = [0.0, 1.0, 2.0, 3.0, 4.0]
    ci = table.bootstrap_mean_ci(values)
    assert ci["mean"] == pytest.approx(2.0)
    assert ci["low"] < 2.0 < ci["high"]
    assert 0.0 <= ci["low"] and ci["high"] <= 4.0
    # the same numbers as a direct NumPy percentile bootstrap with the documented seed
    rng = np.random.default_rng(0)
    means = np.asarray(values)[rng.integers(0, 5, size=(10_000, 5))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    assert (ci["low"], ci["high"]) == (pytest.approx(low), pytest.approx(high))
    assert table.bootstrap_mean_ci(values) == ci
    # the normal approximation of the mean's 95% interval: 2 ± 1.96 * sqrt(2 / 5)
    assert ci["low"] == pytest.approx(2 - 1.96 * math.sqrt(2 / 5), abs=0.25)
    with pytest.raises(ValueError):
        table.bootstrap_mean_ci([])


def _row(name: str, pass1: float, validity: float | None = None) -> dict:
    tests = None if validity is None else {"validity@5": validity, "mut@5": 0.5}
    return {"name": name, "code": {"pass@1": pass1}, "tests": tests}


def test_paired_differences_pair_seeds_and_skip_missing_metrics(table: ModuleType) -> None:
    per_seed = {
        0: [_row("base", 0.4, 0.2), _row("self-play-base", 0.2, 0.4), _row("golden", 0.5),
            _row("self-play", 0.3, 0.3), _row("code-a1", 0.6, 0.25)],
        1: [_row("base", 0.2, 0.1), _row("self-play-base", 0.3, 0.1), _row("golden", 0.3),
            _row("self-play", 0.1, 0.2), _row("code-a1", 0.5, 0.15)],
    }  # fmt: skip
    pairs = {(p["row"], p["baseline"], p["metric"]): p for p in table.paired_differences(per_seed)}
    golden = pairs[("code-a1", "golden", "pass@1")]
    assert golden["seeds"] == [0, 1] and golden["differences"] == pytest.approx([0.1, 0.2])
    assert golden["mean"] == pytest.approx(0.15)
    assert golden["low"] <= golden["mean"] <= golden["high"]
    validity = pairs[("code-a1", "self-play", "validity@5")]
    assert validity["mean"] == pytest.approx(-0.05)
    assert validity["low"] == pytest.approx(validity["high"])  # the same difference twice
    assert pairs[("code-a1", "base", "discrimination")]["n"] == 0  # no row has it
    own_rl = pairs[("self-play", "self-play-base", "pass@1")]  # what self-play's RL itself did
    assert own_rl["differences"] == pytest.approx([0.1, -0.2])
    assert "| code-a1 − golden | pass@1 | +0.150 [" in table.format_paired(list(pairs.values()))


def test_mutation_support_names_the_suites_behind_mut_at_5(table: ModuleType) -> None:
    def row(name: str, kept: int) -> dict:
        return {"name": name, "tests": {"mut@5_suites": kept, "suites": 192}}

    per_seed = {0: [row("base", 8), row("code-a1", 12)], 1: [row("base", 0), row("code-a1", 3)]}
    text = table.mutation_support(per_seed)
    assert "base 8, 0 of 192" in text and "code-a1 12, 3 of 192" in text
    assert "self-play" not in text  # no rows, nothing claimed


def test_schedule_simulation_follows_the_dependencies(table: ModuleType) -> None:
    durations = {"code-a1": 10.0, "self-play": 8.0, "golden": 5.0, "eval": 1.0}
    assert table.schedule([0], 1, durations=durations) == pytest.approx(24.0)
    # two slots: code-a1 and self-play at 0; golden after code-a1 (10-15), then eval (15-16)
    assert table.schedule([0], 2, durations=durations) == pytest.approx(16.0)
    two_seeds = table.schedule([0, 1], 2, durations=durations)
    assert 24.0 <= two_seeds <= 2 * 16.0
    with pytest.raises(ValueError):
        table.schedule([0], 1)


def test_collusion_rates_and_summary(table: ModuleType, tmp_path: Path) -> None:
    rows = [
        {"step": s, "monitor/tests": 4.0, "monitor/trivial_constant": float(s <= 2) * 2,
         "monitor/trivial_tautology": 0.0, "tester/valid_failure_rate": 0.25,
         "tester/valid_share": 0.5}
        for s in range(1, 5)
    ] + [{"step": 5, "monitor/tests": 0.0, "tester/valid_failure_rate": 0.0,
          "tester/valid_share": 0.0},
         {"step": 6, "coder/reward": 1.0}]  # fmt: skip
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rates = table.collusion_rates(path)
    assert rates["step"] == [1.0, 2.0, 3.0, 4.0, 5.0]  # step 6 logged no tester metrics
    assert rates["trivial_rate"][:4] == [0.5, 0.5, 0.0, 0.0] and math.isnan(
        rates["trivial_rate"][4]
    )
    assert rates["always_pass_rate"][:4] == [0.75] * 4  # 1 - valid_failure_rate
    assert math.isnan(rates["always_pass_rate"][4])  # no valid test at step 5
    summary = table.collusion_summary({"self-play": {0: rates}}, window=2)
    assert summary["self-play"]["trivial_rate"] == {"first": 0.5, "last": 0.0, "seeds": 1}
    assert table.collusion_rates(tmp_path / "missing.jsonl")["step"] == []


def test_trainer_init_from_starts_from_another_runs_weights(tmp_path: Path) -> None:
    from agents.training.config import from_preset
    from agents.training.trainer import Trainer

    a1 = from_preset(
        "nano", mode="code-a1", steps=0, sft_steps=2, sft_tester_steps=2,
        output_dir=str(tmp_path / "a1"),
    )  # fmt: skip
    Trainer(a1, log=lambda _line: None).train()
    step_0 = tmp_path / "a1" / "checkpoints" / "step_0"
    golden = from_preset("nano", mode="golden", steps=1, output_dir=str(tmp_path / "golden"))
    lines: list[str] = []
    Trainer(golden, log=lines.append, init_from=step_0).train()
    assert any("init: started from" in line for line in lines)
    assert not any("warm start" in line for line in lines)
    warm = json.loads((tmp_path / "golden" / "warm_start.json").read_text())
    assert warm == {"init/from_step": 0.0}
    start = torch.load(tmp_path / "golden" / "checkpoints" / "step_0" / "coder_model.pt")
    source = torch.load(step_0 / "coder_model.pt")
    assert start.keys() == source.keys()
    assert all(torch.equal(start[k], source[k]) for k in source)
    with pytest.raises(FileNotFoundError, match="shared_model.pt"):
        selfplay = from_preset("nano", mode="self-play", output_dir=str(tmp_path / "sp"))
        Trainer(selfplay, log=lambda _line: None, init_from=step_0).train()


def test_a_rerun_keeps_the_times_measured_when_the_runs_were_trained(
    table: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "timings.json"
    assert table.earlier_timings(path) == {}
    path.write_text(
        json.dumps(
            [
                {"kind": "code-a1", "seed": 0, "seconds": 634.0, "skipped": False},
                {"kind": "golden", "seed": 0, "seconds": 0.0, "skipped": True},
            ]
        )
    )
    earlier = table.earlier_timings(path)
    assert earlier == {
        ("code-a1", 0): {"kind": "code-a1", "seed": 0, "seconds": 634.0, "skipped": False,
                         "earlier": True}
    }  # fmt: skip
    path.write_text('{"kind": "eval"}')
    with pytest.raises(ValueError, match="timings.json"):
        table.earlier_timings(path)


def _trained(run_dir: Path, lr: float, tester_lr: float | None) -> None:
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps({"lr": lr, "tester_lr": tester_lr}))
    (run_dir / "summary.json").write_text("{}")


def test_the_learning_rates_are_read_from_the_runs(table: ModuleType, tmp_path: Path) -> None:
    for seed, self_play_lr in ((0, 5e-5), (1, 5e-4)):
        _trained(tmp_path / f"code-a1__seed{seed}", 5e-5, 5e-4)
        _trained(tmp_path / f"self-play__seed{seed}", self_play_lr, 5e-4)
    rates = table.learning_rates(tmp_path, [0, 1])
    assert rates == {
        "code-a1 coder": [5e-5],
        "code-a1 tester": [5e-4],
        "self-play model": [5e-5, 5e-4],
    }
    assert table.format_rates(rates) == (
        "code-a1 coder 5e-05; code-a1 tester 0.0005; self-play model 5e-05/0.0005"
    )
    assert table.format_rates({}) == "unknown"


def test_a_run_trained_at_another_self_play_lr_is_not_reused(
    table: ModuleType, tmp_path: Path
) -> None:
    _trained(tmp_path / "self-play__seed0", 5e-5, 5e-4)
    args = argparse.Namespace(self_play_lr=5e-4, steps=None, sft_steps=None)
    with pytest.raises(SystemExit, match="trained at lr 5e-05, not --self-play-lr 0.0005"):
        table.train_row("self-play", 0, tmp_path, args)
    same = argparse.Namespace(self_play_lr=5e-5, steps=None, sft_steps=None)
    assert table.train_row("self-play", 0, tmp_path, same)["skipped"] is True
    # the other modes never look at it
    _trained(tmp_path / "code-a1__seed0", 5e-5, 5e-4)
    assert table.train_row("code-a1", 0, tmp_path, args)["skipped"] is True
