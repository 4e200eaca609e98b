"""A :class:`~agents.lm.interfaces.LanguageModel` behind any OpenAI-compatible HTTP API.

Works with vLLM's server (``vllm serve MODEL``), llama.cpp's ``llama-server``, hosted APIs and
the bundled :mod:`agents.lm.serve`. Only the standard library is used (``urllib``).

Example:
    >>> from agents.lm.http import OpenAICompatibleLM
    >>> from agents.players.policy import CoderPolicy
    >>> lm = OpenAICompatibleLM("http://127.0.0.1:8000/v1", model="Qwen/Qwen2.5-Coder-1.5B")
    >>> coder = CoderPolicy(lm)
    >>> answers = coder.act(observations)  # a server must answer there  # doctest: +SKIP

Token ids are not part of the OpenAI API, so generations from a server carry text,
log-probabilities (when the server returns them) and the finish reason, with empty
``prompt_ids``/``completion_ids``: use them to play and evaluate; train on a local model.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agents.lm.interfaces import FinishReason, Generation, SamplingParams, stream_key
from codea1_env.problems.jsontext import decode_json

__all__ = ["API_KEY_VARIABLE", "HTTPPolicyError", "OpenAICompatibleLM"]

API_KEY_VARIABLE = "CODEA1_API_KEY"
"""The environment variable a server's API key is read from when none is passed."""

_RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


class HTTPPolicyError(RuntimeError):
    """A request to the model server failed; the message names the URL and the cause."""


class OpenAICompatibleLM:
    """Sample completions from an OpenAI-compatible server.

    Args:
        base_url: The API root, e.g. ``"http://127.0.0.1:8000/v1"``. A bare host
            (``"http://127.0.0.1:8000"``, empty path) gets ``/v1`` appended; any other path is
            used as given (``https://openrouter.ai/api/v1``).
        model: The model name sent with every request.
        api_key: Sent as ``Authorization: Bearer ...``. ``None``: the ``CODEA1_API_KEY``
            environment variable when it is set (how ``http:`` specs of ``codea1 eval`` and the
            integrations' ``opponent_url`` reach a hosted API), else no header.
        timeout: Seconds per HTTP request, the reply's whole body included.
        max_retries: Extra attempts after a connection error, a timeout or HTTP 408/409/429/5xx,
            with exponential backoff (``retry_backoff`` x 2^attempt seconds). Other HTTP errors
            (a bad request) are raised at once.
        chat: Use ``/v1/chat/completions`` with the prompt as the user message (the server applies
            the model's chat template) instead of raw ``/v1/completions``.
        system_prompt: Optional system message in chat mode.
        logprobs: Ask for the sampled tokens' log-probabilities.
        batch_prompts: In completions mode, send all prompts in one request (``prompt`` as a
            list); otherwise one request per prompt. Chat mode always sends one per prompt.
        max_concurrency: Requests in flight at once when sending one per prompt.
        extra_body: Extra request fields, e.g. ``{"top_k": 20}`` for vLLM.
        retry_backoff: Base of the backoff delay in seconds.

    Raises:
        ValueError: On a base URL that is not http(s).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        *,
        chat: bool = False,
        system_prompt: str | None = None,
        logprobs: bool = True,
        batch_prompts: bool = True,
        max_concurrency: int = 8,
        extra_body: Mapping[str, Any] | None = None,
        retry_backoff: float = 0.5,
    ) -> None:
        parsed = urllib.parse.urlparse(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        root = base_url.rstrip("/")
        if parsed.path in ("", "/"):
            root += "/v1"
        if max_retries < 0 or max_concurrency < 1 or timeout <= 0:
            raise ValueError("need max_retries >= 0, max_concurrency >= 1 and timeout > 0")
        self.base_url = root
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get(API_KEY_VARIABLE)
        self.timeout = timeout
        self.max_retries = max_retries
        self.uses_chat_template = chat
        self.system_prompt = system_prompt
        self.logprobs = logprobs
        self.batch_prompts = batch_prompts
        self.max_concurrency = max_concurrency
        self.extra_body = dict(extra_body or {})
        self.retry_backoff = retry_backoff

    # ------------------------------------------------------------------ LanguageModel

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Generation]:
        """Return one generation per prompt.

        Raises:
            HTTPPolicyError: If the server cannot be reached after the retries, answers with an
                error, or answers with something that is not an OpenAI response.
        """
        if isinstance(prompts, str):
            raise TypeError("generate() takes a sequence of prompts, not a single string")
        prompts = list(prompts)
        if not prompts:
            return []
        if not self.uses_chat_template and self.batch_prompts:
            return self._completions(prompts, params, 0)
        one = self._chat if self.uses_chat_template else self._completions
        if len(prompts) == 1:
            return one([prompts[0]], params, 0)
        # one request per prompt: prompt i's seed is seed + seed_offset + i, as in one request
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(prompts))) as pool:
            parts = list(pool.map(lambda i: one([prompts[i]], params, i), range(len(prompts))))
        return [g for part in parts for g in part]

    def models(self) -> list[str]:
        """Return the model names the server lists at ``/models``."""
        reply = self._request("GET", "/models", None)
        try:
            return [str(entry["id"]) for entry in reply["data"]]
        except (KeyError, TypeError) as exc:
            raise HTTPPolicyError(f"unexpected reply from {self.base_url}/models: {reply}") from exc

    # ------------------------------------------------------------------ requests

    def _sampling_fields(self, params: SamplingParams, first: int) -> dict[str, Any]:
        """The request's sampling fields; ``first`` is the index of its first prompt in the call.

        The bundled server keys a request's prompt ``j`` by ``stream_key(seed, j)``, as the
        local model does: sending ``stream_key(seed, seed_offset + first)`` (as a signed 64-bit
        int) gives prompt ``first + j`` of the call the local model's stream, however the call
        is split into requests. Other servers get a distinct, reproducible seed per request.
        """
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "n": 1,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        if params.seed is not None:
            key = stream_key(params.seed, params.seed_offset + first)
            body["seed"] = key - (1 << 64) if key >= 1 << 63 else key  # a signed int64
        return body

    def _completions(
        self, prompts: list[str], params: SamplingParams, first: int
    ) -> list[Generation]:
        body = self._sampling_fields(params, first)
        body["prompt"] = prompts if len(prompts) > 1 else prompts[0]
        if self.logprobs:
            body["logprobs"] = 1
        body.update(self.extra_body)
        reply = self._request("POST", "/completions", body)
        choices = self._choices(reply, "/completions", len(prompts))
        gens = []
        for prompt, choice in zip(prompts, choices, strict=True):
            text = choice.get("text")
            if not isinstance(text, str):
                raise HTTPPolicyError(f"no 'text' in a choice from {self.base_url}/completions")
            logprobs = choice.get("logprobs") or {}
            values = logprobs.get("token_logprobs") if isinstance(logprobs, dict) else None
            gens.append(self._generation(text, prompt, choice, values))
        return gens

    def _chat(self, prompts: list[str], params: SamplingParams, first: int) -> list[Generation]:
        (prompt,) = prompts
        messages = []
        if self.system_prompt is not None:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": prompt})
        body = self._sampling_fields(params, first)
        body["messages"] = messages
        if self.logprobs:
            body["logprobs"] = True
        body.update(self.extra_body)
        reply = self._request("POST", "/chat/completions", body)
        (choice,) = self._choices(reply, "/chat/completions", 1)
        message = choice.get("message")
        text = message.get("content") if isinstance(message, dict) else None
        if not isinstance(text, str):
            raise HTTPPolicyError(
                f"no message content in the reply from {self.base_url}/chat/completions"
            )
        logprobs = choice.get("logprobs") or {}
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        values = (
            [item.get("logprob") if isinstance(item, dict) else None for item in content]
            if isinstance(content, list)
            else None
        )
        return [self._generation(text, prompt, choice, values)]

    def _generation(
        self, text: str, prompt: str, choice: Mapping[str, Any], values: Any
    ) -> Generation:
        finish: FinishReason = "length" if choice.get("finish_reason") == "length" else "stop"
        logprobs: tuple[float, ...] = ()
        if isinstance(values, list) and all(isinstance(v, (int, float)) for v in values):
            logprobs = tuple(float(v) for v in values)
        return Generation(text=text, logprobs=logprobs, finish_reason=finish, prompt=prompt)

    def _choices(self, reply: Any, route: str, expected: int) -> list[dict[str, Any]]:
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if (
            not isinstance(choices, list)
            or len(choices) != expected
            or not all(isinstance(c, dict) for c in choices)
        ):
            raise HTTPPolicyError(
                f"expected {expected} choices from {self.base_url}{route}, got: {str(reply)[:300]}"
            )
        if all(isinstance(c, dict) and isinstance(c.get("index"), int) for c in choices):
            choices = sorted(choices, key=lambda c: c["index"])
        return choices

    def _request(self, method: str, route: str, body: Mapping[str, Any] | None) -> Any:
        url = self.base_url + route
        data = json.dumps(body).encode("utf-8") if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last_error = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.retry_backoff * 2 ** (attempt - 1))
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                deadline = time.monotonic() + self.timeout  # for the whole reply, not each read
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = _read_by(response, deadline)
            except urllib.error.HTTPError as exc:
                detail = _error_message(exc)
                last_error = f"HTTP {exc.code}: {detail}"
                if exc.code in _RETRY_STATUSES:
                    continue
                raise HTTPPolicyError(f"{method} {url} failed: {last_error}") from exc
            except (
                urllib.error.URLError,
                TimeoutError,
                ConnectionError,
                OSError,
                http.client.HTTPException,  # a malformed or cut-short reply: a flaky server
            ) as exc:
                reason = getattr(exc, "reason", exc)
                last_error = f"{type(exc).__name__}: {reason}"
                continue
            try:
                return decode_json(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise HTTPPolicyError(
                    f"{method} {url} returned a body that is not JSON: {raw[:200]!r}"
                ) from exc
        raise HTTPPolicyError(
            f"{method} {url} failed after {self.max_retries + 1} attempts: {last_error}"
        )


def _read_by(response: Any, deadline: float) -> bytes:
    """The reply's body, or :class:`TimeoutError` once ``deadline`` passes.

    A trickling server would otherwise keep each read under the socket timeout for ever.
    """
    chunks: list[bytes] = []
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("the reply took longer than the timeout")
        chunk = response.read1(65536)
        if not chunk:
            missing = getattr(response, "length", None)
            if missing:  # the connection ended before the Content-Length it announced
                raise http.client.IncompleteRead(b"".join(chunks), missing)
            return b"".join(chunks)
        chunks.append(chunk)


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read()
    except OSError:
        return exc.reason if isinstance(exc.reason, str) else str(exc)
    try:
        payload = json.loads(raw)
        error = payload.get("error", payload) if isinstance(payload, dict) else payload
        if isinstance(error, dict) and "message" in error:
            return str(error["message"])
        return str(error)[:500]
    except (json.JSONDecodeError, UnicodeDecodeError):
        return raw[:500].decode("utf-8", "replace")
