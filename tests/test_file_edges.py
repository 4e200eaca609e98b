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


# --------------------------------------------------------------------------------------------
# Dataset layouts (from an audit with files in each published layout)
# --------------------------------------------------------------------------------------------


def _write_jsonl(path: Path, *records: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_apps_solutions_as_published_a_json_encoded_list(tmp_path: Path) -> None:
    from codea1_env.problems import load_source

    record = {
        "problem_id": 0,
        "question": "Reverse the line.",
        "solutions": json.dumps(["s=input(\n", "s = input()\nprint(s[::-1])\n"]),
        "input_output": json.dumps({"inputs": ["abc\n"], "outputs": ["cba\n"]}),
    }
    source = load_source(f"stdio:{_write_jsonl(tmp_path / 'apps.jsonl', record)}")
    (problem,) = (source[i] for i in source.ids())
    assert problem.gt_program == "s = input()\nprint(s[::-1])\n"  # the first one that parses


DEEP = "-" * 20000 + "1"  # too deep to parse on every Python (3,000 parse on 3.10 and 3.13)
GOOD = {
    "task_id": "ok",
    "prompt": "def g(x):",
    "entry_point": "g",
    "canonical_solution": "def g(x):\n    return x\n",
    "tests": ["assert g(1) == 1"],
}


@pytest.mark.parametrize(
    ("layout", "record"),
    [
        (
            "kodcode",
            {
                "question_id": "q",
                "question": "Add.",
                "solution": f"def add(a, b=({DEEP})):\n    return a + b\n",
                "test": "from solution import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
                "test_info": [{"function_name": "add"}],
            },
        ),
        (
            "kodcode",
            {
                "question_id": "q",
                "question": "Add.",
                "solution": "def add(a, b):\n    return a + b\n",
                "test": f"from solution import add\n\ndef test_add():\n    assert add(1, {DEEP}) == 3\n",
                "test_info": [{"function_name": "add"}],
            },
        ),
        (
            "codea1",
            {
                "task_id": "t",
                "prompt": "def f(x):",
                "entry_point": "f",
                "canonical_solution": f"def f(x):\n    return {DEEP}\n",
                "tests": ["assert f(1) == -1"],
            },
        ),
    ],
)
def test_code_nested_too_deeply_is_a_bad_record_not_a_crash(
    tmp_path: Path, layout: str, record: dict[str, object]
) -> None:
    path = _write_jsonl(tmp_path / "deep.jsonl", record)
    with pytest.raises(ProblemFormatError, match=r"deep\.jsonl:1: ") as caught:
        read_problems(path, layout)  # a RecursionError escaped the loader
    assert "nested too deeply" in str(caught.value) or "field 'test'" in str(caught.value)
    if layout == "codea1":  # skip_invalid skips it like any other bad record
        problems, skipped = read_problems(
            _write_jsonl(path, record, GOOD), layout, skip_invalid=True
        )
        assert [p.task_id for p in problems] == ["ok"] and len(skipped) == 1


@pytest.mark.parametrize(
    "solution", ["add: object = lambda a, b: a + b\n", "from operator import add\n"]
)
def test_an_entry_point_bound_by_annotation_or_import_is_the_whole_gt(solution: str) -> None:
    from codea1_env.problems import problem_from_dict

    record = {
        "task_id": "t",
        "prompt": "Write add.",
        "entry_point": "add",
        "canonical_solution": solution,
        "tests": ["assert add(1, 2) == 3"],
    }
    assert problem_from_dict(record).gt_program == solution  # not the prose prompt in front


def test_every_gt_test_counts_and_those_that_cannot_be_scored_are_named(sandbox: object) -> None:
    import gymnasium as gym

    import codea1_env  # noqa: F401  (registers the env ids)

    tests = ["assert f(1) == [1, 1]", "assert set(f(2)) == {2}", "assert f(\n  4) == [4, 4]"]
    tests += [f"assert f({i}) == [{i}, {i}]" for i in range(100)]
    problem = {
        "task_id": "t/many",
        "prompt": "def f(x):",
        "entry_point": "f",
        "canonical_solution": "def f(x):\n    return [x, x]\n",
        "tests": tests,
    }
    env = gym.make("CodeTestDuel-v0", reward_mode="golden", sandbox=sandbox)
    env.reset(options={"problem": problem})
    with pytest.warns(UserWarning, match=r"'t/many': 1 of its 103 GT tests .* tests\[1\] \(wrong"):
        _, reward, *_ = env.step("def f(x):\n    return [x, x] if x != 77 else []\n")
    env.close()
    assert reward == pytest.approx(101 / 102)  # every test past the 64th counts too


def test_layout_names_and_odd_specs(tmp_path: Path) -> None:
    from codea1_env.problems import load_source

    path = _write_jsonl(tmp_path / "p.jsonl", GOOD)
    assert list(load_source(f"codea1:{path}").ids()) == ["ok"]
    assert list(load_source(f"CODEA1:{path}").ids()) == ["ok"]
    with pytest.raises(ValueError, match="a problem source spec is a string, got int"):
        load_source(5)  # type: ignore[arg-type]


def test_errors_name_the_fields_of_the_files_own_layout(tmp_path: Path) -> None:
    kod = {
        "question_id": "q1",
        "question": "Add.",
        "solution": "def add(a, b):\n    return a + b\n",
        "test": "from solution import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
        "test_info": [{"function_name": "add"}],
    }
    path = _write_jsonl(tmp_path / "kod.jsonl", kod, kod)
    with pytest.raises(ProblemFormatError, match=r"kod\.jsonl:2: field 'question_id': dup.*'q1'"):
        read_problems(path, "kodcode")
    apps = {"question": "Echo.", "solutions": json.dumps(["print(input())"])}
    apps["input_output"] = json.dumps({"inputs": ["a\n"], "outputs": ["a\n"]})
    with pytest.raises(ProblemFormatError, match=r"field 'name / id / task_id / problem_id'"):
        read_problems(_write_jsonl(tmp_path / "apps.jsonl", apps), "stdio")


def test_atomic_writes_go_through_a_link_and_into_a_fifo(tmp_path: Path) -> None:
    import os
    import threading

    from codea1_env.atomic import write_text_atomic

    target = tmp_path / "t.json"
    target.write_text("old")
    link = tmp_path / "l.json"
    link.symlink_to(target.name)
    write_text_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new"  # the link stays a link
    dangling = tmp_path / "d.json"
    dangling.symlink_to("made.json")
    write_text_atomic(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "made.json").read_text() == "made"
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_text_atomic(fifo, "through")
    reader.join(10)
    assert got == ["through"] and fifo.exists() and not fifo.is_file()  # still the FIFO
    with pytest.raises(IsADirectoryError):
        write_text_atomic(tmp_path, "x")
