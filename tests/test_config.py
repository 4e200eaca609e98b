"""TrainConfig, presets, CLI flags, checkpoint atomicity and the metrics log."""

from __future__ import annotations

import argparse
import dataclasses
import json
import warnings
from pathlib import Path

import pytest

from agents.commands.train_cli import add_arguments, build_config, run
from agents.training.checkpoint import (
    capture_rng_state,
    latest_checkpoint,
    list_checkpoints,
    restore_rng_state,
    write_checkpoint,
)
from agents.training.config import (
    PRESETS,
    TrainConfig,
    field_docs,
    from_preset,
    merge_config_dicts,
    nested_fields,
)
from agents.training.metrics import MetricsLogger, read_metrics
from codea1_env.problems.curriculum import CurriculumSchedule
from codea1_env.sandbox.base import Limits
from codea1_env.scoring.rewards import RewardConfig
from codea1_env.stability import StabilityOptions

BEFORE_NESTING = Path(__file__).parent / "data" / "config_before_nesting.json"
"""A ``config.json`` as runs wrote it before ``stability`` and ``limits`` were nested (written by
that code: ``from_preset("nano", ...)`` with every env option off its default), flat keys."""
OLD_FLAT_KEYS = (
    "curriculum",
    "curriculum_start",
    "curriculum_step",
    "curriculum_promote_at",
    "curriculum_window",
    "hard_only",
    "anonymize_code",
    "book_capacity_per_problem",
    "book_capacity_total",
    "book_refresh_every",
    "quality_filter",
    "always_pass_after",
    "call_timeout_s",
    "setup_timeout_s",
    "memory_mb",
)
"""The env options that were flat TrainConfig fields (and still are flags and accepted keys)."""


def parse(argv: list[str]) -> TrainConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return build_config(parser.parse_args(argv))


def test_defaults_are_the_papers_gpu_hyperparameters() -> None:
    cfg = TrainConfig()
    assert cfg.mode == "code-a1"
    assert (cfg.clip_low, cfg.clip_high, cfg.loss_aggregation) == (0.20, 0.28, "token-mean")
    assert (cfg.kl_coef, cfg.lr, cfg.lr_schedule, cfg.warmup_steps) == (0.001, 1e-6, "cosine", 10)
    assert (cfg.weight_decay, cfg.max_grad_norm) == (0.1, 1.0)
    assert (cfg.n_codes, cfg.n_suites, cfg.temperature, cfg.tester_group) == (8, 8, 1.0, "update_n")
    assert (cfg.alpha, cfg.k) == (0.5, 8)


def test_every_field_is_documented() -> None:
    docs = field_docs()
    names = [f.name for f in dataclasses.fields(TrainConfig)]
    assert [n for n in names if not docs.get(n)] == []


def test_presets_build_and_validate() -> None:
    for name in PRESETS:
        cfg = from_preset(name)
        assert isinstance(cfg, TrainConfig)
    assert from_preset("tiny").coder_model == "builtin:nano"
    assert from_preset("7b").coder_model == "Qwen/Qwen2.5-Coder-7B-Instruct"
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        from_preset("huge")


@pytest.mark.parametrize(
    ("field", "value"),
    [("mode", "solo"), ("n_codes", 0), ("alpha", 1.5), ("top_p", 0.0), ("clip_low", 1.0)],
)
def test_bad_values_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"TrainConfig.{field}"):
        TrainConfig(**{field: value})  # type: ignore[arg-type]


def test_every_nested_field_is_documented_and_keeps_its_flat_name() -> None:
    leaves = nested_fields()
    assert [name for name, leaf in leaves.items() if not leaf.doc] == []
    assert set(OLD_FLAT_KEYS) <= set(leaves)
    assert leaves["curriculum_start"].path == ("stability", "curriculum_schedule", "start")
    assert leaves["call_timeout_s"].path == ("limits", "call_timeout_s")
    assert leaves["quality_filter"].dotted == "stability.quality_filter"
    assert leaves["memory_mb"].flag == "--memory-mb"


def test_the_sections_defaults_are_the_old_flat_defaults() -> None:
    """The defaults the flat fields had, field by field, and the objects they were rebuilt into."""
    cfg = TrainConfig()
    assert cfg.limits == Limits(call_timeout_s=2.0, setup_timeout_s=5.0, memory_mb=1024)
    assert cfg.stability == StabilityOptions(
        curriculum=False,
        curriculum_schedule=CurriculumSchedule(start=0.3, step=0.1, promote_at=0.7, window=64),
        hard_only=None,
        anonymize_code=False,
        book_capacity_per_problem=None,
        book_capacity_total=None,
        book_refresh_every=None,
        quality_filter=False,
        always_pass_after=16,
    )
    for name in PRESETS:  # no preset sets an env option: the same objects as before the nesting
        cfg = from_preset(name)
        assert (cfg.stability, cfg.limits) == (StabilityOptions(), Limits()), name
    tiny = from_preset("tiny")
    assert tiny.reward_config() == RewardConfig(alpha=0.5, k=8, mode="code-a1")


def test_a_config_saved_before_the_nesting_loads_as_the_nested_one(tmp_path: Path) -> None:
    old = json.loads(BEFORE_NESTING.read_text())
    assert set(OLD_FLAT_KEYS) <= set(old) and "stability" not in old and "limits" not in old
    cfg = TrainConfig.load(BEFORE_NESTING)
    assert cfg.stability == StabilityOptions(
        curriculum=True,
        curriculum_schedule=CurriculumSchedule(start=0.2, step=0.05, promote_at=0.6, window=16),
        hard_only=0.4,
        anonymize_code=True,
        book_capacity_per_problem=4,
        book_capacity_total=1500,
        book_refresh_every=3,
        quality_filter=True,
        always_pass_after=8,
    )
    assert cfg.limits == Limits(call_timeout_s=1.5, setup_timeout_s=3.0, memory_mb=512)
    rest = {k: v for k, v in old.items() if k not in OLD_FLAT_KEYS}
    assert {k: v for k, v in cfg.to_dict().items() if k in rest} == rest  # nothing else moved
    # saved again it is nested, and nested and flat load into the same config
    cfg.save(tmp_path / "config.json")
    new = json.loads((tmp_path / "config.json").read_text())
    assert not set(OLD_FLAT_KEYS) & set(new)
    assert new["stability"]["curriculum_schedule"]["start"] == 0.2
    assert new["stability"]["quality_filter"] is True and new["limits"]["memory_mb"] == 512
    assert TrainConfig.load(tmp_path / "config.json") == cfg == TrainConfig.from_dict(old)
    assert from_preset("nano", **{k: old[k] for k in OLD_FLAT_KEYS}) == cfg  # flat overrides


def test_json_round_trip_is_stable(tmp_path: Path) -> None:
    cfg = from_preset("tiny", quality_filter=True, memory_mb=512, curriculum_window=8)
    cfg.save(tmp_path / "a.json")
    again = TrainConfig.load(tmp_path / "a.json")
    again.save(tmp_path / "b.json")
    assert again == cfg
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg


def test_flat_overrides_merge_into_the_sections() -> None:
    cfg = from_preset("nano", stability={"quality_filter": True}, always_pass_after=4)
    assert cfg.stability.quality_filter and cfg.stability.always_pass_after == 4
    cfg = from_preset("nano", limits=Limits(memory_mb=256), call_timeout_s=1.0)
    assert (cfg.limits.memory_mb, cfg.limits.call_timeout_s) == (256, 1.0)
    merged = merge_config_dicts({"curriculum": True}, {"stability": {"curriculum_schedule": {}}})
    assert merged == {"stability": {"curriculum": True, "curriculum_schedule": {}}}
    assert TrainConfig(stability={"anonymize_code": True}).stability.anonymize_code  # type: ignore[arg-type]
    diff = TrainConfig().diff(TrainConfig.from_dict({"quality_filter": True, "memory_mb": 256}))
    assert diff == {"stability.quality_filter": (False, True), "limits.memory_mb": (1024, 256)}
    assert TrainConfig().value("curriculum_start") == 0.3
    assert TrainConfig().value("limits.memory_mb") == 1024


def test_a_field_given_twice_with_two_values_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"call_timeout_s=5\.0 and limits\.call_timeout_s=6\.0"):
        from_preset("nano", limits={"call_timeout_s": 6.0}, call_timeout_s=5.0)
    both = {"stability": {"curriculum_schedule": {"start": 0.5}}, "curriculum_start": 0.4}
    with pytest.raises(ValueError, match=r"stability\.curriculum_schedule\.start=0\.5"):
        TrainConfig.from_dict(both)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(both), encoding="utf-8")
    with pytest.raises(ValueError, match="config.json: .*curriculum_start=0.4"):
        TrainConfig.load(path)
    # a value typed in a section is given, even the default: the flat key does not win over it
    typed_default = {"stability": {"curriculum_schedule": {"start": 0.3}}, "curriculum_start": 0.4}
    with pytest.raises(ValueError, match="curriculum_start=0.4 and "):
        TrainConfig.from_dict(typed_default)
    with pytest.raises(ValueError, match=r"call_timeout_s=2\.0 and limits\.call_timeout_s=6\.0"):
        TrainConfig.from_dict({"limits": {"call_timeout_s": 6.0}, "call_timeout_s": 2.0})
    # one value given both ways is no conflict
    same = {"limits": {"call_timeout_s": 1}, "call_timeout_s": 1.0, "lora_target_modules": ["q"]}
    assert TrainConfig.from_dict(same).limits.call_timeout_s == 1.0
    # a section given as an object: its unset fields are defaults, which a flat key overrides
    cfg = from_preset("nano", limits=Limits(memory_mb=256), call_timeout_s=1.0)
    assert (cfg.limits.memory_mb, cfg.limits.call_timeout_s) == (256, 1.0)
    schedule = {"curriculum_schedule": CurriculumSchedule(step=0.2)}
    cfg = from_preset("nano", stability=schedule, curriculum_start=0.4)
    assert (cfg.stability.curriculum_schedule.start, cfg.stability.curriculum_schedule.step) == (
        0.4,
        0.2,
    )
    with pytest.raises(ValueError, match=r"call_timeout_s=1\.0 and limits\.call_timeout_s=3"):
        from_preset("nano", limits=Limits(call_timeout_s=3.0), call_timeout_s=1.0)


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"call_timeout_s": -1.0}, r"TrainConfig\.limits\.call_timeout_s = -1\.0 .*> 0"),
        ({"limits": {"memory_mb": "big"}}, r"TrainConfig\.limits\.memory_mb = 'big' .*int"),
        ({"memory_mb": 0}, r"TrainConfig\.limits\.memory_mb .*--memory-mb"),
        ({"max_processes": 0}, r"TrainConfig\.limits\.max_processes"),
        ({"call_timeout_s": 1e300}, r"TrainConfig\.limits\.call_timeout_s = 1e\+300 .*86,400"),
        ({"cpu_time_s": float("inf")}, r"TrainConfig\.limits\.cpu_time_s = inf .*finite"),
        ({"memory_mb": 10**17}, r"TrainConfig\.limits\.memory_mb .*--memory-mb"),
        ({"max_open_files": 10**9}, r"TrainConfig\.limits\.max_open_files .*1,048,576"),
        ({"quality_filter": "yes"}, r"TrainConfig\.stability\.quality_filter .*bool"),
        ({"curriculum_window": 1.5}, r"stability\.curriculum_schedule\.window .*int"),
        ({"curriculum_start": 2.0}, r"TrainConfig\.stability\.curriculum_schedule.*start"),
        ({"hard_only": 2.0}, r"TrainConfig\.stability.*hard_only"),
        ({"book_capacity_total": "many"}, r"stability\.book_capacity_total .*int or null"),
        ({"stability": {"warp_speed": 9}}, r"unknown TrainConfig field\(s\): stability\.warp"),
        ({"limits": {"curriculum": True}}, r"unknown TrainConfig field\(s\): limits\.curric"),
        ({"limits": 5}, r"TrainConfig\.limits = 5 is invalid"),
    ],
)
def test_bad_nested_values_name_the_field(values: dict[str, object], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        TrainConfig.from_dict(values)


def test_bad_nested_values_are_rejected_from_objects_files_and_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match=r"Limits\.call_timeout_s = 0 is invalid"):
        TrainConfig(limits=Limits(call_timeout_s=0))  # Limits refuses it itself
    with pytest.raises(ValueError, match=r"TrainConfig\.stability\.anonymize_code"):
        TrainConfig(stability=StabilityOptions(anonymize_code=1))  # type: ignore[arg-type]
    (tmp_path / "bad.json").write_text('{"limits": {"call_timeout_s": "slow"}}')
    with pytest.raises(ValueError, match=r"bad.json: TrainConfig\.limits\.call_timeout_s"):
        TrainConfig.load(tmp_path / "bad.json")
    (tmp_path / "old.json").write_text('{"quality_filter": 3}')
    with pytest.raises(ValueError, match=r"old.json: TrainConfig\.stability\.quality_filter"):
        TrainConfig.load(tmp_path / "old.json")
    with pytest.raises(ValueError, match=r"TrainConfig\.limits\.call_timeout_s .*--call-timeout"):
        parse(["--call-timeout-s", "-2"])
    with pytest.raises(SystemExit):
        parse(["--memory-mb", "lots"])
    assert "--memory-mb: invalid int value" in capsys.readouterr().err


def test_json_round_trip_and_errors(tmp_path: Path) -> None:
    cfg = from_preset("tiny", lr=3e-5, adam_betas=(0.8, 0.95))
    cfg.save(tmp_path / "c.json")
    again = TrainConfig.load(tmp_path / "c.json")
    assert again == cfg and again.diff(cfg) == {}
    (tmp_path / "bad.json").write_text('{"lr": 1e-3, "warp_speed": 9}')
    with pytest.raises(ValueError, match=r"bad.json: unknown TrainConfig field\(s\): warp_speed"):
        TrainConfig.load(tmp_path / "bad.json")
    (tmp_path / "broken.json").write_text("{nope")
    with pytest.raises(ValueError, match="broken.json: not valid JSON"):
        TrainConfig.load(tmp_path / "broken.json")


def test_cli_flags_override_the_preset() -> None:
    cfg = parse(
        [
            "--preset",
            "tiny",
            "--lr",
            "1e-5",
            "--mode",
            "golden",
            "--steps",
            "50",
            "--output-dir",
            "runs/x",
            "--coder-model",
            "/m/c",
            "--no-bf16",
            "--tester-lr",
            "none",
        ]
    )
    assert (cfg.lr, cfg.mode, cfg.steps, cfg.output_dir, cfg.coder_model) == (
        1e-5,
        "golden",
        50,
        "runs/x",
        "/m/c",
    )
    assert cfg.bf16 is False and cfg.tester_lr is None
    assert cfg.n_codes == PRESETS["tiny"]["n_codes"]  # untouched preset value
    assert parse([]).lr == 1e-6  # no preset: the paper's defaults


def test_cli_flags_of_the_nested_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = {s for action in parser._actions for s in action.option_strings}
    for name in OLD_FLAT_KEYS:
        assert "--" + name.replace("_", "-") in flags, name
    assert {"--no-quality-filter", "--no-curriculum", "--no-anonymize-code"} <= flags
    cfg = parse(
        [
            "--preset",
            "tiny",
            "--quality-filter",
            "--curriculum",
            "--curriculum-start",
            "0.2",
            "--curriculum-window",
            "8",
            "--book-capacity-total",
            "1000",
            "--hard-only",
            "none",
            "--call-timeout-s",
            "1.5",
            "--memory-mb",
            "512",
            "--cpu-time-s",
            "7",
        ]
    )
    assert cfg.stability.quality_filter and cfg.stability.curriculum
    assert cfg.stability.curriculum_schedule == CurriculumSchedule(start=0.2, window=8)
    assert cfg.stability.book_capacity_total == 1000 and cfg.stability.hard_only is None
    assert cfg.limits == Limits(call_timeout_s=1.5, memory_mb=512, cpu_time_s=7.0)
    assert cfg.n_codes == PRESETS["tiny"]["n_codes"]
    # a config file written before the nesting, then a flag: the file's other options stay
    cfg = parse(["--config", str(BEFORE_NESTING), "--no-quality-filter", "--memory-mb", "256"])
    assert not cfg.stability.quality_filter and cfg.stability.book_capacity_total == 1500
    assert cfg.limits == Limits(call_timeout_s=1.5, setup_timeout_s=3.0, memory_mb=256)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert run(parser.parse_args(["--print-config", "--preset", "nano", "--quality-filter"])) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["stability"]["quality_filter"] is True and "quality_filter" not in printed


def test_cli_config_file_then_flags(tmp_path: Path) -> None:
    from_preset("nano", steps=7).save(tmp_path / "c.json")
    cfg = parse(["--config", str(tmp_path / "c.json"), "--seed", "3"])
    assert (cfg.steps, cfg.seed, cfg.coder_model) == (7, 3, "builtin:nano")
    with pytest.raises(ValueError, match="either --config or --preset"):
        parse(["--config", str(tmp_path / "c.json"), "--preset", "tiny"])


def test_cli_help_renders_every_field_docstring() -> None:
    """argparse expands ``%`` in help text: a docstring with a percent sign must still render."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    text = parser.format_help()
    assert "--sft-lr-schedule {constant,cosine,linear}" in text
    assert "5% of the steps" in " ".join(text.split())


def test_cli_rejects_bad_choice(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(["--mode", "solo"])
    assert "invalid choice" in capsys.readouterr().err


def test_checkpoints_are_atomic_and_pruned(tmp_path: Path) -> None:
    def writer(value: str):  # type: ignore[no-untyped-def]
        return lambda d: (d / "payload.txt").write_text(value)

    for step in (1, 2, 3):
        write_checkpoint(tmp_path, step, writer(f"s{step}"), keep=2)
    assert [s for s, _ in list_checkpoints(tmp_path)] == [2, 3]
    latest = latest_checkpoint(tmp_path)
    assert latest is not None and (latest / "payload.txt").read_text() == "s3"

    # A write that dies midway leaves the previous checkpoint as the latest one.
    def crash(d: Path) -> None:
        (d / "payload.txt").write_text("partial")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        write_checkpoint(tmp_path, 4, crash, keep=2)
    assert latest_checkpoint(tmp_path) == latest
    assert not list((tmp_path / "checkpoints").glob(".tmp_*"))

    # A stale pointer (the pointed directory lost) falls back to the newest complete one;
    # a directory without the COMPLETE marker is ignored.
    (tmp_path / "checkpoints" / "latest").write_text("step_99\n")
    (tmp_path / "checkpoints" / "step_50").mkdir()
    assert latest_checkpoint(tmp_path) == latest
    # ... and cleaned up by the next write, as is a step_N that is a file
    (tmp_path / "checkpoints" / "step_60").write_text("")
    write_checkpoint(tmp_path, 5, writer("s5"), keep=2)
    left = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert left == ["latest", "step_3", "step_5"]


@pytest.mark.requires("torch")
def test_rng_state_round_trip() -> None:
    import random

    import numpy as np
    import torch

    state = capture_rng_state()
    first = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    restore_rng_state(state)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == first


def test_a_resume_says_which_steps_metrics_jsonl_lacks(tmp_path: Path) -> None:
    """A log cut outside a run (a kill cannot: each line is synced before its checkpoint)."""
    with MetricsLogger(tmp_path, tensorboard=False) as log:
        for step in (1, 2, 3, 4, 6):
            log.log(step, {"coder/reward": step / 10})
    with pytest.warns(UserWarning, match=r"no line for step\(s\) 5, 7-8 up to the resumed"):
        MetricsLogger(tmp_path, resume_step=8, tensorboard=False).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MetricsLogger(tmp_path, resume_step=4, tensorboard=False).close()


@pytest.mark.requires("torch")
def test_metrics_jsonl_resume_drops_later_steps(tmp_path: Path) -> None:
    with MetricsLogger(tmp_path, tensorboard=False) as log:
        for step in (1, 2, 3, 4):
            log.log(step, {"coder/reward": step / 10, "bad": float("nan"), "text": "x"})
    with (tmp_path / "metrics.jsonl").open("a") as fh:
        fh.write('{"step": 5, "coder/rew')  # a torn line from a kill mid-write
    assert [r["step"] for r in read_metrics(tmp_path / "metrics.jsonl")] == [1, 2, 3, 4]
    with MetricsLogger(tmp_path, resume_step=2, tensorboard=True) as log:
        log.log(3, {"coder/reward": 0.33})
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert rows[-1] == {"step": 3, "coder/reward": 0.33}
    assert "bad" not in rows[0] and "text" not in rows[0]
    assert any((tmp_path / "tb").iterdir())
    assert json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])["step"] == 1


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"lr": float("inf")}, r"TrainConfig\.lr = inf .*finite"),
        ({"kl_coef": float("inf")}, r"TrainConfig\.kl_coef = inf .*finite"),
        ({"sft_lr": float("inf")}, r"TrainConfig\.sft_lr = inf"),
        ({"tester_lr": float("inf")}, r"TrainConfig\.tester_lr = inf"),
        ({"lora_alpha": -3}, r"TrainConfig\.lora_alpha = -3 .*>= 1"),
        ({"lora_dropout": 1.0}, r"TrainConfig\.lora_dropout = 1\.0"),
        ({"exp_name": "../../escape"}, r"TrainConfig\.exp_name = '\.\./\.\./escape'"),
        ({"exp_name": ".."}, r"TrainConfig\.exp_name = '\.\.'"),
    ],
)
def test_values_that_would_ruin_a_run_or_leave_runs_root_are_refused(
    values: dict[str, object], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        from_preset("nano", **values)


def test_equality_and_inline_reach_the_referee_from_the_trainers_flags() -> None:
    """codea1's two scoring options (deviations 14 and 15) are trainer flags too."""
    import argparse

    from agents.training.config import TrainConfig, add_config_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    config = config_from_args(
        parser.parse_args(["--equality", "strict", "--inline", "anywhere"]), "nano"
    )
    scoring = config.reward_config()
    assert (scoring.equality, scoring.inline) == ("strict", "anywhere")
    assert TrainConfig.from_dict(config.to_dict()).reward_config() == scoring
    default = config_from_args(parser.parse_args([]), "nano").reward_config()
    assert (default.equality, default.inline) == ("python", "arguments")
    with pytest.raises(SystemExit):
        parser.parse_args(["--equality", "loose"])
    with pytest.raises(ValueError, match="TrainConfig.inline"):
        TrainConfig(inline="everywhere")  # type: ignore[arg-type]
