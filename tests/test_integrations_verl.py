"""verl's custom reward function and the data builders of both roles, without verl.

These tests call compute_score exactly as verl's NaiveRewardManager.run_single does (keyword
arguments, extra_info with the keys verl adds) and read the parquet the way verl's RLHFDataset
does (datasets.load_dataset("parquet")); they run in the main venv, where verl is not installed
(verl 0.9.1 pins transformers<5.11). verl's own reward loop with the codea1 reward manager is
tested in test_integrations_verl_manager.py, in a venv with verl 0.9.1.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

import codea1_env  # noqa: F401
from agents.integrations import verl as adapter
from codea1_env.game.duel import answer_for
from codea1_env.problems import load_source
from codea1_env.scoring.mutation import MutantCache

PYARROW = "writing parquet needs pyarrow: pip install 'codea1[hf]'"


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


# ------------------------------------------------------------------ the tester role

BUGGY = answer_for(
    "def reverse_words(text):\n"
    "    words = text.split(' ')\n"
    "    return ' '.join(w for w in reversed(words) if w)\n"
)
TESTS = (
    "```python\nassert reverse_words('a b') == 'b a'\n"
    "assert reverse_words('a\\tb') == 'b a'\nassert reverse_words('x') == 'y'\n```"
)


def _env_rewards(sandbox: Any, problem: Any, code: str, tests: str) -> dict[str, Any]:
    """CodeTestDuel-v0's end-of-episode info for (code, tests), with a fresh mistake book."""
    from codea1_env.problems import problem_to_dict

    env = gym.make("CodeTestDuel-v0", source="bank", sandbox=sandbox)
    try:
        env.reset(options={"problem": problem_to_dict(problem)})
        env.step(code)
        *_, info = env.step(tests)
        return dict(info)
    finally:
        env.close()


def test_tester_rows_carry_the_frozen_code_and_roundtrip_through_parquet(tmp_path: Any) -> None:
    datasets = pytest.importorskip("datasets")
    source = load_source("bank")
    rows = adapter.build_tester_rows(source, limit=3, mutants=2, env_class="codea1_tester")
    by_task: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_task.setdefault(row["extra_info"]["task_id"], []).append(row)
    assert len(by_task) == 3
    for task_id, task_rows in by_task.items():
        problem = source[task_id]
        kinds = [r["extra_info"]["code_source"] for r in task_rows]
        assert kinds[0] == "gt" and 1 <= len(kinds) - 1 <= 2
        assert all(k.startswith("mutant:") for k in kinds[1:])
        assert task_rows[0]["extra_info"]["code"] == answer_for(problem.gt_program)
        mutants = {m.source for m in MutantCache().get(problem.gt_program)}
        for row in task_rows:
            info = row["extra_info"]
            assert info["role"] == "tester" and row["data_source"] == "codea1/bank"
            prompt = row["prompt"][0]["content"]
            assert "expert software tester" in prompt and "Candidate solution" in prompt
            assert prompt == adapter.tester_prompt(problem, info["code"])
            assert json.loads(row["reward_model"]["ground_truth"])["task_id"] == task_id
            assert row["reward_spec"] == {
                "method": "rule",
                **{"ground_truth": row["reward_model"]["ground_truth"]},
            }
        for row in task_rows[1:]:
            program = row["extra_info"]["code"].split("```python\n", 1)[1].rsplit("\n```", 1)[0]
            assert program in mutants
    assert [r["extra_info"]["index"] for r in rows] == list(range(len(rows)))
    # one parquet with both roles, read as verl's RLHFDataset reads it
    path = str(tmp_path / "both.parquet")
    both = adapter.build_rows(source, limit=2) + rows
    adapter.write_parquet(both, path)
    table = datasets.load_dataset("parquet", data_files=path)["train"]
    assert table.num_rows == len(both)
    assert table[0]["extra_info"]["role"] == "coder" and table[0]["extra_info"]["code"] is None
    assert table[2]["extra_info"]["role"] == "tester" and table[2]["extra_info"]["code"]
    out = tmp_path / "t.parquet"
    argv = ["--role", "tester", "--codes", "mutants", "--mutants", "1", "--limit", "2"]
    assert adapter.main([*argv, "--out", str(out)]) == 0
    written = datasets.load_dataset("parquet", data_files=str(out))["train"]
    assert written.num_rows == 2 and written[0]["extra_info"]["code_source"].startswith("mutant:")


def test_compute_score_of_tester_rows_equals_the_env_tester_reward(shared_sandbox: Any) -> None:
    source = load_source("bank")
    problem = source["bank/reverse_words"]
    rows = adapter.build_tester_rows(source, limit=1, mutants=1)
    assert [r["extra_info"]["code_source"] for r in rows][0] == "gt"
    tester_row = dict(rows[0], extra_info=dict(rows[0]["extra_info"], code=BUGGY))
    from agents.integrations.core import gt_suite

    cases = [(row, suite) for row in (*rows, tester_row) for suite in (TESTS, gt_suite(problem))]
    kwargs = {"opponent": "gt+mistake_book", "update_book": False, "workers": 1}
    seen = []
    for row, suite in cases:
        extra = dict(row["extra_info"], num_turns=None, rollout_reward_scores={})
        result = adapter.compute_score(
            row["data_source"], suite, row["reward_model"]["ground_truth"], extra, **kwargs
        )
        info = _env_rewards(shared_sandbox, problem, row["extra_info"]["code"], suite)
        assert result["score"] == info["rewards"]["tester"] == result["tester_reward"]
        assert result["coder_reward"] == info["rewards"]["coder"]
        assert result["n_tests"] == len(info["verdicts"]) and tuple(result) == adapter.SCORE_KEYS
        seen.append(result["score"])
    assert any(0.0 < s < 1.0 for s in seen) and len(set(seen)) >= 3
    batch = adapter.compute_score_batch(
        [r["data_source"] for r, _ in cases],
        [s for _, s in cases],
        [r["reward_model"]["ground_truth"] for r, _ in cases],
        [r["extra_info"] for r, _ in cases],
        **kwargs,
    )
    assert [b["score"] for b in batch] == seen
    with pytest.raises(ValueError, match=r"^extra_info\.code: a tester row needs"):
        adapter.compute_score("codea1/bank", TESTS, "bank/reverse_words", {"role": "tester"})
    with pytest.raises(ValueError, match=r"^extra_info\.role: expected coder or tester"):
        adapter.compute_score("codea1/bank", TESTS, "bank/reverse_words", {"role": "judge"})
    with pytest.raises(ValueError, match=r"^extra_info\.problem: no problem 'bank/nope'"):
        adapter.compute_score("codea1/bank", TESTS, "", {"problem": "bank/nope"})
    with pytest.raises(ValueError, match=r"^extra_infos\[1\]\.role: expected coder or tester"):
        adapter.compute_score_batch(
            ["codea1/bank"] * 2, [TESTS] * 2, ["bank/clamp"] * 2, [{}, {"role": "judge"}]
        )


class _FrozenCoderService:
    """Duck-typed ``CompletionService``: answers every coder prompt with a fixed code."""

    name = "coder"

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        self.prompts.extend(prompts)
        choices = [
            {"index": i, "text": self.answer, "finish_reason": "stop", "logprobs": None}
            for i in range(len(prompts))
        ]
        return {"object": "text_completion", "model": self.name, "choices": choices}

    def chat_completions(self, body: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("not used")

    chat_completions_stream = completions_stream = chat_completions

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.name, "object": "model"}]}


def test_tester_rows_from_a_frozen_coder_over_http() -> None:
    import threading

    from agents.lm.serve import make_server

    program = BUGGY.split("```python\n", 1)[1].rsplit("\n```", 1)[0]
    service = _FrozenCoderService(program + "\n```")  # a completion closes the opened block
    server = make_server(service, "127.0.0.1", 0)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        rows = adapter.build_tester_rows(
            "bank", codes="http", coder_url=f"http://{host}:{port}/v1", samples=2, limit=2
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert len(rows) == 4 and len(service.prompts) == 4
    assert {r["extra_info"]["code_source"] for r in rows} == {"http:coder"}
    assert "def reverse_words(text):" in rows[0]["extra_info"]["code"]
    assert "' '.join(w for w in reversed(words) if w)" in rows[0]["prompt"][0]["content"]
    with pytest.raises(ValueError, match="coder_url"):
        adapter.build_tester_rows("bank", codes="http", limit=1)
    with pytest.raises(ValueError, match="codes must be"):
        adapter.build_tester_rows("bank", codes="nope", limit=1)


# ------------------------------------------------------------------ reward_url: codea1 serve-reward


@pytest.fixture
def service_for(shared_sandbox: Any, start_reward_server: Any) -> Any:
    """``start(**core_kwargs) -> (url, service)``: a ``codea1 serve-reward`` on 127.0.0.1."""
    from agents.integrations.core import RewardCore

    def start(**core_kwargs: Any) -> tuple[str, Any]:
        server = start_reward_server(RewardCore("bank", sandbox=shared_sandbox, **core_kwargs))
        return server.url, server.service

    return start


def _cases() -> list[tuple[dict[str, Any], str]]:
    """(row, response): coder rows (GT, a mutant, no code) and tester rows (two suites each)."""
    from agents.integrations.core import gt_suite

    source = load_source("bank")
    cases: list[tuple[dict[str, Any], str]] = []
    for row in adapter.build_rows([source["bank/reverse_words"], source["bank/clamp"]]):
        problem = source[row["extra_info"]["task_id"]]
        mutant = MutantCache().get(problem.gt_program)[0]
        for answer in (answer_for(problem.gt_program), "no code", answer_for(mutant.source)):
            cases.append((row, answer))
    problem = source["bank/reverse_words"]
    tester = adapter.build_tester_rows([problem], codes="gt")[0]
    buggy = dict(tester, extra_info=dict(tester["extra_info"], code=BUGGY))
    for row in (tester, buggy):
        cases += [(row, TESTS), (row, gt_suite(problem))]
    return cases


def _call(row: dict[str, Any], response: str) -> dict[str, Any]:
    """compute_score's positional arguments and verl's extra_info keys, as verl passes them."""
    extra = dict(row["extra_info"], num_turns=None, rollout_reward_scores={})
    return {
        "data_source": row["data_source"],
        "solution_str": response,
        "ground_truth": row["reward_model"]["ground_truth"],
        "extra_info": extra,
    }


def test_reward_url_scores_equal_local_scores_and_the_env(
    service_for: Any, shared_sandbox: Any
) -> None:
    import asyncio

    from agents.integrations.core import gt_suite

    url, service = service_for(opponent="gt+mistake_book", update_book=False)
    local: dict[str, Any] = {"opponent": "gt+mistake_book", "update_book": False, "workers": 1}
    cases = _cases()
    remote = [adapter.compute_score(**_call(r, t), reward_url=url) for r, t in cases]
    assert service.stats["accepted"] == len(cases)
    for (row, text), got in zip(cases, remote):
        assert got == adapter.compute_score(**_call(row, text), **local)
        assert tuple(got) == adapter.SCORE_KEYS
        problem = adapter.core_for(local).problem(row["reward_model"]["ground_truth"])
        role = row["extra_info"]["role"]
        code, tests = (row["extra_info"]["code"], text) if role == "tester" else (text, None)
        info = _env_rewards(shared_sandbox, problem, code, tests or gt_suite(problem))
        assert got["score"] == info["rewards"][role]
        assert got["coder_reward"] == info["rewards"]["coder"]
        assert got["tester_reward"] == info["rewards"]["tester"]
        assert got["n_tests"] == len(info["verdicts"])
    assert {r["score"] for r in remote[:6]} >= {0.0, 1.0}
    assert any(0.0 < r["score"] < 1.0 for r in remote[6:])
    # the batch form: ONE request; the async form (what verl's reward loop awaits)
    batch = adapter.compute_score_batch(
        [r["data_source"] for r, _ in cases],
        [t for _, t in cases],
        [r["reward_model"]["ground_truth"] for r, _ in cases],
        [r["extra_info"] for r, _ in cases],
        reward_url=url + "/v1/rows",
    )
    assert batch == remote and service.stats["accepted"] == len(cases) + 1

    async def gathered(**kwargs: Any) -> list[dict[str, float]]:
        calls = (adapter.compute_score_async(**_call(r, t), **kwargs) for r, t in cases)
        return list(await asyncio.gather(*calls))

    assert asyncio.run(gathered(reward_url=url)) == remote
    assert asyncio.run(gathered(**local)) == remote  # without reward_url: local, in a thread
    assert service.stats["batches"] < service.stats["accepted"]  # concurrent requests batched


def test_a_response_that_is_not_text_scores_zero_remotely_as_locally(service_for: Any) -> None:
    url, _service = service_for(opponent="gt+mistake_book", update_book=False)
    local: dict[str, Any] = {"opponent": "gt+mistake_book", "update_book": False, "workers": 1}
    coder, tester = _cases()[0][0], _cases()[-1][0]
    for row in (coder, tester):
        for response in (None, 3, ["x"]):
            got = adapter.compute_score(**_call(row, response), reward_url=url)  # type: ignore[arg-type]
            assert got == adapter.compute_score(**_call(row, response), **local)  # type: ignore[arg-type]
            assert got["score"] == 0.0 and got["scored"] == 0.0


def test_reward_url_shares_the_services_book_as_local_scoring_shares_its_own(
    service_for: Any, tmp_path: Any
) -> None:
    """The same sequence with book updates: the service's SQLite book evolves as a local one."""
    from codea1_env.mistake_book import SqliteMistakeBook

    book = tmp_path / "service_book.sqlite"
    url, service = service_for(opponent="boundary", mistake_book=str(book))
    local: dict[str, Any] = {"opponent": "boundary", "workers": 1}
    cases = _cases() * 2  # the second round replays what the first wrote
    sizes = []
    for row, text in cases:
        got = adapter.compute_score(**_call(row, text), reward_url=url)
        assert got == adapter.compute_score(**_call(row, text), **local)
        local_book = adapter.core_for(local).mistake_book
        assert service.core.mistake_book.size() == local_book.size()
        sizes.append(local_book.size())
    assert sizes[-1] > 0 and len(set(sizes)) > 2
    with SqliteMistakeBook(str(book)) as shared:
        assert set(shared.problems()) == set(local_book.problems())


def test_reward_url_errors_name_the_url_and_are_never_a_silent_zero(service_for: Any) -> None:
    import socket

    from agents.integrations.reward_client import RewardServiceError, post_rows

    url, service = service_for(opponent="gt")
    with pytest.raises(RewardServiceError, match="answered 400: rows.0..ground_truth: no problem"):
        adapter.compute_score("codea1/bank", "x", "bank/nope", {}, reward_url=url)
    with pytest.raises(RewardServiceError, match=r"rows\[0\]\.extra_info\.code: a tester row"):
        adapter.compute_score(
            "codea1/bank", TESTS, "bank/clamp", {"role": "tester"}, reward_url=url
        )
    with pytest.raises(RewardServiceError, match="no ground_truth") as caught:
        adapter.compute_score("codea1/bank", "x", "", {}, reward_url=url)
    assert caught.value.status == 400 and url in str(caught.value)
    with pytest.raises(RewardServiceError, match=r"rows\[1\]\.response: missing") as caught:
        post_rows(url, [{"ground_truth": "bank/clamp", "response": "x"}, {"ground_truth": "x"}])
    assert caught.value.field == "rows[1].response"
    with pytest.raises(RewardServiceError, match=r"rows\[0\]\.label"):
        post_rows(url, [{"ground_truth": "bank/clamp", "response": "x", "label": 1}])
    with pytest.raises(ValueError, match="opponent, workers belong on"):
        adapter.compute_score(
            "codea1/bank", "x", "bank/clamp", {}, reward_url=url, opponent="gt", workers=1
        )
    with pytest.raises(ValueError, match="http"):
        adapter.compute_score("codea1/bank", "x", "bank/clamp", {}, reward_url="localhost:1")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(RewardServiceError, match=f"{dead}/v1/rows: unreachable"):
        adapter.compute_score(
            "codea1/bank", "x", "bank/clamp", {}, reward_url=dead, reward_retries=1
        )
    service.close()  # draining: 503, retried, then an error
    with pytest.raises(RewardServiceError, match="answered 503: the reward service is shutting"):
        adapter.compute_score(
            "codea1/bank", "x", "bank/clamp", {}, reward_url=url, reward_retries=1
        )


def test_any_response_scores_the_same_through_reward_url(service_for: Any) -> None:
    """Bytes, non-text and oversized responses: the service's scores are the local path's."""
    from agents.integrations import reward_client
    from codea1_env.game.duel import MAX_ACTION_CHARS

    assert reward_client.MAX_ACTION_CHARS == MAX_ACTION_CHARS
    url, _ = service_for(opponent="gt")
    gt = answer_for(load_source("bank")["bank/clamp"].gt_program)
    responses: list[Any] = [gt, gt.encode(), None, 3, b"\xff", "x" * (MAX_ACTION_CHARS + 5)]
    for response in responses:
        local = adapter.compute_score("codea1/bank", response, "bank/clamp", {}, opponent="gt")
        remote = adapter.compute_score("codea1/bank", response, "bank/clamp", {}, reward_url=url)
        assert remote == local, response if not isinstance(response, str) else len(response)
    adapter.close_cores()


# ------------------------------------------------------------------ misspelled reward keywords


def test_a_misspelled_reward_keyword_is_an_error_in_every_form() -> None:
    import asyncio

    gt = answer_for(load_source("bank")["bank/reverse_words"].gt_program)
    call: dict[str, Any] = {
        "data_source": "codea1/bank",
        "solution_str": gt,
        "ground_truth": "bank/reverse_words",
        "extra_info": {"num_turns": None, "rollout_reward_scores": {}},
    }
    message = r"^unknown reward keyword\(s\) \['opponentt'\]; codea1's: \[.*'opponent',"
    with pytest.raises(ValueError, match=message):
        adapter.compute_score(**call, opponentt="gt", workers=1)
    with pytest.raises(ValueError, match=message):
        asyncio.run(adapter.compute_score_async(**call, opponentt="gt", workers=1))
    with pytest.raises(ValueError, match=message):
        adapter.compute_score_batch(["codea1/bank"], [gt], ["bank/reverse_words"], opponentt="gt")
    # the remote path too, before any request (nothing listens on port 1)
    with pytest.raises(
        ValueError, match=r"\['reward_retires', 'workerz'\]; codea1's: .*'reward_retries'"
    ):
        adapter.compute_score(**call, reward_url="http://127.0.0.1:1", reward_retires=0, workerz=1)
    # verl 0.9.1's own keywords (its reward-loop managers with a reward-model router) are fine
    assert adapter.VERL_KWARGS == ("reward_router_address", "reward_model_tokenizer")
    result = adapter.compute_score(
        **call,
        opponent="gt",
        workers=1,
        reward_router_address="127.0.0.1:8000",
        reward_model_tokenizer=object(),
    )
    assert result["score"] == 1.0 and result["scored"] == 1.0


@pytest.fixture
def manager_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    """agents.integrations.verl_manager imported over stand-ins of the three verl names it uses.

    verl 0.9.1 cannot be installed in this venv; test_integrations_verl_manager.py checks the
    same against the real one.
    """
    import importlib
    import sys
    import types

    import agents.integrations as package

    class RewardManagerBase:
        def __init__(self, config: Any, tokenizer: Any, compute_score: Any) -> None:
            self.config, self.tokenizer, self.compute_score = config, tokenizer, compute_score

    registry: dict[str, Any] = {}

    def register(name: str) -> Any:
        return lambda cls: registry.setdefault(name, cls)

    names: dict[str, dict[str, Any]] = {
        "verl": {"DataProto": object},
        "verl.experimental": {},
        "verl.experimental.reward_loop": {},
        "verl.experimental.reward_loop.reward_manager": {},
        "verl.experimental.reward_loop.reward_manager.base": {
            "RewardManagerBase": RewardManagerBase
        },
        "verl.experimental.reward_loop.reward_manager.registry": {
            "REWARD_MANAGER": registry,
            "register": register,
        },
    }
    for name, attributes in names.items():
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        monkeypatch.setitem(sys.modules, name, module)
    key = "agents.integrations.verl_manager"
    saved = sys.modules.pop(key, None)
    try:
        manager = importlib.import_module(key)
        assert registry == {"codea1": manager.CodeA1RewardManager}
        yield manager
    finally:
        sys.modules.pop(key, None)
        if saved is not None:
            sys.modules[key] = saved
            package.verl_manager = saved  # type: ignore[attr-defined]
        else:
            vars(package).pop("verl_manager", None)


def test_the_managers_reward_kwargs_reject_an_unknown_key(manager_module: Any) -> None:
    from agents.integrations.reward_client import REMOTE_KWARGS

    manager_class = manager_module.CodeA1RewardManager
    known = set(adapter.SCORING_KWARGS) | set(REMOTE_KWARGS) | {"batch_window_ms", "max_batch"}
    assert manager_module.known_options() == known
    options = {"opponent": "gt", "update_book": False, "max_batch": 4, "batch_window_ms": 5}
    config = {"reward": {"reward_kwargs": options}}
    manager = manager_class(config, None, None, reward_router_address=None)
    assert manager.options == {"opponent": "gt", "update_book": False}
    assert manager.max_batch == 4 and manager.batch_window_s == 0.005
    for typo in ({"opponentt": "gt"}, {"opponent": "gt", "max_batches": 8, "alfa": 1.0}):
        unknown = sorted(set(typo) - known)
        with pytest.raises(ValueError) as caught:
            manager_class({"reward": {"reward_kwargs": typo}}, None, None)
        text = str(caught.value)
        assert text.startswith(
            f"CodeA1RewardManager: unknown reward.reward_kwargs key(s) {unknown}; known: "
        )
        assert str(sorted(known)) in text
    # DAPO's options mean nothing to this manager: an error too, not silently ignored
    with pytest.raises(ValueError, match=r"\['max_resp_len'\]"):
        manager_class({"reward": {"reward_kwargs": {"max_resp_len": 512}}}, None, None)


# ------------------------------------------------------------------ the data builder's CLI


def test_write_parquet_creates_missing_folders_and_replaces_atomically(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow", reason=PYARROW)
    import os

    import pyarrow.parquet as pq

    rows = adapter.build_rows("bank", limit=2)
    out = tmp_path / "data" / "codea1" / "coder.parquet"
    assert adapter.write_parquet(rows, str(out)) == 2
    assert pq.read_table(out).num_rows == 2
    os.chmod(out, 0o640)
    assert adapter.write_parquet(rows[:1], out) == 1
    assert pq.read_table(out).num_rows == 1 and out.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in out.parent.iterdir()) == ["coder.parquet"]

    def torn(table: Any, where: Any, **kwargs: Any) -> None:
        where.write(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", torn)
    with pytest.raises(OSError, match="disk full"):
        adapter.write_parquet(rows, out)
    monkeypatch.undo()
    assert pq.read_table(out).num_rows == 1  # the old file, whole
    assert sorted(p.name for p in out.parent.iterdir()) == ["coder.parquet"]  # no temp file
    # the command line, into folders that do not exist yet
    deep = tmp_path / "new" / "deeper" / "v.parquet"
    assert adapter.main(["--source", "bank", "--limit", "1", "--out", str(deep)]) == 0
    assert pq.read_table(deep).num_rows == 1


def _main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[Any, str]:
    """main's exit status (returned, or argparse's SystemExit) and its stderr."""
    try:
        status: Any = adapter.main(argv)
    except SystemExit as exc:
        status = exc.code
    return status, capsys.readouterr().err


PROG = "python -m agents.integrations.verl: error: "


@pytest.mark.parametrize(
    ("argv", "error", "usage"),
    [
        (["--source", "nope"], "ValueError: unknown problem source 'nope'; expected", False),
        (
            ["--source", "jsonl:{bad}"],
            "ProblemFormatError: {bad}:1: field 'prompt': missing",
            False,
        ),
        (["--source", "jsonl:{missing}"], "FileNotFoundError: [Errno 2] No such file", False),
        (["--role", "tester", "--codes", "http"], "--codes http needs --coder-url", True),
        (
            ["--env-class", "codea1_nope"],
            "argument --env-class: invalid choice: 'codea1_nope'",
            True,
        ),
        (
            ["--role", "tester", "--env-class", "codea1_coder"],
            "argument --env-class: codea1_coder is not the tester's env; --role tester rows "
            "need codea1_tester",
            True,
        ),
        (["--limit", "-1"], "argument --limit: expected an integer >= 0, got '-1'", True),
    ],
)
def test_a_bad_input_is_one_error_line_exit_2_and_nothing_written(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], argv: list[str], error: str, usage: bool
) -> None:
    if not usage:  # the writer is checked before the rows are built
        pytest.importorskip("pyarrow", reason=PYARROW)
    bad = tmp_path / "problems.jsonl"
    bad.write_text('{"task_id": "x/1"}\n')
    paths = {"bad": str(bad), "missing": str(tmp_path / "missing.jsonl")}
    out = tmp_path / "new" / "x.parquet"
    limit = [] if "--limit" in argv else ["--limit", "2"]
    status, err = _main([*(a.format(**paths) for a in argv), *limit, "--out", str(out)], capsys)
    assert status == 2
    lines = err.splitlines()
    [line] = [line for line in lines if "error:" in line]
    assert line.startswith(PROG + error.format(**paths)), line
    assert "Traceback" not in err
    if usage:  # argparse's usage block, then its error line
        assert line == lines[-1]
    else:  # as the codea1 commands: the error, then where it was raised
        assert lines == [line, lines[1]] and lines[1].startswith("(raised at ")
    assert not (tmp_path / "new").exists()


def test_an_unwritable_out_is_refused_before_the_work(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = _main(["--limit", "1", "--out", str(tmp_path)], capsys)
    assert status == 2
    assert err.startswith(f"{PROG}IsADirectoryError: --out {tmp_path}: is a directory\n(raised at ")
    blocker = tmp_path / "file"
    blocker.write_text("")
    status, err = _main(["--limit", "1", "--out", str(blocker / "x.parquet")], capsys)
    assert status == 2 and err.startswith(f"{PROG}NotADirectoryError: --out {blocker}/x.parquet")


def test_the_module_exits_2_without_a_traceback(tmp_path: Any) -> None:
    pytest.importorskip("pyarrow", reason=PYARROW)
    import subprocess
    import sys

    out = tmp_path / "x.parquet"
    done = subprocess.run(
        [sys.executable, "-m", "agents.integrations.verl", "--source", "nope", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"{PROG}ValueError: unknown problem source 'nope'")
    assert done.stderr.count("\n") == 2 and "\n(raised at " in done.stderr and not out.exists()


def test_env_class_is_the_skyrl_env_of_the_rows_role() -> None:
    assert adapter.ENV_CLASSES == {"coder": "codea1_coder", "tester": "codea1_tester"}
    with pytest.raises(ValueError, match=r"env_class must be one of .* got 'codea1_nope'"):
        adapter.build_rows("bank", limit=1, env_class="codea1_nope")
    with pytest.raises(ValueError, match="coder rows need 'codea1_coder'"):
        adapter.build_rows("bank", limit=1, env_class="codea1_tester")
    with pytest.raises(ValueError, match="tester rows need 'codea1_tester'"):
        adapter.build_tester_rows("bank", limit=1, env_class="codea1_coder")
    pytest.importorskip("skyrl_gym", reason="SkyRL-gym is not installed")
    skyrl = pytest.importorskip("agents.integrations.skyrl")
    assert adapter.ENV_CLASSES == {"coder": skyrl.CODER_ENV_ID, "tester": skyrl.TESTER_ENV_ID}
