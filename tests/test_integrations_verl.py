"""verl's custom reward function and data builder (verl itself is not installed: see the module).

verl 0.9.1 pins transformers<5.11 and pulls its own torch stack, so it stays out of the venv;
these tests call compute_score exactly as verl's NaiveRewardManager.run_single does (keyword
arguments, extra_info with the keys verl adds) and read the parquet the way verl's RLHFDataset
does (datasets.load_dataset("parquet")).
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

import codea1_env  # noqa: F401
from agents.integrations import verl as adapter
from codea1_env.duel import answer_for
from codea1_env.mutation import MutantCache
from codea1_env.problems import load_source


@pytest.fixture(autouse=True)
def _close_cores() -> Any:
    yield
    adapter.close_cores()


def test_rows_roundtrip_through_parquet_as_verl_reads_them(tmp_path: Any) -> None:
    datasets = pytest.importorskip("datasets")
    rows = adapter.build_rows("bank", limit=4, env_class="codea1_coder")
    path = str(tmp_path / "train.parquet")
    assert adapter.write_parquet(rows, path) == 4
    table = datasets.load_dataset("parquet", data_files=path)["train"]
    assert table.num_rows == 4
    first = table[0]
    assert first["data_source"] == "codea1/bank" and first["ability"] == "code"
    assert first["prompt"][0]["role"] == "user" and "```python" in first["prompt"][0]["content"]
    record = json.loads(first["reward_model"]["ground_truth"])
    assert record["task_id"] == first["extra_info"]["task_id"] and "canonical_solution" in record
    assert first["reward_spec"]["ground_truth"] == first["reward_model"]["ground_truth"]
    ids = adapter.build_rows("bank", limit=2, ground_truth="id")
    assert ids[0]["reward_model"]["ground_truth"] == ids[0]["extra_info"]["task_id"]
    assert (
        adapter.main(["--source", "bank", "--limit", "2", "--out", str(tmp_path / "v.parquet")])
        == 0
    )


def test_compute_score_as_verl_calls_it_equals_the_golden_env(shared_sandbox: Any) -> None:
    source = load_source("bank")
    rows = adapter.build_rows(source, limit=3)
    env = gym.make("CodeTestDuel-v0", source="bank", reward_mode="golden", sandbox=shared_sandbox)
    results = []
    try:
        for row in rows:
            problem = source[row["extra_info"]["task_id"]]
            mutant = MutantCache().get(problem.gt_program)[0]
            for answer in (answer_for(problem.gt_program), answer_for(mutant.source), "no code"):
                extra = dict(row["extra_info"], num_turns=None, rollout_reward_scores={})
                result = adapter.compute_score(
                    data_source=row["data_source"],
                    solution_str=answer,
                    ground_truth=row["reward_model"]["ground_truth"],
                    extra_info=extra,
                    opponent="gt",
                    workers=1,
                )
                env.reset(options={"problem_id": problem.task_id})
                _, reward, *_ = env.step(answer)
                assert result["score"] == float(reward)
                assert tuple(result) == adapter.SCORE_KEYS  # the same keys for every row
                results.append((row, answer, result))
    finally:
        env.close()
    assert {r["score"] for *_, r in results} >= {0.0, 1.0}
    batch = adapter.compute_score_batch(
        data_sources=[row["data_source"] for row, *_ in results],
        solution_strs=[answer for _, answer, _ in results],
        ground_truths=[row["reward_model"]["ground_truth"] for row, *_ in results],
        extra_infos=[row["extra_info"] for row, *_ in results],
        opponent="gt",
        workers=1,
    )
    assert batch == [r for *_, r in results]


def test_compute_score_with_a_frozen_scripted_tester_and_errors() -> None:
    problem = load_source("bank")["bank/reverse_words"]
    result = adapter.compute_score(
        "codea1/bank",
        answer_for(problem.gt_program),
        "bank/reverse_words",
        {},
        opponent="boundary",
        workers=1,
    )
    assert result["score"] == 1.0 and result["n_tests"] >= 4 and result["tester_reward"] > 0
    with pytest.raises(ValueError, match="no problem"):
        adapter.compute_score("codea1/bank", "x", "bank/nope", {}, workers=1)
    with pytest.raises(ValueError, match="ground_truth"):
        adapter.compute_score("codea1/bank", "x", "", {}, workers=1)
    fallback = adapter.compute_score(
        "codea1/bank",
        answer_for(problem.gt_program),
        None,
        {"problem": "bank/reverse_words"},
        opponent="gt",
        workers=1,
    )
    assert fallback["score"] == 1.0
