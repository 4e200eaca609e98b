"""Streaming (server-sent events) from a real ``python -m agents.serve`` process on 127.0.0.1."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.lm.models import build_tiny_model
from agents.lm.tokenizer import load_tiny_tokenizer

REPO = Path(__file__).resolve().parents[1]
NAME = "tiny-chat"
CHAT_TEMPLATE = (
    "{% for m in messages %}### {{ m['role'] }}\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}### assistant\n{% endif %}"
)
MESSAGES = [{"role": "user", "content": "def add(a: int, b: int) -> int:"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Build a tiny chat model, start ``python -m agents.serve`` on a free port; always stop it."""
    pytest.importorskip("transformers", reason="needs the train extra")
    pytest.importorskip("torch", reason="needs the train extra")
    model_dir = tmp_path_factory.mktemp("tiny-chat-model")
    tokenizer = load_tiny_tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    build_tiny_model("nano", tokenizer, seed=3).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    log_path = tmp_path_factory.mktemp("serve-stream-log") / "stderr.txt"
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "agents.serve", "--model", str(model_dir), "--host"]
    command += ["127.0.0.1", "--port", "0", "--served-model-name", NAME, "--threads", "1"]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=log, text=True
        )
    lines: queue.Queue[str] = queue.Queue()

    def read_stdout() -> None:
        for line in proc.stdout or []:
            lines.put(line)

    reader = threading.Thread(target=read_stdout, daemon=True)
    reader.start()
    try:
        try:
            ready = lines.get(timeout=180)
        except queue.Empty:
            pytest.fail(f"server did not start; stderr:\n{log_path.read_text()[-3000:]}")
        assert ready.startswith(f"serving {NAME} on http://127.0.0.1:"), ready
        yield ready.split(" on ", 1)[1].strip()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)
        reader.join(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == 0, log_path.read_text()[-3000:]


def _request(url: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _events(raw: bytes) -> list[str]:
    """The ``data:`` payloads of an SSE body, checking the framing (blank-line separated)."""
    text = raw.decode("utf-8")
    assert text.endswith("\n\n"), text[-200:]
    events = []
    for block in text.split("\n\n")[:-1]:
        assert block.startswith("data: "), block
        assert "\n" not in block, block
        events.append(block[len("data: ") :])
    return events


def _chunks(raw: bytes) -> list[dict[str, Any]]:
    events = _events(raw)
    assert events[-1] == "[DONE]"
    assert "[DONE]" not in events[:-1]
    return [json.loads(e) for e in events[:-1]]


def _chat(server: str, **extra: Any) -> dict[str, Any]:
    body = {"model": NAME, "messages": MESSAGES, "max_tokens": 24, "temperature": 0.0, **extra}
    status, _, raw = _request(server + "/v1/chat/completions", body)
    assert status == 200, raw
    return json.loads(raw)


def test_chat_stream_matches_the_non_streaming_answer(server: str) -> None:
    plain = _chat(server)
    body = {"model": NAME, "messages": MESSAGES, "max_tokens": 24, "temperature": 0.0}
    status, headers, raw = _request(server + "/v1/chat/completions", {**body, "stream": True})
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    chunks = _chunks(raw)
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert all(c["model"] == NAME and len(c["choices"]) == 1 for c in chunks)
    assert all("usage" not in c for c in chunks)  # only with stream_options.include_usage
    first, *middle, last = chunks
    assert first["choices"][0]["delta"]["role"] == "assistant"
    assert first["choices"][0]["finish_reason"] is None
    assert all(c["choices"][0]["finish_reason"] is None for c in middle)
    assert all("role" not in c["choices"][0]["delta"] for c in middle + [last])
    expected = plain["choices"][0]
    assert last["choices"][0]["finish_reason"] == expected["finish_reason"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == expected["message"]["content"]
    assert len(middle) >= 2  # streamed in pieces, not as one block


def test_chat_stream_usage_chunk(server: str) -> None:
    plain = _chat(server)
    body = {"model": NAME, "messages": MESSAGES, "max_tokens": 24, "temperature": 0.0}
    body |= {"stream": True, "stream_options": {"include_usage": True}}
    status, _, raw = _request(server + "/v1/chat/completions", body)
    assert status == 200
    chunks = _chunks(raw)
    *content, usage = chunks
    assert usage["choices"] == []
    assert usage["usage"] == plain["usage"]
    assert all(c["usage"] is None for c in content)
    assert all(len(c["choices"]) == 1 for c in content)


def test_chat_stream_logprobs_and_several_choices(server: str) -> None:
    plain = _chat(server, n=2, temperature=1.0, seed=11, logprobs=True)
    body = {"model": NAME, "messages": MESSAGES, "max_tokens": 24, "temperature": 1.0}
    body |= {"n": 2, "seed": 11, "logprobs": True, "stream": True}
    status, _, raw = _request(server + "/v1/chat/completions", body)
    assert status == 200
    chunks = _chunks(raw)
    for index in (0, 1):
        mine = [c["choices"][0] for c in chunks if c["choices"][0]["index"] == index]
        assert mine[0]["delta"]["role"] == "assistant"
        assert [c["finish_reason"] for c in mine[:-1]] == [None] * (len(mine) - 1)
        expected = plain["choices"][index]
        assert mine[-1]["finish_reason"] == expected["finish_reason"]
        text = "".join(c["delta"].get("content") or "" for c in mine)
        assert text == expected["message"]["content"]
        streamed = [t for c in mine if c["logprobs"] for t in c["logprobs"]["content"]]
        assert streamed == expected["logprobs"]["content"]


def test_completions_stream(server: str) -> None:
    body = {"model": NAME, "prompt": "def f(x):", "max_tokens": 12, "temperature": 0.0}
    status, _, raw = _request(server + "/v1/completions", body)
    plain = json.loads(raw)
    body |= {"stream": True, "stream_options": {"include_usage": True}}
    status, headers, raw = _request(server + "/v1/completions", body)
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    *chunks, usage = _chunks(raw)
    assert all(c["object"] == "text_completion" for c in chunks)
    assert "".join(c["choices"][0]["text"] for c in chunks) == plain["choices"][0]["text"]
    assert chunks[-1]["choices"][0]["finish_reason"] == plain["choices"][0]["finish_reason"]
    assert usage["choices"] == [] and usage["usage"] == plain["usage"]


def test_stream_errors_are_plain_json(server: str) -> None:
    for extra in (
        {"stream": "yes"},
        {"stream": True, "stream_options": "usage"},
        {"stream": True, "stream_options": {"include_usage": 1}},
        {"stream": True, "model": "other"},
    ):
        body = {"model": NAME, "messages": MESSAGES, "max_tokens": 4, **extra}
        status, headers, raw = _request(server + "/v1/chat/completions", body)
        assert status == 400, (extra, raw)
        assert headers["Content-Type"] == "application/json"
        assert "error" in json.loads(raw)


def test_connection_stays_usable_after_a_stream(server: str) -> None:
    """Chunked transfer encoding keeps HTTP/1.1 keep-alive: two requests on one connection."""
    import http.client

    host, port = server.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        body = {"model": NAME, "messages": MESSAGES, "max_tokens": 8, "stream": True}
        conn.request("POST", "/v1/chat/completions", json.dumps(body))
        first = conn.getresponse()
        assert first.status == 200 and first.getheader("Transfer-Encoding") == "chunked"
        assert _chunks(first.read())
        conn.request("GET", "/v1/models")
        second = conn.getresponse()
        assert json.loads(second.read())["data"][0]["id"] == NAME
    finally:
        conn.close()


def test_official_openai_client_streams(server: str) -> None:
    openai = pytest.importorskip("openai", reason="the openai client is not installed")
    plain = _chat(server)
    client = openai.OpenAI(base_url=server + "/v1", api_key="unused", max_retries=0)
    stream = client.chat.completions.create(
        model=NAME,
        messages=MESSAGES,  # type: ignore[arg-type]
        max_tokens=24,
        temperature=0.0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == plain["choices"][0]["message"]["content"]
    finish = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finish[-1] == plain["choices"][0]["finish_reason"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == plain["usage"]["total_tokens"]
    client.close()
