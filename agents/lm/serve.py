"""A minimal OpenAI-compatible HTTP server for any local ``transformers`` causal LM.

Usage::

    python -m agents.serve --model DIR [--host 127.0.0.1] [--port 8000] [--served-model-name
    NAME]

It serves one model with the standard library's ``http.server`` (no extra dependency) and answers:

- ``GET /health``: ``{"status": "ok"}`` once the model is loaded;
- ``GET /v1/models``: the served model's name;
- ``POST /v1/completions``: ``prompt`` (a string or a list), ``max_tokens`` (default 16),
  ``temperature`` (default 1), ``top_p``, ``n``, ``stop``, ``seed`` and ``logprobs`` (any integer
  returns the sampled tokens' log-probabilities; alternatives are not computed);
- ``POST /v1/chat/completions``: ``messages`` rendered with the tokenizer's chat template (400
  when it has none), same sampling fields, ``logprobs: true`` for per-token log-probabilities.

Both routes take ``"stream": true``: the answer is then ``text/event-stream`` (chunked transfer
encoding), one ``data: {JSON}`` event per chunk and ``data: [DONE]`` last, as OpenAI streams. A
chat stream sends, per choice, a ``chat.completion.chunk`` with ``delta: {"role": "assistant"}``,
then content deltas (one per token that adds text; with ``logprobs: true`` each carries its
tokens' log-probabilities), then an empty delta with the ``finish_reason``. With
``stream_options: {"include_usage": true}`` every chunk has ``"usage": null`` and one last chunk
has ``choices: []`` and the ``usage``. The whole batch is sampled before the first chunk is
sent (streaming changes the transport, not the samples): validation errors are still plain
JSON 400 answers, and the concatenated deltas equal the non-streaming ``content``.

Requests are served one at a time (the model is not shared between threads); each request's
prompts are sampled as one batch. It is meant for tests, examples and small local experiments;
serve real models with vLLM or llama.cpp. When ready it prints one line,
``serving NAME on http://HOST:PORT``, to stdout (useful with ``--port 0``: a free port).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agents.lm.interfaces import Generation, SamplingParams
from agents.lm.transformers_lm import TransformersLM

__all__ = ["CompletionService", "RequestError", "main", "make_server"]

log = logging.getLogger("agents.serve")

_MAX_BODY_BYTES = 16 * 1024 * 1024


class RequestError(Exception):
    """A client error, answered with HTTP 400 and an OpenAI-style error body."""


class CompletionService:
    """Turns OpenAI request bodies into samples from a :class:`TransformersLM`.

    Args:
        model: The model.
        tokenizer: Its tokenizer.
        name: The model name clients send and see.
        max_tokens_limit: Largest ``max_tokens`` accepted.
        batch_size: Most sequences sampled together.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        name: str,
        max_tokens_limit: int = 4096,
        batch_size: int | None = None,
    ) -> None:
        self.name = name
        self.max_tokens_limit = max_tokens_limit
        self.raw = TransformersLM(model, tokenizer, chat_template=False, batch_size=batch_size)
        self.has_chat_template = bool(getattr(tokenizer, "chat_template", None))
        self.chat = (
            TransformersLM(model, tokenizer, chat_template=True, batch_size=batch_size)
            if self.has_chat_template
            else None
        )
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ requests

    def stop_generating(self) -> None:
        """Wait for the generation in progress, and start no other (for a clean exit).

        The model's lock is taken and kept: a process that exits while a request's handler
        thread is inside the model's native code aborts (SIGABRT), so the server's main thread
        calls this before it returns.
        """
        self._lock.acquire()

    def completions(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Answer a ``/v1/completions`` request body."""
        prompts, params, n = self._completion_request(body)
        want_logprobs = body.get("logprobs") is not None
        gens = self._run(self.raw, [p for p in prompts for _ in range(n)], params)
        choices = [
            {
                "index": i,
                "text": g.text,
                "finish_reason": g.finish_reason,
                "logprobs": self._completion_logprobs(g) if want_logprobs else None,
            }
            for i, g in enumerate(gens)
        ]
        return self._envelope("text_completion", choices, gens)

    def chat_completions(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Answer a ``/v1/chat/completions`` request body."""
        gens = self._chat_generations(body)
        want_logprobs = bool(body.get("logprobs"))
        choices = [
            {
                "index": i,
                "message": {"role": "assistant", "content": g.text},
                "finish_reason": g.finish_reason,
                "logprobs": self._chat_logprobs(g) if want_logprobs else None,
            }
            for i, g in enumerate(gens)
        ]
        return self._envelope("chat.completion", choices, gens)

    def chat_completions_stream(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Answer a streaming ``/v1/chat/completions`` request: its chunks, in order.

        Raises:
            RequestError: before any chunk exists, so the caller can still answer 400.
        """
        include_usage = _include_usage(body)
        gens = self._chat_generations(body)
        want_logprobs = bool(body.get("logprobs"))
        head = self._chunk_head("chat.completion.chunk", include_usage)
        chunks: list[dict[str, Any]] = []
        for i, g in enumerate(gens):
            chunks.append(
                {
                    **head,
                    "choices": [
                        {
                            "index": i,
                            "delta": {"role": "assistant", "content": ""},
                            "logprobs": None,
                            "finish_reason": None,
                        }
                    ],
                }
            )
            pieces, rest_ids, rest_lps = self._pieces(g)
            deltas: list[tuple[dict[str, Any], list[int], list[float], str | None]] = [
                ({"content": text}, ids, lps, None) for text, ids, lps in pieces
            ]
            deltas.append(({}, rest_ids, rest_lps, g.finish_reason))
            for delta, ids, lps, finish in deltas:
                logprobs = None
                if want_logprobs and (ids or finish is None):
                    logprobs = {
                        "content": [
                            {"token": self._token(t), "logprob": lp, "top_logprobs": []}
                            for t, lp in zip(ids, lps, strict=True)
                        ]
                    }
                choice = {"index": i, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
                chunks.append({**head, "choices": [choice]})
        if include_usage:
            chunks.append({**head, "choices": [], "usage": self._usage(gens)})
        return chunks

    def completions_stream(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Answer a streaming ``/v1/completions`` request: its chunks, in order."""
        include_usage = _include_usage(body)
        prompts, params, n = self._completion_request(body)
        want_logprobs = body.get("logprobs") is not None
        gens = self._run(self.raw, [p for p in prompts for _ in range(n)], params)
        head = self._chunk_head("text_completion", include_usage)
        chunks: list[dict[str, Any]] = []
        for i, g in enumerate(gens):
            pieces, rest_ids, rest_lps = self._pieces(g)
            steps: list[tuple[str, list[int], list[float], str | None]] = [
                (text, ids, lps, None) for text, ids, lps in pieces
            ]
            steps.append(("", rest_ids, rest_lps, g.finish_reason))
            offset = 0
            for text, ids, lps, finish in steps:
                logprobs = None
                if want_logprobs:
                    tokens = [self._token(t) for t in ids]
                    offsets = []
                    for token in tokens:
                        offsets.append(offset)
                        offset += len(token)
                    logprobs = {
                        "tokens": tokens,
                        "token_logprobs": list(lps),
                        "top_logprobs": None,
                        "text_offset": offsets,
                    }
                choice = {"index": i, "text": text, "logprobs": logprobs, "finish_reason": finish}
                chunks.append({**head, "choices": [choice]})
        if include_usage:
            chunks.append({**head, "choices": [], "usage": self._usage(gens)})
        return chunks

    def _chat_generations(self, body: Mapping[str, Any]) -> list[Generation]:
        if self.chat is None:
            raise RequestError(
                f"model {self.name!r} has no chat template; use /v1/completions instead"
            )
        messages = body.get("messages")
        if not (
            isinstance(messages, list)
            and messages
            and all(
                isinstance(m, dict)
                and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str)
                for m in messages
            )
        ):
            raise RequestError("'messages' must be a non-empty list of {role, content} strings")
        params, n = self._sampling(body, default_max_tokens=256)
        rendered = self.chat.render_messages(
            [{"role": m["role"], "content": m["content"]} for m in messages]
        )
        return self._run(self.chat, [rendered] * n, params)

    def models(self) -> dict[str, Any]:
        """Answer ``/v1/models``."""
        return {
            "object": "list",
            "data": [{"id": self.name, "object": "model", "owned_by": "codea1"}],
        }

    # ------------------------------------------------------------------ helpers

    def _completion_request(self, body: Mapping[str, Any]) -> tuple[list[str], SamplingParams, int]:
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            prompts = [prompt]
        elif isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
            prompts = list(prompt)
        else:
            raise RequestError("'prompt' must be a string or a non-empty list of strings")
        params, n = self._sampling(body, default_max_tokens=16)
        return prompts, params, n

    def _pieces(
        self, g: Generation
    ) -> tuple[list[tuple[str, list[int], list[float]]], list[int], list[float]]:
        """Split a completion into stream deltas.

        Returns:
            ``(pieces, rest_ids, rest_logprobs)``: each piece is (text, its token ids, their
            logprobs); a token that makes the decoded prefix grow (and does not end inside a
            multi-byte character) closes a piece, and the texts concatenate to exactly
            ``g.text`` (stop string and special tokens excluded, as without streaming). The
            tokens after the last piece (end of sequence, a stop string) are the rest, sent
            with the final chunk.
        """
        ids = list(g.completion_ids)
        lps = list(g.logprobs) if len(g.logprobs) == len(ids) else [0.0] * len(ids)
        pieces: list[tuple[str, list[int], list[float]]] = []
        emitted, start = "", 0
        tokenizer = self.raw.tokenizer
        for end in range(1, len(ids) + 1):
            if len(emitted) >= len(g.text):
                break
            prefix = str(tokenizer.decode(ids[:end], skip_special_tokens=True))
            if prefix.endswith("\ufffd") or not prefix.startswith(emitted):
                continue
            grown = prefix[: len(g.text)]
            if len(grown) > len(emitted) and g.text.startswith(grown):
                pieces.append((grown[len(emitted) :], ids[start:end], lps[start:end]))
                emitted, start = grown, end
        if len(emitted) < len(g.text):
            pieces.append((g.text[len(emitted) :], ids[start:], lps[start:]))
            start = len(ids)
        return pieces, ids[start:], lps[start:]

    def _token(self, token_id: int) -> str:
        return str(self.raw.tokenizer.decode([token_id]))

    def _chunk_head(self, kind: str, include_usage: bool) -> dict[str, Any]:
        head: dict[str, Any] = {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": kind,
            "created": int(time.time()),
            "model": self.name,
        }
        if include_usage:
            head["usage"] = None
        return head

    def _usage(self, gens: Sequence[Generation]) -> dict[str, int]:
        prompt_tokens = sum(len(g.prompt_ids) for g in gens)
        completion_tokens = sum(len(g.completion_ids) for g in gens)
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }

    def _sampling(
        self, body: Mapping[str, Any], default_max_tokens: int
    ) -> tuple[SamplingParams, int]:
        model = body.get("model")
        if model is not None and model != self.name:
            raise RequestError(f"model {model!r} is not served here; this server has {self.name!r}")
        stop = body.get("stop")
        if stop is None:
            stops: tuple[str, ...] = ()
        elif isinstance(stop, str):
            stops = (stop,)
        elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
            stops = tuple(stop)
        else:
            raise RequestError("'stop' must be a string or a list of strings")
        n = body.get("n", 1)
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens", default_max_tokens))
        if not isinstance(n, int) or not 1 <= n <= 128:
            raise RequestError("'n' must be an integer in [1, 128]")
        if not isinstance(max_tokens, int) or not 1 <= max_tokens <= self.max_tokens_limit:
            raise RequestError(f"'max_tokens' must be an integer in [1, {self.max_tokens_limit}]")
        seed = body.get("seed")
        if seed is not None and not isinstance(seed, int):
            raise RequestError("'seed' must be an integer")
        try:
            params = SamplingParams(
                temperature=float(body.get("temperature", 1.0)),
                top_p=float(body.get("top_p", 1.0)),
                max_new_tokens=max_tokens,
                stop=stops,
                seed=seed,
            )
        except (TypeError, ValueError) as exc:
            raise RequestError(str(exc)) from exc
        return params, n

    def _run(
        self, lm: TransformersLM, rendered: Sequence[str], params: SamplingParams
    ) -> list[Generation]:
        with self._lock:
            try:
                return lm.generate_rendered(rendered, params)
            except ValueError as exc:  # e.g. an empty prompt
                raise RequestError(str(exc)) from exc

    def _tokens(self, g: Generation) -> list[str]:
        return [str(self.raw.tokenizer.decode([i])) for i in g.completion_ids]

    def _completion_logprobs(self, g: Generation) -> dict[str, Any]:
        tokens = self._tokens(g)
        offsets, position = [], 0
        for token in tokens:
            offsets.append(position)
            position += len(token)
        return {
            "tokens": tokens,
            "token_logprobs": list(g.logprobs),
            "top_logprobs": None,
            "text_offset": offsets,
        }

    def _chat_logprobs(self, g: Generation) -> dict[str, Any]:
        return {
            "content": [
                {"token": t, "logprob": lp, "top_logprobs": []}
                for t, lp in zip(self._tokens(g), g.logprobs, strict=True)
            ]
        }

    def _envelope(
        self, kind: str, choices: list[dict[str, Any]], gens: Sequence[Generation]
    ) -> dict[str, Any]:
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": kind,
            "created": int(time.time()),
            "model": self.name,
            "choices": choices,
            "usage": self._usage(gens),
        }


def _include_usage(body: Mapping[str, Any]) -> bool:
    """``stream_options.include_usage`` of a streaming request (400 when malformed)."""
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise RequestError("'stream_options' must be an object")
    include = options.get("include_usage", False)
    if not isinstance(include, bool):
        raise RequestError("'stream_options.include_usage' must be a boolean")
    return include


class _Handler(BaseHTTPRequestHandler):
    server_version = "codea1-serve/0.1"
    protocol_version = "HTTP/1.1"

    @property
    def service(self) -> CompletionService:
        service: CompletionService = self.server.service  # type: ignore[attr-defined]
        return service

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/health", "/v1/health"):
            self._reply(200, {"status": "ok"})
        elif path == "/v1/models":
            self._reply(200, self.service.models())
        else:
            self._error(404, f"no route GET {self.path}", "not_found_error")

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        requests: _InFlight = self.server.in_flight  # type: ignore[attr-defined]
        with requests:
            self._post()

    def _post(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        routes = {
            "/v1/completions": self.service.completions,
            "/v1/chat/completions": self.service.chat_completions,
        }
        streams = {
            "/v1/completions": self.service.completions_stream,
            "/v1/chat/completions": self.service.chat_completions_stream,
        }
        if path not in routes:
            self._error(404, f"no route POST {self.path}", "not_found_error")
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if not 0 < length <= _MAX_BODY_BYTES:
            self._error(400, "a JSON body with a valid Content-Length is required")
            return
        try:
            body = json.loads(self.rfile.read(length))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._error(400, f"invalid JSON body: {exc}")
            return
        if not isinstance(body, dict):
            self._error(400, "the JSON body must be an object")
            return
        stream = body.get("stream", False)
        if not isinstance(stream, bool):
            self._error(400, "'stream' must be a boolean")
            return
        try:
            if stream:
                self._stream(streams[path](body))
            else:
                self._reply(200, routes[path](body))
        except RequestError as exc:
            self._error(400, str(exc))
        except Exception as exc:  # report server faults to the client, keep serving
            log.exception("request failed")
            self._error(500, f"{type(exc).__name__}: {exc}", "server_error")

    def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        self._reply(status, {"error": {"message": message, "type": kind, "code": status}})

    def _reply(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, chunks: Sequence[Mapping[str, Any]]) -> None:
        """Send server-sent events (chunked transfer encoding), ``data: [DONE]`` last."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for event in _events(chunks):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client went away
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        log.info("%s %s", self.address_string(), format % args)


def _events(chunks: Sequence[Mapping[str, Any]]) -> Iterator[bytes]:
    for chunk in chunks:
        yield b"data: " + json.dumps(chunk).encode("utf-8") + b"\n\n"
    yield b"data: [DONE]\n\n"


_DRAIN_S = 600.0
"""How long a stopping server waits for the requests in flight to be answered."""


def make_server(service: CompletionService, host: str = "127.0.0.1", port: int = 0) -> Any:
    """Bind an HTTP server for ``service`` (``port=0`` picks a free port).

    Returns:
        A ``ThreadingHTTPServer``; call ``serve_forever()`` and later ``shutdown()``.
    """
    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    server.service = service  # type: ignore[attr-defined]
    server.in_flight = _InFlight()  # type: ignore[attr-defined]
    return server


class _InFlight:
    """A count of the POST requests being answered (``with`` it around one), and a wait for 0."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = threading.Condition()

    def __enter__(self) -> None:
        with self._idle:
            self._count += 1

    def __exit__(self, *exc: object) -> None:
        with self._idle:
            self._count -= 1
            self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is being answered; False when ``timeout`` passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._count == 0, timeout)


def main(argv: list[str] | None = None) -> int:
    """Run the server until SIGINT or SIGTERM."""
    parser = argparse.ArgumentParser(
        prog="python -m agents.serve",
        description="OpenAI-compatible server for a local causal LM",
    )
    parser.add_argument("--model", required=True, help="model directory or hub name")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--served-model-name", default=None, help="default: --model")
    parser.add_argument("--dtype", default=None, help="float32, bfloat16, auto...")
    parser.add_argument("--device", default=None, help="cpu, cuda:0...")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--max-tokens-limit", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")

    from agents.lm.models import load_model, load_tokenizer

    if (Path(args.model) / "checkpoints").is_dir():
        print(
            f"python -m agents.serve: error: {args.model} is a codea1 run directory; write a "
            f"player as a model directory first: codea1 export {args.model} --role coder --out DIR",
            file=sys.stderr,
        )
        return 2
    try:
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
        model = load_model(args.model, dtype=args.dtype, device=args.device)
        tokenizer = load_tokenizer(args.model)
    except (OSError, ValueError, ImportError) as exc:  # no model there, or no torch: one line
        print(f"python -m agents.serve: error: {exc}", file=sys.stderr)
        return 2
    name = args.served_model_name or args.model
    service = CompletionService(
        model, tokenizer, name, max_tokens_limit=args.max_tokens_limit, batch_size=args.batch_size
    )
    server = make_server(service, args.host, args.port)
    host, port = server.server_address[:2]

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"serving {name} on http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        server.in_flight.wait_idle(_DRAIN_S)  # requests in flight are answered (a bounded wait)
        service.stop_generating()  # then no generation runs while the process exits
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
