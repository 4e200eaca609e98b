"""OpenRLHF 0.11.2's own remote-reward client against codea1 serve-reward on 127.0.0.1.

``openrlhf.utils.agent.SingleTurnAgentExecutor.execute`` tokenizes the prompt, asks the engine for
a continuation, decodes prompt + response (``skip_special_tokens=False``) and posts it to
``--reward.remote_url`` with aiohttp; here the engine is a stub that answers a fixed text and the
tokenizer is codea1's byte-level BPE. OpenRLHF cannot be installed whole without CUDA (deepspeed,
flash-attn, vllm); its agent module imports only aiohttp, torch, transformers, sympy and
pylatexenc, so a venv with ``pip install --no-deps openrlhf==0.11.2 aiohttp pylatexenc`` (plus
torch and transformers) runs this test; without openrlhf it is skipped, and
``test_integrations_service.py`` checks the same protocol with urllib.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import pytest

import codea1_env  # noqa: F401
from agents.integrations.core import RewardCore
from agents.integrations.openrlhf import EXTRA_LOG_KEYS
from agents.integrations.reward_service import RewardService, make_server
from agents.players.prompts import CODER_PROMPT, PromptTemplate
from codea1_env.game.duel import answer_for
from codea1_env.problems import problem_to_dict

agent = pytest.importorskip(
    "openrlhf.utils.agent",
    reason="OpenRLHF is not installed (pip install --no-deps openrlhf==0.11.2 aiohttp pylatexenc)",
)
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

PROBLEM = "bank/reverse_words"
BUGGY = answer_for(
    "def reverse_words(s):\n"
    "    words = s.split(' ')\n"
    "    return ' '.join(w for w in reversed(words) if w)\n"
)


class _Engine:
    """Stands in for OpenRLHF's vLLM engine: answers ``text`` for any prompt."""

    def __init__(self, tokenizer: Any, text: str) -> None:
        self.ids = tokenizer(text=text, add_special_tokens=False)["input_ids"]
        self.text = text

    async def generate(
        self, prompt_ids: list[int], params: Any, multi_modal_data: Any = None
    ) -> Any:
        out = SimpleNamespace(
            token_ids=list(self.ids), text=self.text, finish_reason="stop", logprobs=None
        )
        return SimpleNamespace(outputs=[out])


@pytest.fixture
def server(shared_sandbox: Any) -> Iterator[Any]:
    core = RewardCore("bank", opponent="gt+mistake_book", sandbox=shared_sandbox)
    srv = make_server(RewardService(core, batch_window_s=0.02), "127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield srv
    finally:
        srv.stop()
        thread.join(10)


def test_openrlhf_single_turn_executor_gets_the_envs_reward(
    server: Any, shared_sandbox: Any
) -> None:
    tokenizer_file = Path(__file__).resolve().parents[1] / "agents" / "assets" / "tokenizer.json"
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_file))
    problem = server.service.core.problem(PROBLEM)
    obs = {"role": 0, "prompt": problem.prompt, "entry_point": problem.entry_point, "code": ""}
    prompt = PromptTemplate(CODER_PROMPT).render_observation(obs)  # holds its own python block
    executor = agent.SingleTurnAgentExecutor(server.url + "/get_reward")
    params = SimpleNamespace(max_tokens=512, logprobs=None)
    output = asyncio.run(
        executor.execute(prompt, PROBLEM, params, 4096, tokenizer, _Engine(tokenizer, BUGGY))
    )
    # the env: the same code against the GT tests (CodeTestDuel-v0 with the fixed GT suite)
    env = gym.make("CodeTestDuel-v0", source="bank", sandbox=shared_sandbox)
    try:
        env.reset(options={"problem": problem_to_dict(problem)})
        env.step(BUGGY)
        tests = "```python\n" + "\n".join(problem.tests) + "\n```"
        *_, info = env.step(tests)
    finally:
        env.close()
    assert output["reward"] == [info["rewards"]["coder"]]
    assert output["scores"] == [info["rewards"]["coder"]]
    assert 0.0 < info["rewards"]["coder"] < 1.0
    assert set(output["extra_logs"]) == set(EXTRA_LOG_KEYS)
    assert output["extra_logs"]["codea1_prompt_found"] == [1.0]
    # what OpenRLHF's samples generator does with them next
    assert torch.tensor([output["reward"]]).numel() == 1
    for value in output["extra_logs"].values():
        torch.tensor([value])


def test_openrlhf_client_rotates_over_two_reward_urls(server: Any) -> None:
    executor = agent.SingleTurnAgentExecutor([server.url + "/get_reward", server.url + "/"])
    queries = [BUGGY, answer_for(server.service.core.problem(PROBLEM).gt_program)]
    answers = asyncio.run(executor._fetch_rewards_via_http(queries, ["", ""], [PROBLEM, PROBLEM]))
    assert len(answers) == 2 and len(answers[0]["rewards"]) == 1
    assert answers[1]["rewards"] == [1.0]  # the GT program passes its GT tests
