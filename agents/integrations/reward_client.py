"""A client of ``codea1 serve-reward``'s ``POST /v1/rows``: verl rows scored by a running service.

Standard library only (:mod:`urllib.request`). verl's reward function
(:func:`agents.integrations.verl.compute_score` and its async and batch forms) and the ``codea1``
reward manager (:mod:`agents.integrations.verl_manager`) send their rows here when
``reward_kwargs.reward_url`` is set, so that reward workers on any number of Ray nodes share the
service's one referee, one frozen opponent and one mistake book. The wire format::

    POST http://HOST:PORT/v1/rows
    {"rows": [{"ground_truth": ID_OR_RECORD,     # reward_model.ground_truth
               "extra_info": {"role": "coder" | "tester", "code": ANSWER, "problem": ...},
               "response": TEXT}, ...],
     "details": true}                              # optional
    -> {"scores": [{"score": ..., "coder_reward": ..., ...}, ...],   # one per row, in order
        "details": [{"info": {...}, "tests_text": ...}, ...]}       # with "details": true

The service turns each row into a :class:`~agents.integrations.core.CoderRow` or
:class:`~agents.integrations.core.TesterRow` with :func:`agents.integrations.verl.row_for` and
answers :func:`agents.integrations.verl.scores_for` of it: the very dict the local path returns.

Errors raise :class:`RewardServiceError` naming the URL: a verl reward never silently becomes 0.
Only what the service certainly did not score is retried (a refused connection, a 503 for a full
queue or a shutdown), so no row updates the mistake book twice.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "REMOTE_KWARGS",
    "ROWS_PATH",
    "ROW_INFO_KEYS",
    "RemoteScoring",
    "RewardServiceError",
    "apost_rows",
    "post_rows",
    "post_rows_detailed",
    "remote_scoring",
    "rows_url",
    "wire_response",
    "wire_row",
]

ROWS_PATH = "/v1/rows"
"""The service's route for verl rows."""

ROW_INFO_KEYS = ("role", "code", "problem")
"""The ``extra_info`` keys scoring reads (:func:`agents.integrations.verl.row_for`); the others
(verl's ``num_turns``, ``rollout_reward_scores``, ...) are not sent."""

MAX_ACTION_CHARS = 65_536
"""The longest move that scores: the env's :data:`codea1_env.game.duel.MAX_ACTION_CHARS`, the
service's limit (kept here so that this module needs the standard library only; a test checks
that the two agree)."""

REMOTE_KWARGS = ("reward_url", "reward_timeout_s", "reward_retries")
"""The ``reward_kwargs`` of the remote path (see :class:`RemoteScoring`)."""


class RewardServiceError(RuntimeError):
    """The reward service could not be reached, or answered an error.

    Attributes:
        url: The URL that was posted to.
        status: The HTTP status (None when no answer came).
        field: The request field the service named (400), or None.

    """

    def __init__(
        self, url: str, message: str, status: int | None = None, field: str | None = None
    ) -> None:
        self.url = url
        self.status = status
        self.field = field
        where = f"{field}: " if field else ""
        code = f" answered {status}" if status is not None else ""
        super().__init__(f"codea1 reward service {url}{code}: {where}{message}")


@dataclass(frozen=True)
class RemoteScoring:
    """Where and how to post rows.

    Attributes:
        url: The service's root (``http://HOST:8011``) or its ``/v1/rows`` URL.
        timeout_s: Socket timeout of one request (the service answers 504 after its own
            ``request_timeout_s``, 600 s).
        retries: Retries after a refused connection or a 503 (waiting 0.5 s, 1 s, 2 s, ... or
            the service's ``Retry-After``).

    """

    url: str
    timeout_s: float = 900.0
    retries: int = 4


def remote_scoring(kwargs: Mapping[str, Any], scoring_keys: Sequence[str]) -> RemoteScoring | None:
    """The remote options of ``reward_kwargs``, or None without ``reward_url``.

    Args:
        kwargs: ``reward_kwargs`` (``reward_url``, ``reward_timeout_s``, ``reward_retries``).
        scoring_keys: The local scoring options; with ``reward_url`` they are the service's
            flags, so giving one here is an error rather than silently ignored.

    Raises:
        ValueError: ``reward_url`` together with local scoring options, or bad values.

    """
    url = kwargs.get("reward_url")
    if not url:
        return None
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"reward_url must be an http(s) URL, got {url!r}")
    local = sorted(key for key in scoring_keys if kwargs.get(key) is not None)
    if local:
        raise ValueError(
            f"reward_url={url}: the service chooses the scoring; {', '.join(local)} "
            f"{'belongs' if len(local) == 1 else 'belong'} on `codea1 serve-reward`'s command "
            "line, not in reward_kwargs"
        )
    timeout = float(kwargs.get("reward_timeout_s") or RemoteScoring.timeout_s)
    retries = kwargs.get("reward_retries")
    retries = RemoteScoring.retries if retries is None else int(retries)
    if timeout <= 0 or retries < 0:
        raise ValueError("need reward_timeout_s > 0 and reward_retries >= 0")
    return RemoteScoring(url, timeout, retries)


def rows_url(url: str) -> str:
    """``http://HOST:PORT`` -> ``http://HOST:PORT/v1/rows`` (a ``/v1/rows`` URL is kept)."""
    root = url.rstrip("/")
    return root if root.endswith(ROWS_PATH) else root + ROWS_PATH


def _plain(value: Any) -> Any:
    """JSON for what verl's parquet rows may hold: numpy arrays and scalars."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON data")


def wire_response(response: Any) -> str | None:
    """A policy's response as JSON data that the service scores as the local path would.

    Text is sent as it is, cut one character past :data:`MAX_ACTION_CHARS` (still ``too_long``
    there, without sending megabytes); ``bytes`` are decoded as the env decodes them; anything
    else, and bytes that are not UTF-8, is sent as ``null``, which scores 0 with the reason
    ``not_text`` (the local path says ``binary`` for such bytes; the reward is the same).
    Never raises.
    """
    if isinstance(response, (bytes, bytearray)):
        try:
            response = bytes(response).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not isinstance(response, str):
        return None
    return str(response[: MAX_ACTION_CHARS + 1])


def wire_row(
    ground_truth: Any, extra_info: Mapping[str, Any] | None, response: Any
) -> dict[str, Any]:
    """One verl sample as the service reads it (only the :data:`ROW_INFO_KEYS` of ``extra_info``).

    Args:
        ground_truth: ``reward_model.ground_truth`` (a problem id or record).
        extra_info: The row's ``extra_info`` (may be None).
        response: The policy's response (see :func:`wire_response`).

    """
    given = extra_info or {}
    info = {key: given[key] for key in ROW_INFO_KEYS if given.get(key) is not None}
    return {"ground_truth": ground_truth, "extra_info": info, "response": wire_response(response)}


def _error_of(url: str, exc: urllib.error.HTTPError) -> RewardServiceError:
    try:
        error = json.loads(exc.read()).get("error", {})
        message, field = str(error.get("message", exc.reason)), error.get("field")
    except (ValueError, AttributeError, OSError):
        message, field = str(exc.reason), None
    return RewardServiceError(url, message, exc.code, field)


def _refused(exc: urllib.error.URLError) -> bool:
    return isinstance(exc.reason, ConnectionRefusedError)


_MAX_WAIT_S = 30.0


def _retry_after(exc: urllib.error.HTTPError) -> float:
    """The seconds of a 503's ``Retry-After`` (0 when absent or not a number)."""
    try:
        return max(0.0, float(exc.headers.get("Retry-After") or 0))
    except (TypeError, ValueError):
        return 0.0


def post_rows(
    scoring: RemoteScoring | str,
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[str] | None = None,
) -> list[dict[str, float]]:
    """Score :func:`wire_row` rows in ONE request; one score dict per row, in order.

    Args:
        scoring: The service (a :class:`RemoteScoring`, or its URL with the default timeout).
        rows: The rows.
        keys: The keys every score dict must have, exactly (returned in this order).

    Returns:
        The service's ``scores`` (:data:`agents.integrations.verl.SCORE_KEYS` as floats).

    Raises:
        RewardServiceError: unreachable after the retries, an error answer (400 naming the
            field, 413, 500, 503 after the retries, 504), or an answer that is not one score
            dict per row.

    """
    return _post_rows(scoring, rows, keys, details=False)[0]


def post_rows_detailed(
    scoring: RemoteScoring | str,
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[str] | None = None,
) -> tuple[list[dict[str, float]], list[dict[str, Any]]]:
    """:func:`post_rows`, with each row's details: ``(scores, details)``.

    A detail is ``{"info": ..., "tests_text": ...}``: the pair's
    :attr:`~agents.integrations.core.PairResult.info` (rewards, reasons, verdicts, ...) and
    the suite that was scored, as the local path has them.

    Raises:
        RewardServiceError: as :func:`post_rows`, or an answer without one detail per row.

    """
    return _post_rows(scoring, rows, keys, details=True)


def _post_rows(
    scoring: RemoteScoring | str,
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[str] | None,
    *,
    details: bool,
) -> tuple[list[dict[str, float]], list[dict[str, Any]]]:
    if isinstance(scoring, str):
        scoring = RemoteScoring(scoring)
    if not rows:
        return [], []
    url = rows_url(scoring.url)
    body: dict[str, Any] = {"rows": list(rows)}
    if details:
        body["details"] = True
    data = json.dumps(body, default=_plain).encode("utf-8")
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    attempt = 0
    while True:
        wait = 0.5 * 2**attempt
        try:
            with urllib.request.urlopen(request, timeout=scoring.timeout_s) as reply:
                answer = json.loads(reply.read())
            break
        except urllib.error.HTTPError as exc:
            error = _error_of(url, exc)
            if exc.code != 503 or attempt >= scoring.retries:
                raise error from None
            wait = max(wait, _retry_after(exc))
        except urllib.error.URLError as exc:
            if not _refused(exc) or attempt >= scoring.retries:
                tries = f" after {attempt + 1} attempts" if attempt else ""
                raise RewardServiceError(url, f"unreachable{tries} ({exc.reason})") from None
        except (OSError, ValueError) as exc:  # a timeout, a reset, a body that is not JSON
            raise RewardServiceError(url, f"{type(exc).__name__}: {exc}") from None
        attempt += 1
        time.sleep(min(wait, _MAX_WAIT_S))
    scores = answer.get("scores") if isinstance(answer, Mapping) else None
    if not isinstance(scores, list) or len(scores) != len(rows):
        raise RewardServiceError(url, f"expected {len(rows)} scores, got {str(answer)[:200]}")
    try:
        out = [{str(k): float(v) for k, v in score.items()} for score in scores]
    except (AttributeError, TypeError, ValueError):
        raise RewardServiceError(url, f"scores are not dicts of numbers: {scores[:1]}") from None
    if keys is not None:
        if any(set(score) != set(keys) for score in out):
            raise RewardServiceError(url, f"expected score keys {list(keys)}, got {list(out[0])}")
        out = [{key: score[key] for key in keys} for score in out]
    if not details:
        return out, []
    found = answer.get("details")
    if (
        not isinstance(found, list)
        or len(found) != len(rows)
        or not all(isinstance(d, Mapping) and isinstance(d.get("info"), Mapping) for d in found)
    ):
        raise RewardServiceError(url, f"expected {len(rows)} details, got {str(found)[:200]}")
    return out, [dict(d) for d in found]


async def apost_rows(
    scoring: RemoteScoring | str,
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[str] | None = None,
) -> list[dict[str, float]]:
    """:func:`post_rows` in a thread, for an event loop (verl's reward loop)."""
    return await asyncio.to_thread(post_rows, scoring, rows, keys)
