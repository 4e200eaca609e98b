"""Bad files name themselves: problem files, run logs, SQLite mistake books and checkpoints.

A bad file raises an error naming the file (and the line, where there is one); nothing that was
there before is lost.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agents.evaluation.report import load_run
from codea1_env.mistake_book import (
    BookEntry,
    MistakeBookFormatError,
    SqliteMistakeBook,
)
from codea1_env.problems import Problem, ProblemFormatError
from codea1_env.problems.jsonl import read_problems
from codea1_env.problems.procedural import ProceduralSource
from codea1_env.problems.schema import problem_to_dict

# Characters str.splitlines() breaks at but JSON does not (the last five json.dumps escapes).
SEPARATORS = "\u2028\u2029\u0085\x0b\x0c\x1c\x1d\x1e"

BOOK = {
    "format": "codea1.mistake_book",
    "version": 1,
    "problems": {"p1": [{"call": "f(1)", "expected": 1, "frequency": 3}]},
}


def _problems(n: int) -> list[Problem]:
    source = ProceduralSource(seed=0, n=n)
    return [source[task_id] for task_id in source.ids()]


# --------------------------------------------------------------------------------------------
# Problem files and run logs
# --------------------------------------------------------------------------------------------


def test_a_bad_line_after_separators_and_crlf_is_named_by_its_line(tmp_path: Path) -> None:
    first, second = _problems(2)
    first = dataclasses.replace(first, prompt=first.prompt + "# \u2028\u0085\n")
    lines = [json.dumps(problem_to_dict(p), ensure_ascii=False) for p in (first, second)]
    path = tmp_path / "crlf.jsonl"
    path.write_bytes("\r\n".join([*lines, '{"task_id": "x"}', ""]).encode("utf-8"))
    with pytest.raises(ProblemFormatError, match=r"crlf\.jsonl:3"):
        read_problems(path)
    path.write_bytes("\r\n".join([*lines, ""]).encode("utf-8"))
    back, _ = read_problems(path)
    assert [p.prompt for p in back] == [first.prompt, second.prompt]


def test_a_run_report_keeps_rows_with_separators_and_names_a_deep_line(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_text(
        '{"step": 1, "note": "a\u2028b\u0085c"}\n' + "[" * 100_000 + '\n{"step": 2}\n', "utf-8"
    )
    (tmp_path / "duels.jsonl").write_text('{"code": "x = 1\u2029y = 2"}\n', "utf-8")
    with pytest.warns(UserWarning, match=r"metrics\.jsonl:2: not valid JSON"):
        run = load_run(tmp_path)
    assert [row["step"] for row in run.rows] == [1, 2]
    assert run.rows[0]["note"] == "a\u2028b\u0085c"
    assert run.duels == [{"code": "x = 1\u2029y = 2"}]


# --------------------------------------------------------------------------------------------
# SQLite mistake books
# --------------------------------------------------------------------------------------------


def _saved_book(path: Path, problems: int = 20) -> None:
    with SqliteMistakeBook(path) as book:
        book.load_dict(
            {
                "format": "codea1.mistake_book",
                "version": 1,
                "problems": {
                    f"p{i}": [
                        {"call": f"f({j})", "expected": "x" * 50, "frequency": 1} for j in range(5)
                    ]
                    for i in range(problems)
                },
            }
        )


def test_a_truncated_sqlite_book_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "book.db"
    _saved_book(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(sqlite3.DatabaseError, match=r"book\.db: database disk image is malformed"):
        SqliteMistakeBook(path)


def test_an_empty_file_still_becomes_a_sqlite_book(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    with SqliteMistakeBook(path) as book:
        book.apply("p", [("f(1)", 1)], [])
    with SqliteMistakeBook(path) as book:
        assert book.entries("p") == [BookEntry("f(1)", 1, 1)]


def test_a_damaged_page_found_after_opening_names_the_file(tmp_path: Path) -> None:
    # The header and the schema are whole, so opening works; the index page is garbage.
    path = tmp_path / "paged.db"
    _saved_book(path)
    with sqlite3.connect(path) as conn:
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'entries_rank'"
        ).fetchone()
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * page_size : root * page_size] = b"\xff" * page_size
    path.write_bytes(bytes(data))
    book = SqliteMistakeBook(path)
    try:
        for read in (book.size, book.problems, lambda: book.entries("p1")):
            with pytest.raises(sqlite3.DatabaseError, match=r"paged\.db: database disk image"):
                read()
        with pytest.raises(sqlite3.DatabaseError, match=r"paged\.db: database disk image"):
            book.apply("p1", [("g(1)", 1)], [])
    finally:
        book.close()


# --------------------------------------------------------------------------------------------
# Checkpoints
# --------------------------------------------------------------------------------------------


def _checkpoint(tmp_path: Path) -> Path:
    import numpy as np

    from agents.training.checkpoint import write_trainer_state

    directory = tmp_path / "checkpoints" / "step_1"
    directory.mkdir(parents=True)
    write_trainer_state(
        directory, step=1, sampler=np.random.default_rng(0), curriculum=None, before={}
    )
    return directory


def test_a_failed_resume_leaves_the_mistake_book_as_it_was(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import numpy as np

    from agents.training.checkpoint import read_run_checkpoint

    directory = _checkpoint(tmp_path)
    (directory / "mistake_book.json").write_text(json.dumps(BOOK)[:-20])  # cut short
    with SqliteMistakeBook(tmp_path / "mistake_book.sqlite") as book:
        book.load_dict(BOOK)
        with pytest.raises(MistakeBookFormatError, match=r"step_1/mistake_book\.json"):
            read_run_checkpoint(
                directory,
                tmp_path,
                [],
                sampler=np.random.default_rng(1),
                source=None,
                mistake_book=book,
            )
    with SqliteMistakeBook(tmp_path / "mistake_book.sqlite") as book:  # and on disk
        assert book.entries("p1") == [BookEntry("f(1)", 1, 3)]


def test_a_truncated_trainer_state_names_the_file(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from agents.training.checkpoint import CheckpointError, read_trainer_state

    directory = _checkpoint(tmp_path)
    state = directory / "trainer_state.pt"
    state.write_bytes(state.read_bytes()[:-100])
    with pytest.raises(CheckpointError, match=r"step_1/trainer_state\.pt cannot be loaded") as info:
        read_trainer_state(directory)
    assert info.value.__cause__ is not None


def _saved_coder(tmp_path: Path) -> tuple[Any, Any, Path]:
    """``(config, player, directory)``: a nano coder saved as a complete ``step_1``."""
    import torch

    from agents.training.checkpoint import COMPLETE_MARKER
    from agents.training.config import from_preset
    from agents.training.player import build_player

    cfg = from_preset("nano")
    player = build_player(
        "coder", "builtin:nano", cfg, seed=0, lr=cfg.lr, device=torch.device("cpu")
    )
    directory = tmp_path / "checkpoints" / "step_1"
    directory.mkdir(parents=True)
    player.save(directory)
    (directory / COMPLETE_MARKER).write_text("")
    return cfg, player, directory


@pytest.mark.parametrize("name", ["coder_model.pt", "coder_optimizer.pt", "coder_scheduler.pt"])
def test_a_damaged_player_file_in_a_complete_checkpoint_names_the_file(
    tmp_path: Path, name: str
) -> None:
    pytest.importorskip("torch")
    from agents.training.checkpoint import CheckpointError, latest_checkpoint

    cfg, player, directory = _saved_coder(tmp_path)
    damaged = directory / name
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    assert latest_checkpoint(tmp_path) == directory  # no quiet fallback to anything else
    with pytest.raises(CheckpointError, match=rf"step_1/{name} cannot be loaded"):
        player.load(directory)


@pytest.mark.parametrize(
    ("name", "swap", "says"),
    [
        ("coder_model.pt", "empty", "does not fit the coder model: missing"),
        ("coder_model.pt", "optimizer", "does not fit the coder model"),
        ("coder_model.pt", "tensor", "holds Tensor, not a state dict of tensors"),
        ("coder_model.pt", "shape", "does not fit the coder model: .*size mismatch"),
        ("coder_optimizer.pt", "model", "is not the coder optimizer's state"),
        ("coder_scheduler.pt", "empty", "is not the coder scheduler's state"),
    ],
)
def test_a_swapped_or_reshaped_player_file_is_refused_naming_it(
    tmp_path: Path, name: str, swap: str, says: str
) -> None:
    # a file that loads but holds the wrong thing: refused, never played with fresh weights
    torch = pytest.importorskip("torch")
    from agents.training.checkpoint import CheckpointError

    cfg, player, directory = _saved_coder(tmp_path)
    weights = torch.load(directory / "coder_model.pt")
    replacement: object = {
        "empty": {},
        "optimizer": torch.load(directory / "coder_optimizer.pt"),
        "tensor": torch.zeros(3),
        "shape": {k: (v[:1] if v.dim() else v) for k, v in weights.items()},
        "model": weights,
    }[swap]
    torch.save(replacement, directory / name)
    with pytest.raises(CheckpointError, match=rf"step_1/{name} .*{says}"):
        player.load(directory)
    if name == "coder_model.pt":  # an evaluation's checkpoint: policy reads the same way
        from agents.evaluation.policies import EvalSettings, load_policy

        cfg.save(tmp_path / "config.json")
        with pytest.raises(CheckpointError, match=rf"step_1/{name} .*{says}"):
            load_policy(f"checkpoint:{tmp_path}", None, EvalSettings())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("json_list", r"trainer_state\.json: field 'before' is damaged"),
        ("json_before", r"trainer_state\.json: field 'before' is damaged"),
        ("pt_no_step", r"trainer_state\.pt is not a trainer state: KeyError"),
        ("pt_list", r"trainer_state\.pt is not a trainer state: TypeError"),
    ],
)
def test_a_trainer_state_with_wrong_content_names_the_file(
    tmp_path: Path, damage: str, says: str
) -> None:
    torch = pytest.importorskip("torch")
    from agents.training.checkpoint import CheckpointError, read_trainer_state

    directory = _checkpoint(tmp_path)
    info, state = directory / "trainer_state.json", directory / "trainer_state.pt"
    if damage == "json_list":
        info.write_text("[]")
    elif damage == "json_before":
        info.write_text(json.dumps({"before": {"x": "abc"}}))
    elif damage == "pt_no_step":
        saved = torch.load(state, weights_only=False)
        del saved["step"]
        torch.save(saved, state)
    else:
        torch.save([1, 2], state)
    with pytest.raises(CheckpointError, match=says):
        read_trainer_state(directory)


def test_a_latest_pointer_of_undecodable_bytes_falls_back_to_the_highest_step(
    tmp_path: Path,
) -> None:
    pytest.importorskip("torch")
    from agents.training.checkpoint import COMPLETE_MARKER, latest_checkpoint

    for step in (1, 2):
        directory = tmp_path / "checkpoints" / f"step_{step}"
        directory.mkdir(parents=True)
        (directory / COMPLETE_MARKER).write_text("")
    (tmp_path / "checkpoints" / "latest").write_bytes(b"\xff\xfe")
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoints" / "step_2"
