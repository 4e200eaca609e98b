"""The quality filter's pass history is saved and restored: a resumed run filters as before.

``always_pass_after`` drops a test that every one of N distinct candidates passed; what they
passed is the referee's :class:`~codea1_env.scoring.quality.PassHistory`. It is saved in the
trainer's checkpoints (``pass_history.json``) through the judge layer (:class:`Referee` and
:class:`RefereePool` alike), so a run resumed from a checkpoint scores its next steps as the
uninterrupted run does.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from judging_helpers import fenced, plain_judgement

from agents.training.checkpoint import (
    PASS_HISTORY_FILE,
    CheckpointError,
    latest_checkpoint,
    read_pass_history,
)
from codea1_env.mistake_book import InMemoryMistakeBook
from codea1_env.problems import load_source
from codea1_env.problems.problem import Problem
from codea1_env.scoring.mutation import generate_mutants
from codea1_env.scoring.pool import RefereePool
from codea1_env.scoring.quality import PassHistory, merge_states, program_digest
from codea1_env.scoring.referee import Judge, Referee
from codea1_env.stability import StabilityOptions

PROBLEMS = ["bank/reverse_words", "bank/is_palindrome", "bank/run_length_encode"]

STABILITY = StabilityOptions(quality_filter=True, always_pass_after=2)


# ---------------------------------------------------------------------------- PassHistory
def _filled() -> PassHistory:
    history = PassHistory()
    history.record("t/1", "f(1)", "def f(x): return x", True)
    history.record("t/1", "f(1)", "def f(x): return 1", True)
    history.record("t/2", "g('é\\ud800')", "def g(s): return s\udc80", False)  # lone surrogates
    history.record("t/1", "f(2)", "def f(x): return x", True)
    history.record("t/1", "f(1)", "def f(x): return x", True)  # a repeat: most recent now
    return history


def test_state_dict_round_trips_and_keeps_the_lru_order() -> None:
    history = _filled()
    state = history.state_dict()
    assert json.loads(json.dumps(state)) == state  # plain JSON data
    assert [entry[:2] for entry in state["entries"]] == [
        ["t/2", "g('é\\ud800')"],
        ["t/1", "f(2)"],
        ["t/1", "f(1)"],
    ]
    assert state["entries"][2][2] == sorted(state["entries"][2][2])  # deterministic
    restored = PassHistory()
    restored.load_state_dict(json.loads(json.dumps(state)))
    assert restored.state_dict() == state
    assert restored.always_passes("t/1", "f(1)", 2) and not restored.always_passes("t/1", "f(1)", 3)
    assert not restored.always_passes("t/2", "g('é\\ud800')", 1)  # it failed once
    # the LRU order came back too: with room for two, the least recently used goes first
    small = PassHistory(max_size=2)
    small.load_state_dict(state)
    assert [entry[:2] for entry in small.state_dict()["entries"]] == [
        ["t/1", "f(2)"],
        ["t/1", "f(1)"],
    ]
    small.record("t/1", "f(2)", "x", True)  # f(2) used: f(1) is now the oldest
    small.record("t/3", "h()", "y", True)
    assert [entry[:2] for entry in small.state_dict()["entries"]] == [
        ["t/1", "f(2)"],
        ["t/3", "h()"],
    ]


def test_program_digests_are_stable_across_processes() -> None:
    program = "def f(x):\n    return x  # é \udc80"
    code = (
        f"from codea1_env.scoring.quality import program_digest;print(program_digest({program!r}))"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(seed), "PYTHONPATH": str(Path(__file__).parents[1])},
        ).stdout.strip()
        for seed in (1, 2)
    }
    assert seen == {str(program_digest(program))}


@pytest.mark.parametrize(
    ("state", "field"),
    [
        ([], "(top level)"),
        ({"version": 2, "entries": []}, "version"),
        ({"version": 1}, "entries"),
        ({"version": 1, "entries": [], "extra": 1}, "extra"),
        ({"version": 1, "entries": [["t", "f(1)", ["00" * 8]]]}, "entries[0]"),
        ({"version": 1, "entries": [[1, "f(1)", ["00" * 8], 0]]}, "entries[0].task_id"),
        ({"version": 1, "entries": [["t", None, ["00" * 8], 0]]}, "entries[0].call"),
        ({"version": 1, "entries": [["t", "f(1)", [], 0]]}, "entries[0].programs"),
        ({"version": 1, "entries": [["t", "f(1)", ["xyz"], 0]]}, "entries[0].programs[0]"),
        (
            {"version": 1, "entries": [["t", "f(1)", ["00" * 8, "00" * 8], 0]]},
            "entries[0].programs",
        ),
        ({"version": 1, "entries": [["t", "f(1)", ["00" * 8], -1]]}, "entries[0].failures"),
        ({"version": 1, "entries": [["t", "f(1)", ["00" * 8], True]]}, "entries[0].failures"),
        ({"version": 1, "entries": [["t", "f(1)", ["00" * 8], 0]] * 2}, "entries[1]"),
    ],
)
def test_a_bad_state_is_refused_naming_the_field_and_changes_nothing(
    state: Any, field: str
) -> None:
    history = _filled()
    before = history.state_dict()
    with pytest.raises(ValueError, match=f"field '{_escaped(field)}'"):
        history.load_state_dict(state)
    assert history.state_dict() == before


def _escaped(text: str) -> str:
    return "".join("\\" + c if c in "[]()." else c for c in text)


def test_merged_states_unite_candidates_and_add_failures() -> None:
    one, two = PassHistory(), PassHistory()
    one.record("t", "f(1)", "a", True)
    one.record("t", "f(2)", "a", True)
    two.record("t", "f(1)", "b", True)
    two.record("u", "g(1)", "b", False)
    merged = PassHistory()
    merged.load_state_dict(merge_states([one.state_dict(), two.state_dict()]))
    assert merged.always_passes("t", "f(1)", 2) and not merged.always_passes("u", "g(1)", 1)
    assert [e[:2] for e in merged.state_dict()["entries"]] == [
        ["t", "f(2)"],
        ["t", "f(1)"],
        ["u", "g(1)"],
    ]
    with pytest.raises(ValueError, match=r"state 1: .*field 'version'"):
        merge_states([one.state_dict(), {"entries": []}])


def test_a_test_that_never_failed_keeps_at_most_keep_candidates() -> None:
    # enough to answer always_passes up to keep, which is all the referee asks (its keep is
    # always_pass_after): the memory and the saved file stay bounded by max_size x keep
    history = PassHistory()
    for index in range(100):
        history.record("t", "f(1)", f"program {index}", True, keep=16)
        history.record("t", "f(2)", f"program {index}", True)
    by_call = {entry[1]: entry for entry in history.state_dict()["entries"]}
    assert len(by_call["f(1)"][2]) == 16 and len(by_call["f(2)"][2]) == 100
    assert history.always_passes("t", "f(1)", 16)
    assert not history.always_passes("t", "f(1)", 17)  # more than it kept: not known
    history.record("t", "f(1)", "a failing one", False, keep=16)
    assert not history.always_passes("t", "f(1)", 1)


def test_the_referee_keeps_always_pass_after_candidates(shared_sandbox: Any) -> None:
    problem = load_source("bank")[PROBLEMS[0]]
    referee = Referee(sandbox=shared_sandbox, stability=STABILITY)  # always_pass_after=2
    codes = [fenced(f"{problem.gt_program}\nVARIANT = {i}") for i in range(4)]
    test = problem.tests[0]
    referee.judge(problem, codes, [[fenced(test)]] * len(codes))
    [entry] = referee.pass_history_state()["entries"][-1:]
    assert entry[0] == problem.task_id and len(entry[2]) == 2 and entry[3] == 0


def test_a_test_that_failed_keeps_its_failure_count_only() -> None:
    # it can never be trivial again: which candidates ran it no longer matters
    history = PassHistory()
    for program in ("a", "b", "c"):
        history.record("t", "f(1)", program, True)
    history.record("t", "f(1)", "d", False)
    history.record("t", "f(1)", "e", True)
    assert history.state_dict()["entries"] == [["t", "f(1)", [], 1]]
    assert not history.always_passes("t", "f(1)", 1)
    other = PassHistory()
    other.record("t", "f(1)", "z", True)
    other.update(history)
    assert other.state_dict()["entries"] == [["t", "f(1)", [], 1]]
    fresh = PassHistory()
    fresh.record("u", "g(1)", "a", True)  # the shared empty set of failed tests stays empty
    assert fresh.state_dict()["entries"] == [["u", "g(1)", [f"{program_digest('a'):016x}"], 0]]
    digest = f"{program_digest('a'):016x}"
    for entry, says in (
        (["t", "f(1)", [digest], 1], "must be empty for a test that failed"),
        (["t", "f(1)", [], 0], "must name a candidate for a test that never failed"),
    ):
        with pytest.raises(ValueError, match=rf"entries\[0\]\.programs' {says}"):
            PassHistory().load_state_dict({"version": 1, "entries": [entry]})


# ---------------------------------------------------------------------------- the judges


def _batch(offset: int) -> list[tuple[Problem, list[str], list[list[str]]]]:
    """GT and mutant codes; suites of rotated GT tests (some pass every candidate)."""
    source = load_source("bank")
    items = []
    for number, task_id in enumerate(PROBLEMS):
        problem = source[task_id]
        mutants = [m.source for m in generate_mutants(problem.gt_program)]
        pick = [mutants[(offset + number + i) % len(mutants)] for i in range(2)]
        codes = [fenced(problem.gt_program), *(fenced(m) for m in pick)]
        tests = list(problem.tests)
        suites = []
        for index in range(len(codes)):
            start = (index + offset) % len(tests)
            kept = tests[start:] + tests[:start]
            suites.append(["\n".join(kept[:3]), "\n".join(kept[2:5])])
        items.append((problem, codes, suites))
    return items


def _same_entries(one: dict[str, Any], two: dict[str, Any], *, ordered: bool) -> bool:
    """The same entries; a pool lists each process's together, so its order follows the owners."""
    if ordered:
        return one == two
    return sorted(map(repr, one["entries"])) == sorted(map(repr, two["entries"]))


def _resumed_matches_uninterrupted(make: Any, *, ordered: bool) -> None:
    """Batches 1-2, save, a fresh judge loads, batch 3: as the uninterrupted judge scores it."""
    with make() as uninterrupted, make() as resumed, make() as forgetful:
        for offset in (0, 1):
            uninterrupted.judge_many(_batch(offset))
        state = uninterrupted.pass_history_state()
        assert json.loads(json.dumps(state)) == state and state["entries"]
        resumed.load_pass_history_state(json.loads(json.dumps(state)))
        assert _same_entries(resumed.pass_history_state(), state, ordered=ordered)
        # the mistake book is restored separately (the checkpoint's mistake_book.json)
        resumed.mistake_book.load_dict(uninterrupted.mistake_book.to_dict(), replace=True)
        forgetful.mistake_book.load_dict(uninterrupted.mistake_book.to_dict(), replace=True)
        third = _batch(2)
        expected = [plain_judgement(j) for j in uninterrupted.judge_many(third)]
        assert [plain_judgement(j) for j in resumed.judge_many(third)] == expected
        after = uninterrupted.pass_history_state()
        assert _same_entries(resumed.pass_history_state(), after, ordered=ordered)
        # what the old code did (the history forgotten) scores differently: the test bites
        filtered = sum(j["metrics"]["quality/trivial_tests"] for j in expected)
        assert filtered > 0
        assert [plain_judgement(j) for j in forgetful.judge_many(third)] != expected


def test_a_referee_resumed_from_a_saved_history_judges_as_the_uninterrupted_one(
    shared_sandbox: Any,
) -> None:
    _resumed_matches_uninterrupted(
        lambda: Referee(
            sandbox=shared_sandbox, mistake_book=InMemoryMistakeBook(), stability=STABILITY
        ),
        ordered=True,
    )


def test_a_pool_resumed_from_a_saved_history_judges_as_the_uninterrupted_one() -> None:
    _resumed_matches_uninterrupted(
        lambda: RefereePool(processes=2, sandbox_workers=1, stability=STABILITY), ordered=False
    )


def test_a_pool_and_a_referee_read_each_others_history(shared_sandbox: Any) -> None:
    referee = Referee(
        sandbox=shared_sandbox, mistake_book=InMemoryMistakeBook(), stability=STABILITY
    )
    with RefereePool(processes=2, sandbox_workers=1, stability=STABILITY) as pool:
        for offset in (0, 1):
            batch = _batch(offset)
            assert [plain_judgement(j) for j in pool.judge_many(batch)] == [
                plain_judgement(j) for j in referee.judge_many(batch)
            ]
        pooled, single = pool.pass_history_state(), referee.pass_history_state()
        # the same entries; the pool lists each process's own problems together
        assert sorted(map(str, pooled["entries"])) == sorted(map(str, single["entries"]))
        with RefereePool(processes=2, sandbox_workers=1, stability=STABILITY) as other:
            other.load_pass_history_state(single)  # each problem to its owner
            assert sorted(map(str, other.pass_history_state()["entries"])) == sorted(
                map(str, single["entries"])
            )
            with pytest.raises(ValueError, match="field 'entries'"):
                other.load_pass_history_state({"version": 1, "entries": {}})
            assert sorted(map(str, other.pass_history_state()["entries"])) == sorted(
                map(str, single["entries"])
            )
        fresh = Referee(sandbox=shared_sandbox, stability=STABILITY)
        fresh.load_pass_history_state(pooled)
        assert sorted(map(str, fresh.pass_history_state()["entries"])) == sorted(
            map(str, single["entries"])
        )


def test_both_judges_have_the_methods() -> None:
    for name in ("pass_history_state", "load_pass_history_state"):
        assert name in Judge.__abstractmethods__


# ---------------------------------------------------------------------------- the trainer
needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="needs the train extra: pip install 'codea1[train]'",
)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The trainer's rollouts with scripted texts: GT and mutant codes, rotated GT tests.

    The nano model's own answers are noise (no valid test, so no pass history); the texts are
    replaced, keyed by the rollout seed and the sample's index, so a resumed run plays the same
    texts as the uninterrupted one. The updates still train on the model's own tokens.
    """
    from agents.training.trainer import Trainer

    original = Trainer._generate

    def generate(self: Any, role: str, *args: Any, **kwargs: Any) -> list[Any]:
        gens = original(self, role, *args, **kwargs)
        infos = args[1]
        key = int(kwargs["seed"]) % 997 + int(kwargs.get("seed_offset", 0))
        out = []
        for index, (gen, info) in enumerate(zip(gens, infos, strict=True)):
            problem = info["problem"]
            turn = key + index
            if role == "coder":
                options = [problem.gt_program] + [
                    m.source for m in generate_mutants(problem.gt_program)[:3]
                ]
                text = fenced(options[turn % len(options)])
            else:
                tests = list(problem.tests)
                start = turn % len(tests)
                text = "\n".join((tests[start:] + tests[:start])[:3])
            out.append(dataclasses.replace(gen, text=text))
        return out

    monkeypatch.setattr(Trainer, "_generate", generate)
    yield


def _source() -> Any:
    from codea1_env.problems.sources import ListSource

    bank = load_source("bank")
    return ListSource([bank[t] for t in PROBLEMS[:2]], name="two")


def _run(run_dir: Path, steps: int, **options: Any) -> list[str]:
    from agents.training.config import from_preset
    from agents.training.trainer import Trainer

    cfg = from_preset(
        "nano",
        steps=steps,
        output_dir=str(run_dir),
        quality_filter=True,
        always_pass_after=2,
        checkpoint_every=2,
        problem_order="epochs",
        **options,
    )
    logs: list[str] = []
    Trainer(cfg, train_source=_source(), log=logs.append).train()
    return logs


KEYS = (
    "quality/trivial_tests",
    "coder/reward",
    "tester/reward",
    "tester/validity",
    "mistake_book/size",
)


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    from agents.training.metrics import read_metrics

    return [
        {"step": row["step"], **{k: row[k] for k in KEYS}}
        for row in read_metrics(run_dir / "metrics.jsonl")
    ]


@pytest.mark.slow
@needs_torch
@pytest.mark.parametrize("processes", [1, 2])
def test_a_resumed_training_run_scores_as_the_uninterrupted_one(
    tmp_path: Path, scripted: None, processes: int
) -> None:
    whole, resumed, forgetful = tmp_path / "whole", tmp_path / "resumed", tmp_path / "forgetful"
    _run(whole, 4, referee_processes=processes)
    expected = _rows(whole)
    assert [row["step"] for row in expected] == [1, 2, 3, 4]
    assert sum(row["quality/trivial_tests"] for row in expected[2:]) > 0  # the filter bites

    _run(resumed, 2, referee_processes=processes)
    checkpoint = latest_checkpoint(resumed)
    assert checkpoint is not None and (checkpoint / PASS_HISTORY_FILE).is_file()
    logs = _run(resumed, 4, referee_processes=processes)
    assert any("resuming from checkpoint step_2" in line for line in logs), logs
    assert _rows(resumed) == expected

    # the old checkpoints (no pass_history.json) resume with an empty history, and say so;
    # that run scores differently: what the test above would catch on the old code
    _run(forgetful, 2, referee_processes=processes)
    checkpoint = latest_checkpoint(forgetful)
    assert checkpoint is not None
    (checkpoint / PASS_HISTORY_FILE).unlink()
    logs = _run(forgetful, 4, referee_processes=processes)
    assert any(f"holds no {PASS_HISTORY_FILE}" in line for line in logs), logs
    assert _rows(forgetful)[:2] == expected[:2]
    assert _rows(forgetful) != expected


@pytest.mark.slow
@needs_torch
def test_a_damaged_history_file_stops_the_resume_naming_file_and_field(
    tmp_path: Path, scripted: None
) -> None:
    run_dir = tmp_path / "run"
    _run(run_dir, 2)
    checkpoint = latest_checkpoint(run_dir)
    assert checkpoint is not None
    path = checkpoint / PASS_HISTORY_FILE
    data = json.loads(path.read_text())
    assert data["version"] == 1 and len(data["ranks"]) == 1 and data["ranks"][0]["entries"]
    data["ranks"][0]["entries"][0][3] = "many"
    path.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=r"pass_history\.json.*entries\[0\]\.failures"):
        _run(run_dir, 4)
    path.write_text("{not json")
    with pytest.raises(CheckpointError, match=r"pass_history\.json is not valid JSON"):
        _run(run_dir, 4)


@needs_torch
def test_each_rank_gets_its_own_history_or_all_merged(tmp_path: Path) -> None:
    one, two = PassHistory(), PassHistory()
    one.record("t", "f(1)", "a", True)
    two.record("t", "f(1)", "b", True)
    path = tmp_path / PASS_HISTORY_FILE
    path.write_text(json.dumps({"version": 1, "ranks": [one.state_dict(), two.state_dict()]}))
    assert read_pass_history(tmp_path, rank=1, world_size=2) == (two.state_dict(), False)
    state, merged = read_pass_history(tmp_path, rank=0, world_size=1) or ({}, False)
    assert merged and state == merge_states([one.state_dict(), two.state_dict()])
    assert read_pass_history(tmp_path / "missing") is None
    path.write_text(json.dumps({"version": 1, "ranks": [one.state_dict(), {"version": 1}]}))
    with pytest.raises(CheckpointError, match=r"ranks\[1\]: .*field 'entries'"):
        read_pass_history(tmp_path, rank=0, world_size=2)  # every rank checks every rank's
