"""Files at their edges: characters that are line breaks to Python but not to JSON, deep nesting,
a byte order mark, and logs with a damaged line."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import pytest

from agents.evaluation.report import load_run
from agents.training.metrics import read_metrics
from codea1_env.problems import Problem, ProblemFormatError
from codea1_env.problems.jsonl import read_problems, write_problems
from codea1_env.problems.procedural import ProceduralSource
from codea1_env.problems.schema import problem_to_dict


def _problem(prompt_tail: str = "") -> Problem:
    source = ProceduralSource(seed=0, n=1)
    problem = source[source.ids()[0]]
    return dataclasses.replace(problem, prompt=problem.prompt + prompt_tail)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_a_problem_file_we_wrote_reads_back(tmp_path: Path, separator: str) -> None:
    # str.splitlines() breaks at these; JSON escapes control characters but, written with
    # ensure_ascii=False, keeps these raw.
    problem = _problem(f"\n    # a{separator}b\n")
    path = tmp_path / "p.jsonl"
    write_problems(path, [problem])
    assert separator in path.read_text(encoding="utf-8")
    [back], skipped = read_problems(path)
    assert back.prompt == problem.prompt and not skipped


def test_a_deeply_nested_line_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(problem_to_dict(_problem())) + "\n" + "[" * 100_000 + "\n")
    with pytest.raises(ProblemFormatError, match=r"deep\.jsonl:2.*nested too deeply"):
        read_problems(path)


def test_a_byte_order_mark_is_read_past(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    line = json.dumps(problem_to_dict(_problem()))
    path.write_bytes(b"\xef\xbb\xbf" + line.encode("utf-8") + b"\r\n")
    [problem], _ = read_problems(path)
    assert problem.task_id == _problem().task_id


def test_logs_skip_a_torn_last_line_quietly_and_warn_about_others(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n{"step": 2, "note": "a\u2028b"}\n{"step": 3}\n{"st', "utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = read_metrics(path)
    assert [r["step"] for r in rows] == [1, 2, 3]
    path.write_text('{"step": 1}\ngarbage\n{"step": 3}\n', "utf-8")
    with pytest.warns(UserWarning, match=r"metrics\.jsonl:2: not valid JSON"):
        rows = read_metrics(path)
    assert [r["step"] for r in rows] == [1, 3]


def test_the_report_warns_about_damaged_files(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\nnot json\n{"step": 2}\n', "utf-8")
    (tmp_path / "summary.json").write_text('{"before": ', "utf-8")
    with pytest.warns(UserWarning) as caught:
        run = load_run(tmp_path)
    assert [row["step"] for row in run.rows] == [1, 2] and run.summary == {}
    messages = [str(w.message) for w in caught]
    assert any("metrics.jsonl:2" in m for m in messages)
    assert any("summary.json: not valid JSON" in m for m in messages)


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_checkpoint_file_is_named(tmp_path: Path, damage: str) -> None:
    torch = pytest.importorskip("torch")
    from agents.training.checkpoint import CheckpointError, load_checkpoint_file

    path = tmp_path / "coder_model.pt"
    torch.save({"w": torch.zeros(64)}, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"coder_model\.pt cannot be loaded"):
        load_checkpoint_file(path, map_location="cpu")
    with pytest.raises(FileNotFoundError, match=r"nope\.pt is missing"):
        load_checkpoint_file(tmp_path / "nope.pt")


def test_atomic_writes_give_files_the_mode_open_would(tmp_path: Path) -> None:
    import os
    import stat

    from codea1_env.atomic import write_text_atomic

    old = os.umask(0o022)
    try:
        new = tmp_path / "new.json"
        write_text_atomic(new, "{}")
        assert stat.S_IMODE(new.stat().st_mode) == 0o644  # not mkstemp's 0600
        kept = tmp_path / "kept.json"
        kept.write_text("{}")
        kept.chmod(0o640)
        write_text_atomic(kept, "[]")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text() == "[]"
    finally:
        os.umask(old)


def test_a_checkpoint_directory_gets_the_mode_mkdir_would(tmp_path: Path) -> None:
    import os
    import stat

    from agents.training.checkpoint import write_checkpoint

    old = os.umask(0o022)
    try:

        def write(directory: Path) -> None:
            (directory / "weights.txt").write_text("w")

        final = write_checkpoint(tmp_path, 3, write)
        assert final.name == "step_3"
        assert stat.S_IMODE(final.stat().st_mode) == 0o755  # not mkdtemp's 0700
        assert stat.S_IMODE((final / "weights.txt").stat().st_mode) == 0o644
    finally:
        os.umask(old)
