"""Which problems each RL step plays: shuffled epochs (verl's order) or uniform draws."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agents.training.problem_order import EpochOrder


def test_each_epoch_plays_every_whole_batch_once_and_drops_the_rest() -> None:
    ids = [f"p{i}" for i in range(10)]
    order = EpochOrder(ids, batch=3, seed=7)
    assert order.steps_per_epoch == 3
    for epoch in range(4):
        steps = range(epoch * 3 + 1, epoch * 3 + 4)
        played = [t for s in steps for t in order.ids_for_step(s)]
        assert len(played) == len(set(played)) == 9  # no repeat in the epoch; one dropped
        assert {order.epoch_of(s) for s in steps} == {epoch}
    # a fresh permutation per epoch, a pure function of (seed, epoch)
    assert order.permutation(0) != order.permutation(1)
    assert EpochOrder(ids, 3, 7).ids_for_step(5) == order.ids_for_step(5)
    assert EpochOrder(ids, 3, 8).permutation(0) != order.permutation(0)


def test_a_source_smaller_than_a_batch_reads_the_permutations_one_after_the_other() -> None:
    order = EpochOrder(["a", "b", "c"], batch=5, seed=0)
    assert order.steps_per_epoch == 0
    stream = (
        order.permutation(0) + order.permutation(1) + order.permutation(2) + order.permutation(3)
    )
    expected = ["abc"[i] for i in stream]
    assert order.ids_for_step(1) + order.ids_for_step(2) == expected[:10]
    # the first permutation whole, then two of the next: two problems twice in the step
    assert sorted(Counter(order.ids_for_step(1)).values()) == [1, 2, 2]
    assert [order.epoch_of(s) for s in (1, 2, 3)] == [1, 3, 4]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="no problems"):
        EpochOrder([], 2, 0)
    with pytest.raises(ValueError, match=">= 1"):
        EpochOrder(["a"], 0, 0)
    with pytest.raises(ValueError, match="from 1"):
        EpochOrder(["a"], 1, 0).ids_for_step(0)


def _played(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record the task ids of every judging call the trainer makes (one per step)."""
    import agents.training.trainer as trainer_module

    played: list[list[str]] = []
    judge = trainer_module.judge_grid

    def recording(referee: Any, grid: Any, **kwargs: Any) -> Any:
        played.append([rows[0][0].problem.task_id for rows in grid])
        return judge(referee, grid, **kwargs)

    monkeypatch.setattr(trainer_module, "judge_grid", recording)
    return played


@pytest.mark.slow
def test_the_trainer_plays_epochs_and_a_resume_continues_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")
    from agents.training.config import from_preset
    from agents.training.trainer import Trainer
    from codea1_env.problems import load_source

    played = _played(monkeypatch)
    settings: dict[str, Any] = {"problems": "bank", "problems_per_step": 4}
    settings["output_dir"] = str(tmp_path / "run")
    Trainer(from_preset("nano", steps=2, **settings), log=lambda _m: None).train()
    Trainer(from_preset("nano", steps=4, **settings), log=lambda _m: None).train()  # resumes
    order = EpochOrder(load_source("bank").ids(), 4, from_preset("nano").seed)
    assert played == [order.ids_for_step(step) for step in (1, 2, 3, 4)]
    assert all(len(set(ids)) == 4 for ids in played)


def test_uniform_order_draws_through_the_picker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch", reason="needs the train extra: pip install 'codea1[train]'")
    import numpy as np

    from agents.training.config import from_preset
    from agents.training.trainer import Trainer
    from codea1_env.problems import load_source

    played = _played(monkeypatch)
    cfg = from_preset(
        "nano",
        steps=2,
        problems="bank",
        problems_per_step=4,
        problem_order="uniform",
        output_dir=str(tmp_path / "run"),
    )
    Trainer(cfg, log=lambda _m: None).train()
    rng, bank = np.random.default_rng(cfg.seed), load_source("bank")
    assert played == [[bank.sample(rng).task_id for _ in range(4)] for _ in range(2)]
