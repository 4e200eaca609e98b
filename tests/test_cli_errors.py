"""The command line's answer to bad input: one line naming the flag, file or field, exit status 2,
no traceback, and nothing written before the input was checked."""

from __future__ import annotations

import json
import subprocess
import sys
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
        (["serve-reward", "--batch-window-ms", "nan"], "--batch-window-ms: expected a number"),
        (["serve-reward", "--batch-window-ms", "-5"], "--batch-window-ms: expected a number"),
        (["eval", "--policy", "scripted:gt", "--temperature", "-1"], "--temperature: expected"),
        (["eval", "--policy", "scripted:gt", "--top-p", "5"], "--top-p: expected a number in"),
        (["eval", "--policy", "scripted:gt", "--top-p", "0"], "--top-p: expected a number in"),
        (["report", "run", "--duels", "-1"], "--duels: expected an integer >= 0"),
        (["duel", "--seed", "-5"], "--seed: expected an integer >= 0"),
        (["eval", "--policy", "scripted:gt", "--seed", "-1"], "--seed: expected an integer"),
        (["serve-reward", "--seed", "-1"], "--seed: expected an integer >= 0"),
        (["eval", "--policy", "scripted:gt", "--http-timeout", "0"], "--http-timeout: expected"),
        (["eval", "--policy", "scripted:gt", "--http-timeout", "inf"], "--http-timeout: expected"),
        (["eval", "--policy", "scripted:gt", "--http-retries", "-1"], "--http-retries: expected"),
    ],
)
def test_bad_numbers_are_refused_by_the_parser(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert says in _fails(argv, capsys)


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--bogus-flag", "1"],
        ["duel", "--bogus-flag", "1"],
        ["report", "runs/x", "--bogus-flag", "1"],
    ],
)
def test_a_misspelt_flag_gets_the_commands_own_usage(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    err = _fails(argv, capsys)
    assert f"usage: codea1 {argv[0]}" in err
    assert f"codea1 {argv[0]}: error: unrecognized arguments: --bogus-flag 1" in err


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
    err = _fails(["eval", "--policy", "scripted:gt", "--source", f"jsonl:{missing}"], capsys)
    assert "codea1 eval: error: FileNotFoundError" in err and "raised at" in err  # as duel says it


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("scripted:mutant:abc", "scripted:mutant:P must be in [0, 1]"),
        ("scripted:mutant:7", "scripted:mutant:P must be in [0, 1]"),
        ("scripted:boundary:3", "takes no parameter"),
        ("nosuch:x", "unknown policy spec 'nosuch:x'"),
        ("http:notaurl", "expected http:BASE_URL#MODEL"),
        ("checkpoint:/nonexistent/run", "no directory /nonexistent/run"),
        ("hf:/nonexistent/model", "no model directory /nonexistent/model"),
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
        ({"num_threads": 100_000}, "TrainConfig.num_threads = 100000 is invalid"),
        ({"device": "cuda:x"}, "TrainConfig.device"),
        ({"device": "tpu"}, "TrainConfig.device = 'tpu' is invalid"),
        ({"device": "meta"}, "TrainConfig.device = 'meta' is invalid"),
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
    err = _fails(["train", "--config", str(config), "--print-config"], capsys)
    assert says in err and err.startswith("codea1 train: error: ")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"\xff\xfe\x00", "config.json: not UTF-8 text"),
        (b"[" * 100_000, "config.json: not valid JSON (nested too deeply"),
    ],
)
def test_a_config_file_that_is_not_json_text_names_the_file(
    content: bytes, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.json"
    config.write_bytes(content)
    assert says in _fails(["train", "--config", str(config), "--print-config"], capsys)


def test_a_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _fails(["train", "--config", str(tmp_path / "nosuch.json"), "--print-config"], capsys)
    assert err.startswith(f"codea1 train: error: --config {tmp_path / 'nosuch.json'}: cannot read")


def test_a_bad_device_flag_is_refused_before_printing_the_config(
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = _fails(["train", "--preset", "nano", "--device", "tpu", "--print-config"], capsys)
    assert "TrainConfig.device = 'tpu'" in err
    assert capsys.readouterr().out == ""


def test_candidates_spec_is_named_by_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    argv = ["eval", "--policy", "scripted:gt", "--candidates", "nosuch:x", "--out", str(out)]
    err = _fails(argv, capsys)
    assert "candidates: unknown policy spec 'nosuch:x'" in err
    assert not out.exists()


def test_output_under_a_file_is_refused_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("keep me")
    err = _fails(["duel", "--episodes", "1", "--json", str(blocker / "rows.json")], capsys)
    assert f"{blocker} is not a directory" in err
    assert "duels:" not in capsys.readouterr().out  # no result printed, then lost
    err = _fails(["eval", "--policy", "scripted:gt", "--out", str(blocker / "sub")], capsys)
    assert "--out" in err and f"{blocker} is not a directory" in err and "evaluating" not in err
    assert blocker.read_text() == "keep me"


def test_evaluate_policies_checks_sampling_settings_first() -> None:
    from agents.evaluation.evaluate import EvalSettings, evaluate_policies

    with pytest.raises(ValueError, match="temperature must be >= 0"):
        evaluate_policies(["scripted:gt"], [], EvalSettings(temperature=-1.0))
    with pytest.raises(ValueError, match=r"top_p in \(0, 1\]"):
        evaluate_policies(["scripted:gt"], [], EvalSettings(top_p=float("nan")))


@pytest.mark.parametrize(
    "flags",
    [
        ["--problems", f"jsonl:{DATA / 'bad_json.jsonl'}"],
        ["--device", "tpu"],
        # with evaluation off (nano's default) the held-out file is checked all the same
        ["--eval-problems", f"jsonl:{DATA / 'bad_json.jsonl'}", "--no-eval-before-after"],
    ],
)
@pytest.mark.requires("torch")
def test_train_checks_its_input_before_writing_the_run_directory(
    flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    err = _fails(["train", "--preset", "nano", "--output-dir", str(run_dir), *flags], capsys)
    assert "codea1 train: error:" in err
    assert not run_dir.exists()


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("/nonexistent/model", "coder_model: '/nonexistent/model': no model directory"),
        ("builtin:huge", "coder_model: 'builtin:huge' is not a built-in model"),
        (str(DATA / "bad_json.jsonl"), "is a file, not a model directory"),
    ],
)
@pytest.mark.requires("torch")
def test_train_checks_the_model_spec_before_writing_the_run_directory(
    model: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    argv = ["train", "--preset", "nano", "--output-dir", str(run_dir), "--coder-model", model]
    assert says in _fails(argv, capsys)
    assert not run_dir.exists()


@pytest.mark.requires("torch")
def test_a_resume_checks_its_input_before_rewriting_config_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agents.training.checkpoint import COMPLETE_MARKER
    from agents.training.config import from_preset

    run_dir = tmp_path / "run"
    step = run_dir / "checkpoints" / "step_1"
    step.mkdir(parents=True)
    (step / COMPLETE_MARKER).write_text("")
    missing = tmp_path / "gone.jsonl"  # the run's problem file, deleted since
    from_preset("nano", output_dir=str(run_dir), problems=f"jsonl:{missing}").save(
        run_dir / "config.json"
    )
    before = (run_dir / "config.json").read_bytes()
    argv = ["train", "--preset", "nano", "--output-dir", str(run_dir), "--steps", "7"]
    err = _fails(argv, capsys)
    assert "gone.jsonl" in err
    assert (run_dir / "config.json").read_bytes() == before


@pytest.mark.requires("torch")
def test_a_resume_that_fails_on_a_damaged_checkpoint_puts_config_json_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    run_dir = tmp_path / "run"
    argv = ["train", "--preset", "nano", "--output-dir", str(run_dir), "--steps", "1"]
    assert main(argv) == 0
    capsys.readouterr()
    before = (run_dir / "config.json").read_bytes()
    torch.save({}, run_dir / "checkpoints" / "step_1" / "coder_model.pt")  # a swapped file
    err = _fails([*argv[:-1], "3"], capsys)
    assert "step_1/coder_model.pt does not fit the coder model" in err
    assert (run_dir / "config.json").read_bytes() == before  # "steps" is still 1


def test_the_installed_command_line_answers_in_one_line(tmp_path: Path) -> None:
    """A real process: exit status 2, the argparse-style line, no traceback, nothing written."""
    run_dir = tmp_path / "run"
    argv = ["train", "--preset", "nano", "--output-dir", str(run_dir), "--device", "cuda:x"]
    done = subprocess.run(
        [sys.executable, "-m", "agents.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("codea1 train: error: TrainConfig.device = 'cuda:x'")
    assert "Traceback" not in done.stderr
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
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert "CODEA1_TRACEBACK" not in err  # no hint to set what is set
    assert err.splitlines()[-1].startswith("codea1 duel: error: ")


def test_eval_source_errors_name_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--policy", "scripted:gt", "--source", "procedural-test:x", "--out", "o"]
    err = _fails(argv, capsys)
    assert "--source 'procedural-test:x': bad procedural spec" in err
    assert not Path("o").exists()


def test_eval_names_a_bad_problem_file_as_train_does(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--policy", "scripted:gt", "--source", f"jsonl:{DATA / 'bad_json.jsonl'}"]
    err = _fails(argv, capsys)
    assert err.startswith("codea1 eval: error: ProblemFormatError: ") and "bad_json.jsonl:3" in err
    assert "procedural-test" not in err  # the hint for a bad spec is not for a bad file


def test_eval_refuses_two_policies_of_one_name(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--policy", "a=scripted:gt", "--policy", "a=scripted:boundary", "--out", "o"]
    assert "the name 'a' is already that of policy 'a=scripted:gt'" in _fails(argv, capsys)
    assert not (Path("o") / "eval.json").exists()


def test_an_http_policy_whose_server_is_not_there(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as free:  # a port nobody listens on: bound, never listening
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}/v1"
        argv = ["eval", "--policy", f"http:{url}#m", "--problems", "1", "--samples", "1"]
        err = _fails([*argv, "--k", "1", "--out", "o", "--quiet"], capsys)
    assert "HTTPPolicyError" in err and "Connection refused" in err


def test_an_http_policy_whose_server_hangs_gives_up_after_the_timeout_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import socket
    import time

    with socket.socket() as hung:  # listening, accepting into the backlog, never answering
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)
        url = f"http://127.0.0.1:{hung.getsockname()[1]}/v1"
        argv = ["eval", "--policy", f"http:{url}#m", "--problems", "1", "--samples", "1"]
        started = time.monotonic()
        err = _fails(
            [*argv, "--http-timeout", "0.5", "--http-retries", "1", "--out", "o", "--quiet"],
            capsys,
        )
        took = time.monotonic() - started
    assert "failed after 2 attempts" in err and "timed out" in err, err
    assert took < 30  # the defaults (120 s, 2 retries) would wait six minutes
    assert not (Path("o") / "eval.json").exists()


def test_serve_reward_on_a_taken_port_names_it_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    book = tmp_path / "new" / "book.sqlite"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        err = _fails(["serve-reward", "--port", port, "--mistake-book", str(book)], capsys)
    assert f"--host 127.0.0.1 --port {port}: cannot listen there" in err
    assert not book.parent.exists()


@pytest.mark.requires("matplotlib")
def test_report_out_that_is_a_file_and_a_log_with_no_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("{bad json\n")
    (tmp_path / "afile").write_text("")
    err = _fails(["report", str(run), "--out", str(tmp_path / "afile")], capsys)
    assert "--out" in err and "exists and is not a directory" in err
    with pytest.warns(UserWarning, match=r"metrics\.jsonl: no logged step could be read"):
        assert main(["report", str(run), "--duels", "0"]) == 0


@pytest.mark.requires("torch")
@pytest.mark.parametrize("existing", [False, True])
def test_a_train_start_that_fails_leaves_nothing_behind(
    existing: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sandbox that cannot start (``--sandbox docker`` without an engine): one line, exit 2,
    and the new run's files removed (a directory the user made keeps only what it had)."""
    from agents.training import trainer
    from codea1_env.sandbox.base import SandboxUnavailable

    def unavailable(*args: object, **kwargs: object) -> None:
        raise SandboxUnavailable("no Docker engine answers (a test's stand-in)")

    monkeypatch.setattr(trainer, "build_referee", unavailable)
    run_dir = tmp_path / "run"
    if existing:
        run_dir.mkdir()
        (run_dir / "notes.txt").write_text("mine")
    argv = ["train", "--preset", "nano", "--output-dir", str(run_dir)]
    err = _fails(argv, capsys)
    assert "SandboxUnavailable: no Docker engine answers" in err
    if existing:
        assert sorted(p.name for p in run_dir.iterdir()) == ["notes.txt"]
    else:
        assert not run_dir.exists()


def test_a_missing_optional_dependency_is_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys as _sys

    monkeypatch.setitem(_sys.modules, "torch", None)  # import torch now raises ImportError
    monkeypatch.delitem(_sys.modules, "agents.training.trainer", raising=False)
    err = _fails(["train", "--preset", "nano", "--output-dir", "run"], capsys)
    assert err.strip() == (
        "codea1 train: error: the trainer needs PyTorch: pip install 'codea1[train]'"
    )
    assert not Path("run").exists()


def test_an_import_error_that_names_no_install_keeps_its_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import agents.commands.duel_cli as duel_cli

    def broken(args: object) -> int:
        raise ImportError("cannot import name 'x' from 'y'")

    monkeypatch.setattr(duel_cli, "run", broken)
    with pytest.raises(ImportError, match="cannot import name"):
        main(["duel", "--episodes", "1"])


def test_with_evaluation_off_only_a_local_held_out_source_is_read() -> None:
    from codea1_env.problems.sources import is_local_spec

    for spec, read in [
        ("jsonl:data.jsonl", True),
        ("data.jsonl.gz", True),
        ("kodcode:k.jsonl", True),
        ("procedural:0:test", True),
        ("humaneval", False),  # loading it starts a sandbox: nothing to check offline
        ("hf:openai/openai_humaneval", False),  # would download
        ("bank", False),
    ]:
        assert is_local_spec(spec) is read, spec
