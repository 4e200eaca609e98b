"""The envs' ``mistake_book=`` argument: every accepted value, ``False`` (no book), bad values."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import codea1_env  # noqa: F401  (registers the ids)
from codea1_env.mistake_book import InMemoryMistakeBook, SqliteMistakeBook
from codea1_env.scoring.referee import Referee

WRONG = "```python\ndef clamp(value, lo, hi):\n    return value\n```"
BREAKS = "```python\nassert clamp(5, 0, 3) == 3\n```"  # the wrong code fails it: it enters the book
PASSES = "```python\nassert clamp(2, 0, 3) == 2\n```"  # the wrong code passes it


def _book(env: Any) -> Any:
    """The book of the referee an env (or vector env) built."""
    return env.unwrapped.host.referee.mistake_book


def _two_episodes(env: gym.Env[Any, Any]) -> list[dict[str, float]]:
    rewards = []
    for suite in (BREAKS, PASSES):
        env.reset(seed=0, options={"problem_id": "bank/clamp"})
        env.step(WRONG)
        *_, info = env.step(suite)
        rewards.append(info["rewards"])
    return rewards


def test_false_turns_the_book_off_and_writes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with gym.make("CodeTestDuel-v0", mistake_book=None) as remembering:
        first, second = _two_episodes(remembering)
    # the book replays the test of the first episode, which the code fails: half its reward
    assert first["coder"] == 0.0 and second["coder"] == 0.5
    with gym.make("CodeTestDuel-v0", mistake_book=False) as forgetting:
        first, second = _two_episodes(forgetting)
        assert _book(forgetting).size() == 0
    assert first["coder"] == 0.0 and second["coder"] == 1.0  # as if each were the first
    assert os.listdir(tmp_path) == []  # no file named "False" (the bug this guards)


@pytest.mark.parametrize("spec", [None, True, "memory", ":memory:"])
def test_in_memory_specs(spec: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with gym.make("CodeTestDuel-v0", mistake_book=spec) as env:
        assert isinstance(_book(env), InMemoryMistakeBook)
    assert os.listdir(tmp_path) == []


def test_paths_open_a_sqlite_book(tmp_path: Path) -> None:
    for spec in (tmp_path / "a.sqlite", str(tmp_path / "b.sqlite"), f"sqlite:{tmp_path}/c.sqlite"):
        with gym.make("CodeTestDuel-v0", mistake_book=spec) as env:
            assert isinstance(_book(env), SqliteMistakeBook)
    assert sorted(p.name for p in tmp_path.glob("*.sqlite")) == ["a.sqlite", "b.sqlite", "c.sqlite"]


@pytest.mark.parametrize("bad", [0, 1, 1.5, ["x"], b"book.db"])
def test_other_values_are_refused_by_type(bad: Any) -> None:
    with pytest.raises(TypeError, match=f"mistake_book must be .* got {type(bad).__name__}"):
        gym.make("CodeTestDuel-v0", mistake_book=bad)


def test_an_empty_path_and_false_with_a_shared_referee_are_refused() -> None:
    with pytest.raises(ValueError, match="empty spec"):
        gym.make("CodeTestDuel-v0", mistake_book="")
    referee = Referee()
    try:
        with pytest.raises(ValueError, match="mistake_book=False needs the env's own referee"):
            gym.make("CodeTestDuel-v0", mistake_book=False, referee=referee)
    finally:
        referee.close()


def test_the_vector_env_and_the_coder_env_take_false_too() -> None:
    vec = gym.make_vec(
        "CodeTestDuel-v0",
        num_envs=2,
        vectorization_mode="vector_entry_point",
        group_size=2,
        mistake_book=False,
    )
    try:
        vec.reset(seed=0, options={"problem_ids": ["bank/clamp"]})
        vec.step([WRONG, WRONG])
        vec.step([BREAKS, BREAKS])
        assert _book(vec).size() == 0
    finally:
        vec.close()
    with gym.make("CodeTestDuel-Coder-v0", mistake_book=False) as coder:
        coder.reset(seed=0)
        assert _book(coder).size() == 0
