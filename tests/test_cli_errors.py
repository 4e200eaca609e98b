"""The command line's answer to bad input: one line naming the flag, file or field, exit status 2,
no traceback, and nothing written before the input was checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.commands.cli import main

DATA = Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a command that wrote its default output would write here


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``codea1 ARGV``; it must exit 2 (argparse's or ours) and say why on stderr."""
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse rejected a flag
        status = exc.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["duel", "--episodes", "0"], "--episodes: expected an integer >= 1"),
        (["duel", "--batch", "-1"], "--batch: expected an integer >= 1"),
        (["duel", "--p-mutant", "5"], "--p-mutant: expected a number in [0, 1]"),
        (["eval", "--policy", "scripted:gt", "--problems", "-1"], "--problems: expected"),
        (["eval", "--policy", "scripted:gt", "--problems", "0"], "--problems: expected"),
        (["serve-reward", "--port", "70000"], "--port: expected a port"),
        (["serve-reward", "--workers", "0"], "--workers: expected an integer >= 1"),
    ],
)
def test_bad_numbers_are_refused_by_the_parser(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert says in _fails(argv, capsys)


def test_missing_and_damaged_problem_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nosuch.jsonl"
    err = _fails(["duel", "--source", f"jsonl:{missing}", "--episodes", "1"], capsys)
    assert "codea1 duel: error: FileNotFoundError" in err and "nosuch.jsonl" in err
    err = _fails(["duel", "--source", f"jsonl:{DATA / 'bad_json.jsonl'}"], capsys)
    assert "bad_json.jsonl:3" in err
    err = _fails(["eval", "--policy", "scripted:gt", "--source", f"jsonl:{tmp_path}"], capsys)
    assert "codea1 eval: error:" in err and str(tmp_path) in err


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("scripted:mutant:abc", "scripted:mutant:P must be in [0, 1]"),
        ("scripted:mutant:7", "scripted:mutant:P must be in [0, 1]"),
        ("scripted:boundary:3", "takes no parameter"),
        ("nosuch:x", "unknown policy spec 'nosuch:x'"),
        ("http:notaurl", "expected http:BASE_URL#MODEL"),
        ("checkpoint:/nonexistent/run", "no directory /nonexistent/run"),
    ],
)
def test_every_policy_spec_is_checked_before_any_work(
    spec: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    # The good spec comes first: it must not be evaluated before the bad one is found.
    err = _fails(["eval", "--policy", "scripted:gt", "--policy", spec, "--out", str(out)], capsys)
    assert says in err and "evaluating" not in err
    assert not out.exists()


def test_eval_out_that_is_a_file_is_refused_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "taken"
    taken.write_text("keep me")
    err = _fails(["eval", "--policy", "scripted:gt", "--out", str(taken)], capsys)
    assert "--out" in err and "evaluating" not in err
    assert taken.read_text() == "keep me"


def test_duel_json_into_a_directory_is_refused_before_playing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _fails(["duel", "--episodes", "1", "--json", str(tmp_path)], capsys)
    assert "is a directory" in err and "duels:" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"steps": "10"}, "TrainConfig.steps = '10' is invalid: expected int"),
        ({"steps": True}, "TrainConfig.steps = True is invalid"),
        ({"bf16": 1}, "TrainConfig.bf16 = 1 is invalid: expected bool"),
        ({"adam_betas": [0.9]}, "TrainConfig.adam_betas = [0.9] is invalid"),
        ({"adam_betas": [0.9, 5]}, "TrainConfig.adam_betas"),
        ({"lora_target_modules": "q_proj"}, "expected a list of str"),
        ({"num_threads": -1}, "TrainConfig.num_threads"),
        ({"device": "cuda:x"}, "TrainConfig.device"),
        ({"sandbox": "nosuch"}, "TrainConfig.sandbox"),
        ({"coder_top_p": 0}, "TrainConfig.coder_top_p"),
        ({"sandbox_workers": 0}, "TrainConfig.sandbox_workers"),
    ],
)
def test_config_files_with_wrong_types_or_values_name_the_field(
    fields: dict[str, object], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(fields))
    assert says in _fails(["train", "--config", str(config), "--print-config"], capsys)


def test_a_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(["train", "--config", str(tmp_path / "nosuch.json"), "--print-config"], capsys)
    assert "nosuch.json" in err


@pytest.mark.parametrize(
    "flags",
    [
        ["--problems", f"jsonl:{DATA / 'bad_json.jsonl'}"],
        ["--device", "tpu"],
    ],
)
def test_train_checks_its_input_before_writing_the_run_directory(
    flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    err = _fails(["train", "--preset", "nano", "--output-dir", str(run_dir), *flags], capsys)
    assert "codea1 train: error:" in err
    assert not run_dir.exists()


def test_serve_reward_with_a_damaged_mistake_book(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    book = tmp_path / "book.db"
    book.write_bytes(b"not a database" * 100)
    err = _fails(["serve-reward", "--port", "0", "--mistake-book", str(book)], capsys)
    assert "book.db: file is not a database" in err


def test_the_traceback_on_request_and_where_it_was_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["duel", "--source", f"jsonl:{DATA / 'bad_json.jsonl'}"]
    err = _fails(argv, capsys)
    assert "raised at codea1_env/problems/jsonl.py:" in err
    monkeypatch.setenv("CODEA1_TRACEBACK", "1")
    assert main(argv) == 2
    assert "Traceback (most recent call last)" in capsys.readouterr().err
