"""Training-stability options in the trainer: config plumbing, role temperatures, collapse guard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")

from agents.evaluation.evaluate import EvalSettings, load_policy
from agents.training.config import TrainConfig, from_preset
from agents.training.metrics import read_metrics
from agents.training.rollout import Sample, micro_batches
from agents.training.trainer import Trainer, collapsed


def test_config_maps_to_env_stability_options_and_limits() -> None:
    cfg = TrainConfig.from_dict(
        {
            "curriculum": True,
            "curriculum_start": 0.2,
            "anonymize_code": True,
            "quality_filter": True,
            "book_capacity_total": 1500,
            "call_timeout_s": 1.5,
            "tester_temperature": 0.8,
            "coder_top_p": 0.9,
        }
    )
    options = cfg.stability
    assert options.curriculum and options.curriculum_schedule.start == 0.2
    assert options.anonymize_code and options.quality_filter
    assert options.book_capacity_total == 1500
    assert cfg.limits.call_timeout_s == 1.5
    assert cfg.rollout_temperature("tester") == 0.8
    assert cfg.rollout_temperature("coder") == cfg.temperature
    assert cfg.rollout_top_p("coder") == 0.9 and cfg.rollout_top_p("tester") == cfg.top_p


def test_collapse_guard() -> None:
    assert collapsed(["a", "a", "a"], [0.1, 0.5, 0.9])  # identical texts
    assert collapsed(["a", "b"], [0.5, 0.5])  # zero-variance rewards
    assert not collapsed(["a", "b"], [0.0, 1.0])


def test_micro_batches_never_mix_roles() -> None:
    samples = [
        Sample([1, 2], [3] * (i % 3 + 1), 0.0, "coder" if i % 2 else "tester") for i in range(9)
    ]
    chunks = list(micro_batches(samples, 4))
    assert all(len({s.role for s in chunk}) == 1 for chunk in chunks)
    assert sum(len(c) for c in chunks) == 9


@pytest.mark.slow
def test_short_run_with_every_stability_option(tmp_path: Path) -> None:
    cfg = from_preset(
        "nano",
        steps=2,
        output_dir=str(tmp_path / "run"),
        curriculum=True,
        curriculum_window=4,
        anonymize_code=True,
        quality_filter=True,
        always_pass_after=2,
        book_capacity_per_problem=4,
        book_capacity_total=50,
        book_refresh_every=1,
        tester_temperature=0.9,
        call_timeout_s=1.0,
        skip_collapsed_groups=True,
    )
    result = Trainer(cfg, log=lambda _m: None).train()
    assert result.steps == 2
    rows = read_metrics(tmp_path / "run" / "metrics.jsonl")
    for key in (
        "curriculum/level",
        "curriculum/running_pass_rate",
        "coder/collapsed_groups",
        "tester/collapsed_groups",
        "quality/trivial_tests",
    ):
        assert key in rows[-1], key
    assert rows[-1]["mistake_book/size"] <= 50


BEFORE_NESTING = Path(__file__).parent / "data" / "config_before_nesting.json"


def _as_before_nesting(data: dict[str, Any]) -> dict[str, Any]:
    """A nested ``config.json`` in the flat layout that runs wrote before the nesting."""
    flat = {k: v for k, v in data.items() if k not in ("stability", "limits")}
    stability = dict(data["stability"])
    flat |= {f"curriculum_{k}": v for k, v in stability.pop("curriculum_schedule").items()}
    flat |= stability
    flat |= {k: data["limits"][k] for k in ("call_timeout_s", "setup_timeout_s", "memory_mb")}
    old_keys = set(json.loads(BEFORE_NESTING.read_text()))
    assert old_keys <= set(flat), old_keys - set(flat)  # every old key has a flat spelling
    # fields added after the nesting (e.g. sft_lr_schedule) were not in such a file: left out,
    # they must load with their defaults
    return {k: v for k, v in flat.items() if k in old_keys}


def test_a_run_saved_before_the_nesting_resumes_and_loads_as_a_policy(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    options: dict[str, Any] = {"quality_filter": True, "always_pass_after": 2, "memory_mb": 512}
    first = from_preset("nano", steps=1, output_dir=str(run_dir), **options)
    Trainer(first, log=lambda _m: None).train()
    saved = run_dir / "config.json"
    old = _as_before_nesting(json.loads(saved.read_text()))
    saved.write_text(json.dumps(old, indent=2, sort_keys=True))
    # evaluation's checkpoint: spec reads the old file
    policy = load_policy(f"checkpoint:{run_dir}", None, EvalSettings())  # type: ignore[arg-type]
    assert policy.coder is not None and policy.tester is not None
    # resume with a bare command line: the saved (old, flat) config wins, rewritten nested
    logs: list[str] = []
    trainer = Trainer(from_preset("nano", steps=2, output_dir=str(run_dir)), log=logs.append)
    assert trainer.config == TrainConfig.from_dict({**old, "steps": 2})
    assert trainer.config.stability.quality_filter and trainer.config.limits.memory_mb == 512
    assert any("stability.quality_filter" in line for line in logs), logs
    result = trainer.train()
    assert trainer.resumed_from == 1 and result.steps == 2
    rewritten = json.loads(saved.read_text())
    assert rewritten["stability"]["always_pass_after"] == 2 and "quality_filter" not in rewritten
