"""``codea1 serve-reward``: an HTTP reward service over one referee and one mistake book.

Standard library only (:class:`http.server.ThreadingHTTPServer`). Every request is parsed and
checked in its handler thread, then queued; one collector thread takes what arrived within a short
window (``batch_window_s``) or up to ``max_batch`` rows and scores it with ONE
:meth:`RewardCore.score <agents.integrations.core.RewardCore.score>` call (one frozen-tester call,
one :meth:`~codea1_env.scoring.referee.Referee.judge_many`, one sandbox call).

Endpoints:

``POST /`` and ``POST /get_reward``
    OpenRLHF's remote reward protocol (``--reward.remote_url http://HOST:PORT/get_reward``):
    ``{"query": [...], "prompts": [...], "labels": [...]}`` ->
    ``{"rewards": [...], "scores": [...], "extra_logs": {...}}``; see
    :mod:`agents.integrations.openrlhf` for the labels.
``POST /v1/judge``
    codea1's own: one problem, codes and suites::

        {"problem": "bank/clamp" | {JSONL record},
         "codes": [ANSWER, ...],
         "suites": [[TESTS, ...], ...]}    # suites[i] written against codes[i]
                                           # or [TESTS, ...]: every suite against every code

    answers ``{"task_id", "coder_rewards": [per code], "gt_pass_rates": [per code],
    "tester_rewards": [[per suite]], "pairs": [[INFO]]}`` where ``INFO`` is the env's end-of-episode
    ``info`` for that (code, suite): ``rewards``, ``reasons``, ``tests``, ``verdicts``,
    ``rejected``, ``mistake_book_verdicts``, ``gt_pass_rate``, ``tester_reward_parts``. A code with
    no suite gets ``"pairs": [[]]`` and its info under ``"code_infos"``.
``POST /v1/rows``
    verl's rows (:mod:`agents.integrations.reward_client` is its client; up to
    :data:`MAX_ROWS`), each the coder's answer or, with ``extra_info.role == "tester"``, the
    tester's suite against ``extra_info.code``::

        {"rows": [{"ground_truth": "bank/clamp" | {JSONL record} | "<its JSON>",
                   "extra_info": {"role": ..., "code": ..., "problem": ...},   # optional
                   "response": TEXT}, ...]}

    answers ``{"scores": [SCORES, ...]}``, one per row: the dict
    :func:`agents.integrations.verl.compute_score` returns locally (``score``, the trained
    role's reward, and the rest of :data:`agents.integrations.verl.SCORE_KEYS`), built by the
    same :func:`~agents.integrations.verl.row_for` and
    :func:`~agents.integrations.verl.scores_for`.
``GET /health``
    ``{"status": "ok" | "draining", ...counters}``.

Errors are JSON, ``{"error": {"message": ..., "field": ..., "type": ...}}``: 400 for a malformed
request (``field`` names what is wrong), 404/405 for an unknown route or method, 411 without a
``Content-Length``, 413 for a body over ``max_body_bytes``, 503 when the queue is full or the
service is shutting down, 500 when scoring itself failed.

Shutdown (:func:`serve` on SIGTERM or SIGINT): stop accepting connections, score every queued
request and answer it, then close the referee (sandbox) and the mistake book.
"""

from __future__ import annotations

import contextlib
import json
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents.integrations import openrlhf, verl
from agents.integrations.core import (
    CoderRow,
    GridResult,
    GridRow,
    PairResult,
    RequestError,
    RewardCore,
    Row,
    TesterRow,
)
from agents.integrations.options import DEFAULT_MAX_BODY_BYTES
from codea1_env.problems.jsontext import decode_json

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "MAX_CODES",
    "MAX_ROWS",
    "MAX_SUITES",
    "RewardServer",
    "RewardService",
    "ServiceUnavailable",
    "judge_payload",
    "make_server",
    "parse_judge",
    "parse_rows",
    "rows_payload",
    "serve",
]

MAX_CODES = 256
"""Most codes one ``/v1/judge`` request may carry."""
MAX_SUITES = 256
"""Most suites per code in one ``/v1/judge`` request."""
MAX_ROWS = 4096
"""Most rows one ``/v1/rows`` request may carry."""

_STOP = object()


class ServiceUnavailable(RuntimeError):
    """The queue is full or the service is shutting down (HTTP 503)."""


@dataclass
class _Work:
    rows: list[Row]
    future: Future[list[Any]] = field(default_factory=Future)


class RewardService:
    """Batches scoring work from many threads into single referee calls.

    Args:
        core: The scoring core (referee, mistake book, problems, frozen opponent).
        max_batch: Most rows scored in one call (a larger request is scored alone).
        batch_window_s: How long the collector waits for more work after the first request.
        max_queue: Most requests waiting; :meth:`submit` raises :class:`ServiceUnavailable`
            beyond it.
        owns_core: Whether :meth:`close` closes ``core``.

    """

    def __init__(
        self,
        core: RewardCore,
        *,
        max_batch: int = 256,
        batch_window_s: float = 0.005,
        max_queue: int = 1024,
        owns_core: bool = True,
    ) -> None:
        if max_batch < 1 or max_queue < 1 or batch_window_s < 0:
            raise ValueError("max_batch and max_queue must be >= 1, batch_window_s >= 0")
        self.core = core
        self.max_batch = max_batch
        self.batch_window_s = batch_window_s
        self.owns_core = owns_core
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queue)
        self._lock = threading.Lock()
        self._closing = False
        self._closed = False
        self._last_book_size: int | None = None
        self.stats: dict[str, float] = {
            "accepted": 0,
            "answered": 0,
            "rows": 0,
            "batches": 0,
            "largest_batch": 0,
            "rejected_busy": 0,
            "failed": 0,
            "scoring_seconds": 0.0,
        }
        self._thread = threading.Thread(target=self._collect, name="codea1-reward-collector")
        self._thread.daemon = True
        self._thread.start()

    @property
    def draining(self) -> bool:
        """True once :meth:`close` began (new work is refused)."""
        return self._closing

    def submit(self, rows: list[Row]) -> Future[list[Any]]:
        """Queue rows; the future resolves to one result per row.

        Raises:
            ServiceUnavailable: the queue is full or the service is closing.

        """
        work = _Work(list(rows))
        with self._lock:
            if self._closing:
                raise ServiceUnavailable("the reward service is shutting down")
            try:
                self._queue.put_nowait(work)
            except queue.Full:
                self.stats["rejected_busy"] += 1
                raise ServiceUnavailable(
                    f"the queue is full ({self._queue.maxsize} requests waiting); retry later"
                ) from None
            self.stats["accepted"] += 1
        return work.future

    def score(self, rows: list[Row], timeout: float | None = None) -> list[Any]:
        """Submit and wait (see :meth:`submit`)."""
        return self.submit(rows).result(timeout)

    def _collect(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is _STOP:
                break
            batch = [first]
            size = len(first.rows)
            deadline = time.monotonic() + self.batch_window_s
            while size < self.max_batch:
                remaining = deadline - time.monotonic()
                try:
                    item = (
                        self._queue.get(timeout=remaining)
                        if remaining > 0
                        else self._queue.get_nowait()
                    )
                except queue.Empty:
                    break
                if item is _STOP:
                    stop = True
                    break
                batch.append(item)
                size += len(item.rows)
            self._run(batch)

    def _run(self, batch: list[_Work]) -> None:
        rows = [row for work in batch for row in work.rows]
        started = time.perf_counter()
        try:
            results = self.core.score(rows)
        except BaseException as exc:  # answered as 500; the collector keeps going
            with self._lock:
                self.stats["failed"] += len(batch)
            for work in batch:
                work.future.set_exception(exc)
            return
        elapsed = time.perf_counter() - started
        with self._lock:
            self.stats["batches"] += 1
            self.stats["rows"] += len(rows)
            self.stats["largest_batch"] = max(self.stats["largest_batch"], len(rows))
            self.stats["scoring_seconds"] += elapsed
            self.stats["answered"] += len(batch)
        at = 0
        for work in batch:
            work.future.set_result(results[at : at + len(work.rows)])
            at += len(work.rows)

    def drain(self, timeout: float | None = None) -> None:
        """Refuse new work, score everything queued and stop the collector; the core stays open.

        :meth:`submit` raises :class:`ServiceUnavailable` from then on. Idempotent.
        """
        with self._lock:
            if self._closing:
                first = False
            else:
                self._closing = first = True
        if first:
            self._queue.put(_STOP)
        self._thread.join(timeout)

    def close(self, timeout: float | None = None) -> None:
        """:meth:`drain`, then close the core (when owned). Idempotent.

        :meth:`health` still gives the mistake book's last size afterwards.
        """
        self.drain(timeout)
        with self._lock:
            if self._closed:
                return
            self._last_book_size = self._book_size()
            self._closed = True
        if self.owns_core:
            self.core.close()

    def health(self) -> dict[str, Any]:
        """Counters and settings for ``GET /health``."""
        with self._lock:
            stats = dict(self.stats)
        return {
            "status": "draining" if self._closing else "ok",
            "queued": self._queue.qsize(),
            "max_queue": self._queue.maxsize,
            "max_batch": self.max_batch,
            "batch_window_s": self.batch_window_s,
            "opponent": self.core.opponent,
            "mode": self.core.referee.reward_config.mode,
            "source": self.core.source_name,
            "mistake_book_size": self._book_size(),
            **stats,
        }

    def _book_size(self) -> int | None:
        if self._closed:
            return self._last_book_size
        try:
            return self.core.mistake_book.size()
        except Exception:  # closed, or a busy SQLite file: the health answer goes on without it
            return None


# ---------------------------------------------------------------------- /v1/judge
def parse_judge(core: RewardCore, body: Any) -> GridRow:
    """Validate a ``/v1/judge`` body into a :class:`GridRow`.

    Raises:
        RequestError: naming the wrong field.

    """
    if not isinstance(body, Mapping):
        raise RequestError(None, "the body must be a JSON object with problem, codes, suites")
    unknown = sorted(set(body) - {"problem", "codes", "suites"})
    if unknown:
        raise RequestError(unknown[0], "unknown field; known: problem, codes, suites")
    if "problem" not in body:
        raise RequestError("problem", "missing (a problem id or a JSONL-schema record)")
    problem = core.problem(body["problem"], "problem")
    codes = body.get("codes")
    if not isinstance(codes, list) or not codes:
        # Its items are moves: one that is not text scores 0 (``not_text``), it is not a 400.
        raise RequestError("codes", "expected a non-empty list of coder answers")
    if len(codes) > MAX_CODES:
        raise RequestError("codes", f"{len(codes)} codes; at most {MAX_CODES}")
    suites = body.get("suites", [])
    if not isinstance(suites, list):
        raise RequestError("suites", "expected a list of lists of strings, or a list of strings")
    if suites and all(isinstance(s, str) for s in suites):
        per_code = [list(suites) for _ in codes]
    elif not suites:
        per_code = [[] for _ in codes]
    else:
        if len(suites) != len(codes):
            raise RequestError(
                "suites", f"{len(suites)} suite lists for {len(codes)} codes (suites[i] per code)"
            )
        per_code = []
        for i, row in enumerate(suites):
            if not isinstance(row, list):
                raise RequestError(f"suites[{i}]", "expected a list of strings")
            for j, text in enumerate(row):
                if not isinstance(text, str):
                    raise RequestError(f"suites[{i}][{j}]", "expected a string")
            per_code.append(list(row))
    for i, row in enumerate(per_code):
        if len(row) > MAX_SUITES:
            raise RequestError(f"suites[{i}]", f"{len(row)} suites; at most {MAX_SUITES}")
    return GridRow(problem, tuple(codes), tuple(tuple(row) for row in per_code))


def judge_payload(row: GridRow, result: GridResult) -> dict[str, Any]:
    """The ``/v1/judge`` answer for a scored grid row."""
    return {
        "task_id": row.problem.task_id,
        "coder_rewards": list(result.coder_rewards),
        "gt_pass_rates": list(result.gt_pass_rates),
        "tester_rewards": [[pair.tester for pair in pairs] for pairs in result.pairs],
        "pairs": [[pair.info for pair in pairs] for pairs in result.pairs],
        "code_infos": list(result.code_infos),
    }


# ---------------------------------------------------------------------- /v1/rows
_ROW_FIELDS = {"ground_truth", "extra_info", "response", "data_source"}


def parse_rows(core: RewardCore, body: Any) -> list[CoderRow | TesterRow]:
    """Validate a ``/v1/rows`` body into rows, with :func:`agents.integrations.verl.row_for`.

    ``data_source`` may be sent and is ignored (as the local path ignores it). ``details``
    (a bool, optional) asks :func:`rows_payload` for each row's details.

    Raises:
        RequestError: naming the wrong field (``rows[3].response``, ``rows[0].ground_truth``).

    """
    if not isinstance(body, Mapping) or "rows" not in body or set(body) - {"rows", "details"}:
        raise RequestError(
            None, 'the body must be a JSON object {"rows": [...]} (and optionally "details")'
        )
    if not isinstance(body.get("details", False), bool):
        raise RequestError("details", "expected true or false")
    items = body["rows"]
    if not isinstance(items, list):
        raise RequestError("rows", f"expected a list, got {type(items).__name__}")
    if len(items) > MAX_ROWS:
        raise RequestError("rows", f"{len(items)} rows; at most {MAX_ROWS} per request")
    rows: list[CoderRow | TesterRow] = []
    for i, item in enumerate(items):
        where = f"rows[{i}]"
        if not isinstance(item, Mapping):
            raise RequestError(where, "expected an object with ground_truth, extra_info, response")
        unknown = sorted(set(item) - _ROW_FIELDS)
        if unknown:
            raise RequestError(
                f"{where}.{unknown[0]}", f"unknown field; known: {sorted(_ROW_FIELDS)}"
            )
        if "response" not in item:
            raise RequestError(f"{where}.response", "missing (the policy's response)")
        # Any value is a move: one that is not text scores 0 with the reason ``not_text``, as
        # compute_score does in-process (a 400 would fail every row of the request).
        response = item["response"]
        info = item.get("extra_info")
        if info is not None and not isinstance(info, Mapping):
            raise RequestError(f"{where}.extra_info", "expected an object or null")
        rows.append(
            verl.row_for(
                core,
                item.get("ground_truth"),
                info,
                response,
                f"{where}.ground_truth",
                f"{where}.extra_info",
            )
        )
    return rows


def rows_payload(
    rows: Sequence[CoderRow | TesterRow], results: Sequence[Any], details: bool = False
) -> dict[str, Any]:
    """The ``/v1/rows`` answer: :func:`agents.integrations.verl.scores_for` of every row.

    With ``details``, also ``details``: per row the pair's ``info`` and the ``tests_text``
    that was scored (what SkyRL's envs put in their step metadata).
    """
    scores = []
    for row, result in zip(rows, results, strict=True):
        if not isinstance(result, PairResult):
            raise TypeError("verl rows score as pairs")
        scores.append(verl.scores_for(result, row))
    if not details:
        return {"scores": scores}
    found = [{"info": result.info, "tests_text": result.tests_text} for result in results]
    return {"scores": scores, "details": found}


# ---------------------------------------------------------------------- HTTP
_POST_ROUTES = ("", "/get_reward", "/v1/judge", "/v1/rows")


class _Handler(BaseHTTPRequestHandler):
    server_version = "codea1-reward/0.1"
    timeout = 60

    @property
    def app(self) -> RewardServer:
        return self.server  # type: ignore[return-value]

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        if self.path.split("?")[0].rstrip("/") in ("/health", "/v1/health"):
            self._reply(200, self.app.service.health())
        elif self.path.split("?")[0].rstrip("/") in _POST_ROUTES:
            self._error(405, "use POST", None, "method_not_allowed")
        else:
            self._error(404, f"no route {self.path}", None, "not_found")

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        route = self.path.split("?")[0].rstrip("/")
        if route not in _POST_ROUTES:
            self._error(404, f"no route {self.path}", None, "not_found")
            return
        body = self._body()
        if body is None:
            return
        core = self.app.service.core
        try:
            if route == "/v1/judge":
                grid = parse_judge(core, body)
                result = self._wait([grid])[0]
                self._reply(200, judge_payload(grid, result))
            elif route == "/v1/rows":
                verl_rows = parse_rows(core, body)
                results = self._wait(list(verl_rows)) if verl_rows else []
                self._reply(200, rows_payload(verl_rows, results, body.get("details") is True))
            else:
                rows, found = openrlhf.parse_request(core, body)
                results = self._wait(rows) if rows else []
                self._reply(200, openrlhf.response_payload(rows, results, found))
        except RequestError as exc:
            self._error(exc.status, exc.message, exc.field, "invalid_request")
        except ServiceUnavailable as exc:
            self._error(503, str(exc), None, "unavailable")
        except FutureTimeout:
            self._error(504, "scoring took too long", None, "timeout")
        except Exception as exc:  # the scoring itself failed: say so, keep serving
            self._error(500, f"{type(exc).__name__}: {exc}", None, "internal")

    def _wait(self, rows: list[Row]) -> list[Any]:
        return self.app.service.submit(rows).result(self.app.request_timeout_s)

    def _body(self) -> Any:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self._error(411, "send a Content-Length (chunked bodies are not read)", None, "length")
            return None
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            self._error(411, "Content-Length is required", None, "length")
            return None
        try:
            length = int(length_text)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True  # the body's end is unknown: nothing more can be read
            self._error(400, "Content-Length is not a non-negative number", None, "invalid_request")
            return None
        limit = self.app.max_body_bytes
        if length > limit:
            self.close_connection = True
            self._error(413, f"body of {length} bytes; at most {limit}", None, "too_large")
            return None
        raw = self.rfile.read(length)
        try:
            return decode_json(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self._error(400, f"the body is not valid JSON: {exc}", None, "invalid_json")
            return None

    def _error(self, status: int, message: str, field: str | None, kind: str) -> None:
        self._reply(status, {"error": {"message": message, "field": field, "type": kind}})

    def _reply(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 503:
                self.send_header("Retry-After", "1")
            if self.close_connection:  # the client learns not to send on this connection
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        if self.app.verbose:
            sys.stderr.write(f"{self.address_string()} - {format % args}\n")


class RewardServer(ThreadingHTTPServer):
    """The HTTP server of a :class:`RewardService` (one thread per connection).

    Attributes:
        service: The batching service.
        max_body_bytes: Largest body accepted.
        request_timeout_s: How long a handler waits for its result (504 after).
        verbose: Log every request to stderr.

    """

    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(
        self,
        service: RewardService,
        address: tuple[str, int],
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        request_timeout_s: float = 600.0,
        verbose: bool = False,
    ) -> None:
        self.service = service
        self.max_body_bytes = max_body_bytes
        self.request_timeout_s = request_timeout_s
        self.verbose = verbose
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        """``http://HOST:PORT``."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        """Graceful stop: queued work answered, then no new connections, then everything closed.

        While the service drains, the server still accepts connections and answers new requests
        503 with ``Retry-After`` (which clients retry), rather than leaving them in the listen
        backlog to be reset when the socket closes (which a client cannot tell from a failure
        after scoring, so must not retry).
        """
        self.service.drain()
        self.shutdown()
        self.server_close()
        self.service.close()


def make_server(
    service: RewardService,
    host: str = "127.0.0.1",
    port: int = 0,
    **kwargs: Any,
) -> RewardServer:
    """Bind a :class:`RewardServer` (port 0: a free port; see ``server.url``)."""
    return RewardServer(service, (host, port), **kwargs)


def serve(
    server: RewardServer,
    *,
    ready: Callable[[RewardServer], None] | None = None,
    signals: Sequence[int] = (signal.SIGTERM, signal.SIGINT),
) -> None:
    """Serve until SIGTERM/SIGINT, then stop gracefully (see :meth:`RewardServer.stop`).

    Must run in the main thread (signal handlers).
    """
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in signals}
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="codea1-reward-http"
    )
    thread.start()
    try:
        if ready is not None:
            ready(server)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
        thread.join()
        for sig, handler in previous.items():
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(sig, handler)
