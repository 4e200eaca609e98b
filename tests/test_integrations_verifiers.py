"""verifiers 0.4.0: ``vf-eval codea1-duel`` with a coder and a tester, each behind its own server.

Runs the real ``vf-eval`` CLI (local subprocess runtimes, ``--no-push``, 127.0.0.1 only) against
``python -m agents.serve`` processes and checks that the rewards recorded on the traces equal
``CodeTestDuel-v0``'s ``info["rewards"]`` for the same texts. verifiers is not part of
``.[dev]`` (it pins openai, mcp and more): install it in a venv of its own (see
docs/integrations.md); without it the tests skip.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import codea1_env  # noqa: F401  (registers CodeTestDuel-v0)
from codea1_env.game.duel import answer_for
from codea1_env.problems import problem_from_dict

vf = pytest.importorskip(
    "verifiers.v1", reason="verifiers (0.4) is not installed; see docs/integrations.md"
)
duel_env = pytest.importorskip("agents.integrations.verifiers_env")

REPO = Path(__file__).resolve().parents[1]
CHAT_TEMPLATE = (
    "{% for m in messages %}### {{ m['role'] }}\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}### assistant\n{% endif %}"
)


def _vf_eval() -> list[str]:
    """The ``vf-eval`` console script of this interpreter's environment."""
    script = Path(sys.executable).parent / "vf-eval"
    if script.exists():
        return [str(script)]
    found = shutil.which("vf-eval")
    if found:
        return [found]
    return [sys.executable, "-c", "from verifiers.v1.cli.eval.main import main; main()"]


def _start(command: list[str], env: dict[str, str], log_path: Path) -> tuple[Any, str]:
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=log, text=True
        )
    lines: queue.Queue[str] = queue.Queue()

    def read_stdout() -> None:
        for line in proc.stdout or []:
            lines.put(line)

    threading.Thread(target=read_stdout, daemon=True).start()
    try:
        ready = lines.get(timeout=180)
    except queue.Empty:
        _stop(proc)
        pytest.fail(f"server did not start; stderr:\n{log_path.read_text()[-3000:]}")
    return proc, ready.split(" on ", 1)[1].strip()


def _stop(proc: Any) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[str, Path]]]:
    """Two ``python -m agents.serve`` processes: ``coder`` and ``tester`` (different models)."""
    from agents.lm.models import build_tiny_model
    from agents.lm.tokenizer import load_tiny_tokenizer

    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "TOKENIZERS_PARALLELISM": "false"}
    procs, out = [], {}
    try:
        for seed, role in enumerate(("coder", "tester"), start=1):
            model_dir = tmp_path_factory.mktemp(f"tiny-{role}")
            tokenizer = load_tiny_tokenizer()
            tokenizer.chat_template = CHAT_TEMPLATE
            build_tiny_model("nano", tokenizer, seed=seed).save_pretrained(model_dir)
            tokenizer.save_pretrained(model_dir)
            log = tmp_path_factory.mktemp(f"serve-{role}") / "stderr.txt"
            command = [sys.executable, "-m", "agents.serve", "--model", str(model_dir)]
            command += ["--host", "127.0.0.1", "--port", "0", "--served-model-name"]
            command += [f"tiny-{role}", "--threads", "1"]
            proc, base = _start(command, env, log)
            procs.append(proc)
            out[role] = (base, log)
        yield out
    finally:
        for proc in procs:
            _stop(proc)


def _run_vf_eval(
    tmp_path: Path, urls: Mapping[str, str], models: Mapping[str, str], *extra: str
) -> list[dict[str, Any]]:
    """Run ``vf-eval codea1-duel`` and return its episodes (``traces.jsonl``)."""
    home = tmp_path / "home"  # verifiers' cache (~/.cache/verifiers) stays in the test's dir
    home.mkdir()
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": path, "TOKENIZERS_PARALLELISM": "false"}
    env.pop("PRIME_API_KEY", None)
    env["NO_COLOR"] = "1"
    command = [*_vf_eval(), "codea1-duel", "--no-push", "--no-rich", "-o", str(tmp_path / "out")]
    command += ["--run.name", "duel", "-m", models["coder"], "--client.base-url", urls["coder"]]
    for role in ("coder", "tester"):
        command += [f"--env.{role}.model", models[role], f"--env.{role}.client.type", "eval"]
        command += [f"--env.{role}.client.base-url", urls[role]]
        command += [f"--env.{role}.runtime.type", "subprocess"]
    command += ["--env.workers", "1", *extra]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=420
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-5000:])
    traces = tmp_path / "out" / "duel" / "traces.jsonl"
    return [json.loads(line) for line in traces.read_text().splitlines() if line.strip()]


def _reply(trace: Mapping[str, Any]) -> str:
    assistant = [n["message"] for n in trace["nodes"] if n["message"]["role"] == "assistant"]
    assert len(assistant) == 1, trace["nodes"]
    content = assistant[0]["content"]
    assert isinstance(content, str)
    return content


def _user_prompt(trace: Mapping[str, Any]) -> str:
    users = [n["message"] for n in trace["nodes"] if n["message"]["role"] == "user"]
    content = users[0]["content"]
    return content if isinstance(content, str) else "".join(p["text"] for p in content)


def _check_against_the_env(episodes: list[dict[str, Any]], models: Mapping[str, str]) -> None:
    """Every episode: two traces, the tester shown the coder's code, the env's rewards."""
    env = gym.make("CodeTestDuel-v0", source="bank")
    try:
        for episode in episodes:
            assert episode["ok"], episode["errors"]
            traces = {t["agent"]["name"]: t for t in episode["traces"]}
            assert sorted(traces) == ["coder", "tester"]
            coder, tester = traces["coder"], traces["tester"]
            for role, trace in traces.items():
                assert trace["agent"]["config"]["model"] == models[role]
                assert trace["agent"]["runtime"]["type"] == "subprocess"
            data = coder["task"]["data"]
            assert data["role"] == "coder" and tester["task"]["data"]["role"] == "tester"
            problem = problem_from_dict(data["problem"])
            code_text, tests_text = _reply(coder), _reply(tester)
            assert tester["task"]["data"]["code"] == code_text
            assert _user_prompt(coder) == duel_env.coder_prompt(problem)
            assert _user_prompt(tester) == duel_env.tester_prompt(problem, code_text)

            # the same texts played in CodeTestDuel-v0 (a fresh book: one episode per problem)
            env.reset(options={"problem": data["problem"]})
            env.step(code_text)
            *_, info = env.step(tests_text)
            rewards = info["rewards"]
            assert coder["rewards"] == {"codea1": {"score": rewards["coder"], "weight": 1.0}}
            assert tester["rewards"] == {"codea1": {"score": rewards["tester"], "weight": 1.0}}
            for trace in (coder, tester):
                recorded = trace["info"]["codea1"]
                assert recorded["rewards"] == rewards
                assert recorded["reasons"] == info["reasons"]
                assert recorded["verdicts"] == info["verdicts"]
                assert trace["metrics"]["codea1/gt_pass_rate"] == info["gt_pass_rate"]
                assert trace["metrics"]["codea1/n_tests"] == len(info["verdicts"])
    finally:
        env.close()


def test_vf_eval_duel_with_agents_serve(
    servers: dict[str, tuple[str, Path]], tmp_path: Path
) -> None:
    urls = {role: base + "/v1" for role, (base, _) in servers.items()}
    models = {"coder": "tiny-coder", "tester": "tiny-tester"}
    extra = ["-n", "3", "--env.tester-trainable", "false"]
    extra += ["--env.coder.sampling.max-tokens", "48", "--env.tester.sampling.max-tokens", "48"]
    episodes = _run_vf_eval(tmp_path, urls, models, *extra)
    assert len(episodes) == 3
    assert len({e["task"]["data"]["task_id"] for e in episodes}) == 3
    _check_against_the_env(episodes, models)
    for episode in episodes:
        standing = {t["agent"]["name"]: t["agent"]["trainable"] for t in episode["traces"]}
        assert standing == {"coder": True, "tester": False}
    # each role's calls went to its own server (the chat program streams)
    for role, (_, log) in servers.items():
        posts = re.findall(r'"POST /v1/chat/completions HTTP/1.1" 200', log.read_text())
        assert len(posts) >= 3, (role, log.read_text()[-2000:])


# ------------------------------------------------------------------ scripted answers
# A random tiny model scores 0 as the coder; scripted answers from an OpenAI-compatible stub
# (streamed as agents.lm.serve streams) give rewards strictly between 0 and 1.


class _ScriptedService:
    """Duck-typed ``CompletionService``: a fixed answer per role, streamed in pieces."""

    name = "scripted"

    def __init__(self, answers: Mapping[str, str]) -> None:
        self.answers = dict(answers)

    def _answer(self, body: Mapping[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if isinstance(prompt, list):
            prompt = "".join(part.get("text", "") for part in prompt)
        for marker, answer in self.answers.items():
            if marker in prompt:
                return answer
        raise AssertionError(f"unexpected prompt: {prompt[:300]}")

    def chat_completions_stream(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        text = self._answer(body)
        head: dict[str, Any] = {"id": uuid.uuid4().hex, "object": "chat.completion.chunk"}
        head |= {"created": int(time.time()), "model": body.get("model", self.name)}
        pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
        deltas = [{"role": "assistant", "content": ""}] + [{"content": p} for p in pieces]
        chunks: list[dict[str, Any]] = [
            {**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
        ]
        chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        usage = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
        chunks.append({**head, "choices": [], "usage": usage})
        return chunks

    def chat_completions(self, body: Mapping[str, Any]) -> dict[str, Any]:
        message = {"role": "assistant", "content": self._answer(body)}
        return {
            "id": uuid.uuid4().hex,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.name),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }

    def completions(self, body: Mapping[str, Any]) -> dict[str, Any]:
        raise AssertionError("not used")

    completions_stream = completions

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.name, "object": "model"}]}


def test_vf_eval_duel_scripted_rewards_equal_the_env(tmp_path: Path) -> None:
    from agents.lm.serve import make_server

    buggy = answer_for(
        "def reverse_words(s):\n"
        "    words = s.split(' ')\n"
        "    return ' '.join(w for w in reversed(words) if w)\n"
    )
    tests = (
        "```python\nassert reverse_words('a b') == 'b a'\n"
        "assert reverse_words('a\\tb') == 'b a'\nassert reverse_words('x') == 'y'\n```"
    )
    service = _ScriptedService({"expert software tester": tests, "expert Python programmer": buggy})
    server = make_server(service, "127.0.0.1", 0)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        url = f"http://{host}:{port}/v1"
        models = {"coder": "scripted-coder", "tester": "scripted-tester"}
        extra = ["--select.include.ids", "bank/reverse_words", "--env.coder-trainable", "false"]
        episodes = _run_vf_eval(tmp_path, {"coder": url, "tester": url}, models, *extra)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert len(episodes) == 1
    _check_against_the_env(episodes, models)
    coder, tester = sorted(episodes[0]["traces"], key=lambda t: t["agent"]["name"])
    assert _reply(coder) == buggy and _reply(tester) == tests
    assert 0.0 < coder["rewards"]["codea1"]["score"] < 1.0
    assert 0.0 < tester["rewards"]["codea1"]["score"] < 1.0
    assert coder["agent"]["trainable"] is False and tester["agent"]["trainable"] is True
