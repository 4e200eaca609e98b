"""verl 0.9.1's own reward loop with the ``codea1`` reward manager (local Ray, 127.0.0.1).

``RewardLoopManager.compute_rm_score`` (what ``RayPPOTrainer`` calls) splits a real
``verl.DataProto`` of tokenized prompts and responses over two Ray ``RewardLoopWorker`` actors;
each worker loads the manager by name (``reward.reward_manager.name=codea1``, registered by the
``verl.plugins`` entry point when the worker imports verl) and awaits one ``run_single`` per
sample; the manager scores each worker's samples in one referee call. The rewards at the last
response token must equal ``CodeTestDuel-v0``'s ``info["rewards"]`` for the same texts, for
coder rows and for the tester rows of ``build_tester_rows``.

verl 0.9.1 needs ``transformers<5.11`` (the main venv has 5.24), so these tests run in a venv of
their own (``.venv-verl``, built by ``.ci/run``) and are skipped with a reason elsewhere.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import codea1_env  # noqa: F401
from agents.integrations import verl as adapter
from agents.integrations.core import gt_suite
from codea1_env.game.duel import answer_for
from codea1_env.problems import load_source, problem_to_dict
from codea1_env.scoring.mutation import MutantCache

verl = pytest.importorskip(
    "verl",
    reason="verl is not installed (verl 0.9.1 needs transformers<5.11: run these tests in the "
    ".venv-verl that .ci/run builds)",
)
reward_loop = pytest.importorskip("verl.experimental.reward_loop")
ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
from omegaconf import OmegaConf  # noqa: E402  (a verl dependency)

CONFIG_DIR = Path(verl.__file__).resolve().parent / "trainer" / "config"
WRONG = "```python\nassert reverse_words('a b') == 'a b'\nassert reverse_words('') == ''\n```"


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    from agents.lm.tokenizer import load_tiny_tokenizer

    directory = tmp_path_factory.mktemp("tokenizer")
    load_tiny_tokenizer().save_pretrained(directory)
    return str(directory)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        runtime_env={"env_vars": {"TOKENIZERS_PARALLELISM": "false"}},
    )
    try:
        yield
    finally:
        ray.shutdown()


def _config(tokenizer_dir: str, manager: str = "codea1", **reward_kwargs: Any) -> Any:
    """verl's own trainer config (hydra, ``ppo_trainer``) with the command-line overrides.

    ``manager="naive"``: verl's own ``naive`` manager with codea1's ``compute_score_async`` as
    the custom reward function (its options under ``custom_reward_function.reward_kwargs``).
    """
    from hydra import compose, initialize_config_dir

    overrides = [
        f"actor_rollout_ref.model.path={tokenizer_dir}",
        "reward.num_workers=2",
        f"reward.reward_manager.name={manager}",
    ]
    key = "reward.reward_kwargs"
    if manager == "naive":
        overrides += [
            f"reward.custom_reward_function.path={adapter.__file__}",
            "reward.custom_reward_function.name=compute_score_async",
        ]
        key = "reward.custom_reward_function.reward_kwargs"
    overrides += [f"+{key}.{k}={v}" for k, v in reward_kwargs.items()]
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


def _samples() -> list[tuple[dict[str, Any], str]]:
    """(row, response) pairs: coder rows on two problems, then tester rows on two others.

    The halves go to different reward workers (``DataProto.chunk``), so each problem is scored
    by one worker: a shared mistake book gets entries from both, and neither replays the other's.
    """
    source = load_source("bank")
    coder_rows = {r["extra_info"]["task_id"]: r for r in adapter.build_rows(source, limit=4)}
    samples = []
    for task_id, answers in (
        ("bank/reverse_words", ("gt", "mutant")),
        ("bank/is_palindrome", ("mutant", "no code")),
    ):
        problem = source[task_id]
        mutant = MutantCache().get(problem.gt_program)[0].source
        texts = {"gt": answer_for(problem.gt_program), "mutant": answer_for(mutant)}
        samples += [(coder_rows[task_id], texts.get(a, a)) for a in answers]
    picked = [source["bank/run_length_encode"], source["bank/run_length_decode"]]
    for row in adapter.build_tester_rows(picked, codes="gt+mutants", mutants=1):
        problem = source[row["extra_info"]["task_id"]]
        wrong = gt_suite(problem).replace("==", "!=", 1)
        suite = wrong if row["extra_info"]["code_source"] == "gt" else gt_suite(problem)
        samples.append((row, suite))
    assert len(samples) == 8
    return samples


def _dataproto(tokenizer: Any, samples: list[tuple[dict[str, Any], str]]) -> Any:
    """A DataProto as verl's rollout leaves it: left-padded prompts, right-padded responses."""
    prompts = [
        tokenizer(r["prompt"][0]["content"], add_special_tokens=False)["input_ids"][-64:]
        for r, _ in samples
    ]
    responses = [tokenizer(t, add_special_tokens=False)["input_ids"] for _, t in samples]
    p_len, r_len = max(map(len, prompts)), max(map(len, responses)) + 3
    pad = tokenizer.pad_token_id
    prompt_ids = torch.tensor([[pad] * (p_len - len(p)) + p for p in prompts])
    response_ids = torch.tensor([r + [pad] * (r_len - len(r)) for r in responses])
    prompt_mask = torch.tensor([[0] * (p_len - len(p)) + [1] * len(p) for p in prompts])
    response_mask = torch.tensor([[1] * len(r) + [0] * (r_len - len(r)) for r in responses])
    attention_mask = torch.cat([prompt_mask, response_mask], dim=1)

    def objects(values: list[Any]) -> Any:
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array

    return verl.DataProto.from_dict(
        tensors={
            "prompts": prompt_ids,
            "responses": response_ids,
            "input_ids": torch.cat([prompt_ids, response_ids], dim=1),
            "attention_mask": attention_mask,
            "position_ids": (attention_mask.cumsum(dim=1) - 1).clamp(min=0),
        },
        non_tensors={
            "data_source": objects([r["data_source"] for r, _ in samples]),
            "reward_model": objects([dict(r["reward_model"]) for r, _ in samples]),
            "extra_info": objects([dict(r["extra_info"]) for r, _ in samples]),
        },
    )


def _local_scores(samples: list[tuple[dict[str, Any], str]], **kwargs: Any) -> list[Any]:
    """The samples scored in this process, in one referee call (``compute_score_batch``)."""
    return adapter.compute_score_batch(
        [r["data_source"] for r, _ in samples],
        [t for _, t in samples],
        [r["reward_model"]["ground_truth"] for r, _ in samples],
        [r["extra_info"] for r, _ in samples],
        workers=1,
        **kwargs,
    )


def _env_info(sandbox: Any, row: dict[str, Any], response: str) -> tuple[str, dict[str, Any]]:
    """The trained role and CodeTestDuel-v0's info for the sample (a fresh mistake book)."""
    problem = adapter.core_for({}).problem(row["reward_model"]["ground_truth"])
    role = row["extra_info"]["role"]
    code, tests = (
        (row["extra_info"]["code"], response) if role == "tester" else (response, gt_suite(problem))
    )
    env = gym.make("CodeTestDuel-v0", source="bank", sandbox=sandbox)
    try:
        env.reset(options={"problem": problem_to_dict(problem)})
        env.step(code)
        *_, info = env.step(tests)
    finally:
        env.close()
    return role, dict(info)


def test_the_plugin_registers_codea1_and_verl_validates_the_config(tokenizer_dir: str) -> None:
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls

    from agents.integrations.verl_manager import CodeA1RewardManager

    points = importlib.metadata.entry_points(group="verl.plugins")
    assert "agents.integrations.verl_manager" in {p.value for p in points if p.name == "codea1"}
    assert get_reward_manager_cls("codea1") is CodeA1RewardManager
    config = _config(tokenizer_dir, opponent="gt+mistake_book")
    assert config.reward.reward_manager.name == "codea1"
    assert reward_loop.reward_loop.resolve_reward_manager_cls(config) is CodeA1RewardManager
    # verl's importlib source (no entry point needed) finds the same class
    with_module = OmegaConf.merge(
        config,
        {
            "reward": {
                "reward_manager": {
                    "source": "importlib",
                    "name": "CodeA1RewardManager",
                    "module": {"path": "pkg://agents.integrations.verl_manager"},
                }
            }
        },
    )
    assert reward_loop.reward_loop.resolve_reward_manager_cls(with_module) is CodeA1RewardManager


def test_a_misspelled_reward_kwargs_key_is_an_error_in_verls_own_config(
    tokenizer_dir: str,
) -> None:
    """verl's config as main_ppo builds it: a typo fails instead of scoring with the default."""
    from verl.trainer.ppo.reward import get_custom_reward_fn

    from agents.integrations.verl_manager import CodeA1RewardManager

    config = _config(tokenizer_dir, opponentt="gt", max_batch=4)
    with pytest.raises(ValueError, match=r"unknown reward\.reward_kwargs key\(s\) \['opponentt'\]"):
        CodeA1RewardManager(config, None, None)
    # verl's naive manager awaiting codea1's function: verl merges reward_kwargs into the call
    gt = answer_for(load_source("bank")["bank/clamp"].gt_program)
    call: dict[str, Any] = {
        "data_source": "codea1/bank",
        "solution_str": gt,
        "ground_truth": "bank/clamp",
        "extra_info": {},
        "reward_router_address": "127.0.0.1:1",  # what verl's managers add with a reward model
        "reward_model_tokenizer": None,
    }
    typo = get_custom_reward_fn(_config(tokenizer_dir, "naive", opponentt="gt"))
    assert typo is not None
    with pytest.raises(ValueError, match=r"^unknown reward keyword\(s\) \['opponentt'\]"):
        asyncio.run(typo(**call))
    right = get_custom_reward_fn(_config(tokenizer_dir, "naive", opponent="gt", workers=1))
    assert right is not None
    assert asyncio.run(right(**call))["score"] == 1.0
    adapter.close_cores()


def test_run_single_batches_concurrent_samples(tokenizer_dir: str) -> None:
    from verl.utils import hf_tokenizer

    from agents.integrations.verl_manager import CodeA1RewardManager

    tokenizer = hf_tokenizer(tokenizer_dir)
    samples = _samples()
    data = _dataproto(tokenizer, samples)

    async def score(manager: Any) -> list[dict[str, Any]]:
        return await asyncio.gather(
            *(manager.run_single(data[i : i + 1]) for i in range(len(data)))
        )

    for max_batch, sizes in ((1024, [8]), (3, [3, 3, 2])):
        options: dict[str, Any] = {
            "opponent": "gt+mistake_book",
            "update_book": False,
            "workers": 1,
        }
        config = _config(tokenizer_dir, max_batch=max_batch, **options)
        manager = CodeA1RewardManager(config, tokenizer, None)
        outputs = asyncio.run(score(manager))
        assert manager.batch_sizes == sizes
        expected = _local_scores(samples, opponent="gt+mistake_book", update_book=False)
        assert [o["reward_score"] for o in outputs] == [e["score"] for e in expected]
        for output, want, size in zip(outputs, expected, [s for s in sizes for _ in range(s)]):
            assert output["reward_extra_info"] == {**want, "batch_size": float(size)}
    adapter.close_cores()


@pytest.fixture
def reward_service(shared_sandbox: Any, tmp_path: Path, start_reward_server: Any) -> Any:
    """``codea1 serve-reward``'s server in this process, on 127.0.0.1, with a SQLite book."""
    from agents.integrations.core import RewardCore

    book = str(tmp_path / "service_book.sqlite")
    core = RewardCore("bank", opponent="gt+mistake_book", mistake_book=book, sandbox=shared_sandbox)
    return start_reward_server(core)


def test_run_single_with_reward_url_posts_one_request_per_batch(
    tokenizer_dir: str, reward_service: Any
) -> None:
    import socket

    from verl.utils import hf_tokenizer

    from agents.integrations.reward_client import RewardServiceError
    from agents.integrations.verl_manager import CodeA1RewardManager

    tokenizer = hf_tokenizer(tokenizer_dir)
    samples = _samples()
    data = _dataproto(tokenizer, samples)

    async def score(manager: Any) -> list[Any]:
        calls = (manager.run_single(data[i : i + 1]) for i in range(len(data)))
        return list(await asyncio.gather(*calls, return_exceptions=True))

    url = reward_service.url
    config = _config(tokenizer_dir, max_batch=3, reward_url=url)
    manager = CodeA1RewardManager(config, tokenizer, None)
    assert manager.remote is not None and manager.remote.url == url
    outputs = asyncio.run(score(manager))
    assert manager.batch_sizes == [3, 3, 2]
    assert reward_service.service.stats["accepted"] == 3  # one request per batch
    # a fresh local book: the service's started empty and saw the same rows in this order
    expected = _local_scores(samples, opponent="gt+mistake_book")
    assert [o["reward_score"] for o in outputs] == [e["score"] for e in expected]
    for output, want, size in zip(outputs, expected, [3, 3, 3, 3, 3, 3, 2, 2]):
        assert output["reward_extra_info"] == {**want, "batch_size": float(size)}
    adapter.close_cores()
    # the scoring options are the service's: giving them here too fails at once
    with pytest.raises(ValueError, match="opponent belongs on"):
        CodeA1RewardManager(_config(tokenizer_dir, reward_url=url, opponent="gt"), tokenizer, None)
    # an unreachable service fails every sample of the batch (no silent 0)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    config = _config(tokenizer_dir, reward_url=dead, reward_retries=0)
    failed = asyncio.run(score(CodeA1RewardManager(config, tokenizer, None)))
    assert all(isinstance(f, RewardServiceError) and dead in str(f) for f in failed)


@pytest.mark.parametrize("via", ["local", "reward_url", "naive+compute_score_async"])
def test_reward_loop_manager_rewards_equal_the_env(
    via: str,
    tokenizer_dir: str,
    local_ray: None,
    shared_sandbox: Any,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """Two Ray reward workers; the rewards equal the env's and both workers fill ONE book.

    ``local``: each worker scores with its own core, both opening one SQLite file.
    ``reward_url``: the ``codea1`` manager sends each worker's batch in ONE request to a
    ``codea1 serve-reward`` (the service's book is the one book; the workers open none).
    ``naive+compute_score_async``: verl's own ``naive`` manager awaits codea1's async reward
    function, which posts each sample to the service.
    """
    from verl.utils import hf_tokenizer

    from codea1_env.mistake_book import SqliteMistakeBook

    book = tmp_path / "book.sqlite"
    server = None
    if via == "local":
        options: dict[str, Any] = {
            "opponent": "gt+mistake_book",
            "mistake_book": str(book),
            "workers": 1,
        }
        config = _config(tokenizer_dir, **options)
    else:
        server = request.getfixturevalue("reward_service")
        book = tmp_path / "service_book.sqlite"
        manager_name = "naive" if via.startswith("naive") else "codea1"
        config = _config(tokenizer_dir, manager_name, reward_url=server.url)
    tokenizer = hf_tokenizer(tokenizer_dir)
    samples = _samples()
    data = _dataproto(tokenizer, samples)
    manager = reward_loop.RewardLoopManager(config)
    out = manager.compute_rm_score(data)

    scores = out.batch["rm_scores"]
    assert scores.shape == data.batch["responses"].shape
    lengths = data.batch["attention_mask"][:, data.batch["prompts"].shape[1] :].sum(dim=1)
    extra = out.non_tensor_batch
    if via.startswith("naive"):  # verl's naive manager logs compute_score's dict as it is
        assert out.meta_info["reward_extra_keys"] == list(adapter.SCORE_KEYS)
    else:
        assert set(out.meta_info["reward_extra_keys"]) == {*adapter.SCORE_KEYS, "batch_size"}
        assert list(extra["batch_size"]) == [4.0] * 8  # one referee call (or request) per worker
    if server is not None:
        stats = server.service.stats
        assert stats["rows"] == 8 and stats["failed"] == 0
        # codea1: one request per worker; naive: one per sample, batched by the service
        assert stats["accepted"] == (8 if via.startswith("naive") else 2)
    rewards = []
    for i, (row, text) in enumerate(samples):
        response = tokenizer.decode(
            data.batch["responses"][i][: lengths[i]], skip_special_tokens=True
        )
        assert response == text
        role, info = _env_info(shared_sandbox, row, text)
        reward = float(scores[i, lengths[i] - 1])
        assert reward == pytest.approx(info["rewards"][role], abs=1e-6)
        assert float(scores[i].sum()) == pytest.approx(reward, abs=1e-6)
        assert extra["score"][i] == info["rewards"][role]
        assert extra["coder_reward"][i] == info["rewards"]["coder"]
        assert extra["tester_reward"][i] == info["rewards"]["tester"]
        assert extra["n_tests"][i] == len(info["verdicts"])
        rewards.append(reward)
    assert {0.0, 1.0} <= set(rewards[:4]) and any(0.0 < r < 1.0 for r in rewards[4:])
    # both workers wrote to the one SQLite book: entries for problems of each half
    with SqliteMistakeBook(str(book)) as shared:
        problems = set(shared.problems())
    assert problems & {"bank/reverse_words", "bank/is_palindrome"}
    assert problems & {"bank/run_length_encode", "bank/run_length_decode"}
    for worker in manager.reward_loop_workers:
        ray.kill(worker)
    adapter.close_cores()
