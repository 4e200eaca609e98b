"""Training-stability options in the trainer: config plumbing, role temperatures, collapse guard."""

from __future__ import annotations

from pathlib import Path

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
