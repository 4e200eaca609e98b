"""OpenAI-compatible HTTP policy against a real local server process (127.0.0.1 only)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from agents.lm.http import API_KEY_VARIABLE, HTTPPolicyError, OpenAICompatibleLM
from agents.lm.interfaces import SamplingParams
from agents.lm.models import build_tiny_model
from agents.lm.serve import CompletionService, RequestError, make_server
from agents.lm.tokenizer import load_tiny_tokenizer
from agents.lm.transformers_lm import TransformersLM
from agents.players.policy import CoderPolicy

REPO = Path(__file__).resolve().parents[1]
NAME = "tiny-coder"
CHAT_TEMPLATE = (
    "{% for m in messages %}### {{ m['role'] }}\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}### assistant\n{% endif %}"
)
OBS: dict[str, Any] = {
    "role": 0,
    "prompt": 'def f(x: int) -> int:\n    """Return x + 1."""\n',
    "entry_point": "f",
    "code": "",
}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers", reason="needs the train extra")
    pytest.importorskip("torch", reason="needs the train extra")
    directory = tmp_path_factory.mktemp("tiny-model")
    tokenizer = load_tiny_tokenizer()
    tokenizer.chat_template = CHAT_TEMPLATE
    build_tiny_model("nano", tokenizer, seed=1).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start ``python -m agents.serve`` on a free port; always stop it."""
    log_path = tmp_path_factory.mktemp("serve-log") / "stderr.txt"
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
        base = ready.split(" on ", 1)[1].strip()
        with urllib.request.urlopen(base + "/health", timeout=30) as response:
            assert json.loads(response.read()) == {"status": "ok"}
        yield base
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


@pytest.fixture(scope="module")
def local(model_dir: Path) -> TransformersLM:
    """The same model in-process, as raw completions (what /v1/completions serves)."""
    return TransformersLM(model_dir, chat_template=False)


def _post(url: str, raw: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=raw, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_models_route(server: str) -> None:
    assert OpenAICompatibleLM(server, NAME).models() == [NAME]


def test_completions_match_the_local_model(server: str, local: TransformersLM) -> None:
    params = SamplingParams(temperature=0.0, max_new_tokens=12)
    prompts = ["def f(x: int) -> int:", "import os\nx = ["]
    remote = OpenAICompatibleLM(server + "/v1", NAME).generate(prompts, params)
    here = local.generate(prompts, params)
    assert [g.text for g in remote] == [g.text for g in here]
    for r, h in zip(remote, here, strict=True):
        assert r.finish_reason == h.finish_reason == "length"
        assert r.logprobs == pytest.approx(h.logprobs, abs=1e-4)
        assert r.completion_ids == ()  # the OpenAI API carries no token ids
        assert r.prompt in prompts


def test_coder_policy_over_http(server: str, local: TransformersLM) -> None:
    params = SamplingParams(max_new_tokens=16, seed=7, stop=("\n```\n",))
    remote = CoderPolicy(OpenAICompatibleLM(server, NAME), params=params)
    answers = remote.act([OBS, OBS])
    assert len(answers) == 2
    assert all(a.startswith("```python\n") and a.endswith("\n```") for a in answers)
    assert remote.act([OBS, OBS]) == answers  # seeded
    assert CoderPolicy(local, params=params).act([OBS, OBS]) == answers


def test_one_request_per_prompt_and_stop_strings(server: str, local: TransformersLM) -> None:
    free = local.generate(["x = 1"], SamplingParams(temperature=0.0, max_new_tokens=20))[0]
    stop = free.text[4:6]
    params = SamplingParams(temperature=0.0, max_new_tokens=20, stop=(stop,))
    lm = OpenAICompatibleLM(server, NAME, batch_prompts=False, max_concurrency=2)
    remote = lm.generate(["x = 1", "x = 1"], params)
    assert [g.text for g in remote] == [free.text[: free.text.find(stop)]] * 2
    assert all(g.finish_reason == "stop" for g in remote)


def test_chat_mode_uses_the_servers_chat_template(server: str, model_dir: Path) -> None:
    params = SamplingParams(temperature=0.0, max_new_tokens=8)
    remote = OpenAICompatibleLM(server, NAME, chat=True, system_prompt="terse")
    here = TransformersLM(model_dir, system_prompt="terse")
    assert here.uses_chat_template
    got = remote.generate(["hello", "write f"], params)
    want = here.generate(["hello", "write f"], params)
    assert [g.text for g in got] == [g.text for g in want]
    assert got[0].logprobs == pytest.approx(want[0].logprobs, abs=1e-4)


def test_server_errors_are_clear(server: str) -> None:
    with pytest.raises(HTTPPolicyError, match=r"/v1/completions failed: HTTP 400.*not served"):
        OpenAICompatibleLM(server, "other-model").generate(["x"], SamplingParams())
    status, body = _post(server + "/v1/completions", b"{not json")
    assert status == 400 and "invalid JSON" in body["error"]["message"]
    status, body = _post(server + "/v1/completions", json.dumps({"prompt": 3}).encode())
    assert status == 400 and "prompt" in body["error"]["message"]
    status, body = _post(server + "/v1/embeddings", b"{}")
    assert status == 404
    too_many = json.dumps({"prompt": "x", "max_tokens": 10**6}).encode()
    assert _post(server + "/v1/completions", too_many)[0] == 400


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(httpd: Any) -> Iterator[str]:
    """Serve ``httpd`` (bound to 127.0.0.1) in a thread; yield its root URL; always stop it."""
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_unreachable_server_names_the_url() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    lm = OpenAICompatibleLM(url, NAME, max_retries=1, retry_backoff=0.01, timeout=5)
    with pytest.raises(HTTPPolicyError, match=rf"{url}/v1/completions failed after 2 attempts"):
        lm.generate(["x"], SamplingParams(max_new_tokens=2))


def test_retries_a_busy_server_then_succeeds() -> None:
    calls: list[str] = []

    class Flaky(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append(body["prompt"])
            status = 503 if len(calls) == 1 else 200
            reply = (
                {"error": {"message": "busy"}}
                if status == 503
                else {
                    "choices": [
                        {"index": 0, "text": " ok", "finish_reason": "length", "logprobs": None}
                    ]
                }
            )
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return None

    with serving(HTTPServer(("127.0.0.1", 0), Flaky)) as root:
        url = root + "/v1"
        lm = OpenAICompatibleLM(url, NAME, max_retries=2, retry_backoff=0.01)
        (gen,) = lm.generate(["p"], SamplingParams())
        assert gen.text == " ok" and gen.logprobs == () and gen.finish_reason == "length"
        assert calls == ["p", "p"]
        no_retry = OpenAICompatibleLM(url, NAME, max_retries=0)
        calls.clear()
        with pytest.raises(HTTPPolicyError, match="HTTP 503: busy"):
            no_retry.generate(["p"], SamplingParams())


@pytest.mark.requires("torch", "transformers")
def test_chat_without_template_is_a_clear_client_error() -> None:
    tokenizer = load_tiny_tokenizer()
    service = CompletionService(build_tiny_model("nano", tokenizer), tokenizer, NAME)
    with pytest.raises(RequestError, match="no chat template"):
        service.chat_completions({"messages": [{"role": "user", "content": "hi"}]})
    with pytest.raises(RequestError, match="n"):
        service.completions({"prompt": "x", "n": 0})
    reply = service.completions({"prompt": ["a", "b"], "n": 2, "max_tokens": 2, "logprobs": 0})
    assert [c["index"] for c in reply["choices"]] == [0, 1, 2, 3]
    assert len(reply["choices"][0]["logprobs"]["token_logprobs"]) == 2
    assert reply["usage"]["completion_tokens"] == 8
    with serving(make_server(service)) as root:
        lm = OpenAICompatibleLM(root, NAME, chat=True)
        with pytest.raises(HTTPPolicyError, match="HTTP 400: .*no chat template"):
            lm.generate(["hi"], SamplingParams(max_new_tokens=2))


def test_the_api_key_comes_from_the_argument_or_codea1_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str | None] = []

    class Echo(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(self.headers.get("Authorization"))
            data = json.dumps({"choices": [{"index": 0, "text": "ok"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return None

    monkeypatch.delenv(API_KEY_VARIABLE, raising=False)
    with serving(HTTPServer(("127.0.0.1", 0), Echo)) as root:
        OpenAICompatibleLM(root, NAME).generate(["p"], SamplingParams(max_new_tokens=2))
        monkeypatch.setenv(API_KEY_VARIABLE, "from-env")
        OpenAICompatibleLM(root, NAME).generate(["p"], SamplingParams(max_new_tokens=2))
        given = OpenAICompatibleLM(root, NAME, api_key="given")
        given.generate(["p"], SamplingParams(max_new_tokens=2))
    assert seen == [None, "Bearer from-env", "Bearer given"]


def test_base_url_handling() -> None:
    assert OpenAICompatibleLM("http://127.0.0.1:8000", NAME).base_url == "http://127.0.0.1:8000/v1"
    assert OpenAICompatibleLM("http://h:1/v1/", NAME).base_url == "http://h:1/v1"
    assert OpenAICompatibleLM("https://x.org/api/v1", NAME).base_url == "https://x.org/api/v1"
    with pytest.raises(ValueError, match="http"):
        OpenAICompatibleLM("127.0.0.1:8000", NAME)
    assert OpenAICompatibleLM("http://h:1", NAME).generate([], SamplingParams()) == []


def test_one_request_per_prompt_samples_what_one_batched_request_does(
    server: str, local: TransformersLM
) -> None:
    """Prompt i of a call gets the local model's stream for seed_offset + i, however sent."""
    params = SamplingParams(max_new_tokens=6, seed=0, seed_offset=3)
    prompts = ["def f(x):"] * 3
    batched = OpenAICompatibleLM(server, NAME).generate(prompts, params)
    one_each = OpenAICompatibleLM(server, NAME, batch_prompts=False).generate(prompts, params)
    here = local.generate(prompts, params)
    assert [g.text for g in one_each] == [g.text for g in batched] == [g.text for g in here]
    assert len({g.text for g in here}) > 1  # three streams, not one repeated


class _Garbage(BaseHTTPRequestHandler):
    """Answers each route with a broken reply of its own kind."""

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        kind = self.path.split("/")[1]
        if kind == "status":
            self.wfile.write(b"GARBAGE GARBAGE\r\n\r\n")
            return
        bodies = {
            "short": b'{"choices": [',
            "ints": b'{"choices": [1]}',
            "deep": b"[" * 20000 + b"]" * 20000,  # Python 3.13 decodes 5,000 levels
        }
        body = bodies[kind]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body) + (100 if kind == "short" else 0)))
        self.end_headers()
        self.wfile.write(body)
        if kind == "short":
            self.close_connection = True

    def log_message(self, *args: Any) -> None:
        return None


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("status", "failed after 2 attempts"),
        ("short", "failed after 2 attempts"),
        ("ints", "expected 1 choices"),
        ("deep", "not JSON"),
    ],
)
def test_a_broken_reply_is_an_http_policy_error(kind: str, says: str) -> None:
    with serving(HTTPServer(("127.0.0.1", 0), _Garbage)) as root:
        url = f"{root}/{kind}/v1"
        lm = OpenAICompatibleLM(url, NAME, max_retries=1, retry_backoff=0.01, timeout=5)
        with pytest.raises(HTTPPolicyError, match=says):
            lm.generate(["p"], SamplingParams(max_new_tokens=4))


def test_the_timeout_bounds_a_whole_reply() -> None:
    import time

    class Trickle(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            body = b'{"choices": [{"index": 0, "text": "ok"}]}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for byte in body:  # each read well under the timeout, the whole reply not
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.05)

        def log_message(self, *args: Any) -> None:
            return None

    with serving(HTTPServer(("127.0.0.1", 0), Trickle)) as root:
        url = root + "/v1"
        lm = OpenAICompatibleLM(url, NAME, max_retries=0, timeout=0.5)
        started = time.monotonic()
        with pytest.raises(HTTPPolicyError, match="took longer than the timeout"):
            lm.generate(["p"], SamplingParams(max_new_tokens=4))
        assert time.monotonic() - started < 1.5  # the reply alone takes 2 s


@pytest.mark.slow
def test_sigterm_during_a_request_answers_it_and_exits_cleanly(model_dir: Path) -> None:
    """The process had aborted (SIGABRT) when it exited with a handler inside the model."""
    import time

    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "agents.serve", "--model", str(model_dir), "--host"]
    command += ["127.0.0.1", "--port", "0", "--served-model-name", NAME, "--threads", "1"]
    proc = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().split(" on ", 1)[1].strip()
        # 16 x 400 tokens: seconds of generation on one thread, the signal comes after 1 s
        body = {"model": NAME, "prompt": "def f(x):", "max_tokens": 400, "n": 16, "seed": 0}
        answers: list[int] = []

        def ask() -> None:
            request = urllib.request.Request(
                base + "/v1/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=120) as reply:
                answers.append(len(json.loads(reply.read())["choices"]))

        client = threading.Thread(target=ask)
        client.start()
        time.sleep(1.0)  # the request is being generated
        assert not answers, "answered before the signal: the test would not test a live request"
        proc.send_signal(signal.SIGTERM)
        client.join(120)
        assert proc.wait(timeout=120) == 0, (proc.stderr.read() if proc.stderr else "")[-2000:]
        assert answers == [16]  # answered before the exit
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=20)
