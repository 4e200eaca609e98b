"""OpenRLHF's remote reward protocol, scored by codea1's referee.

OpenRLHF 0.11.2 (``--reward.remote_url URL``) posts, for every rollout, from
``openrlhf.utils.agent.SingleTurnAgentExecutor._fetch_rewards_via_http``::

    POST URL  {"query": [QUERY], "prompts": [PROMPT], "labels": [LABEL]}

where ``QUERY`` is the prompt and the generated response decoded together
(``hf_tokenizer.decode(prompt_ids + response_ids, skip_special_tokens=False)``), ``PROMPT`` the
prompt text (after the chat template) and ``LABEL`` the dataset's ``--data.label_key`` column.
It reads ``"rewards"`` (the training reward), ``"scores"`` (dynamic filtering; ``rewards`` when
absent) and ``"extra_logs"`` from the JSON answer and turns every ``extra_logs`` value into a
tensor, so the answer here is::

    {"rewards": [float, ...], "scores": [float, ...],
     "extra_logs": {"codea1_gt_pass_rate": [float, ...], ...},   # numbers only, one per query
     "reasons": [{"coder": str, "tester": str}, ...]}           # ignored by OpenRLHF

**Labels** (decided here; one per query). A label is either

* a problem id of the service's source (``"bank/clamp"``): the **coder** role; the service's
  frozen opponent writes the tests;
* a problem record of the JSONL schema (a JSON object with ``task_id``, ``prompt``,
  ``entry_point``, ``canonical_solution``, ``tests``), as a dict or its JSON text: the coder role
  on that problem, whatever the service's source;
* a JSON object ``{"problem": ID_OR_RECORD, "role": "coder" | "tester", "code": ANSWER}``:
  ``role="tester"`` scores the response as the tester's suite against the frozen coder's
  ``code`` (a coder's answer; its python block is extracted).

**The response** is the query with the prompt removed (:func:`strip_prompt`): the coder prompts
contain a ```` ```python ```` block of their own, which must not be read as the answer.

:func:`reward_func` is the same scoring for OpenRLHF's in-process mode
(``--reward.remote_url /path/to/agents/integrations/openrlhf.py``), configured by the
``CODEA1_*`` environment variables of :func:`core_from_environment`.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from agents.integrations.core import (
    CoderRow,
    PairResult,
    RequestError,
    RewardCore,
    Row,
    TesterRow,
)
from codea1_env.problems.jsontext import decode_json

__all__ = [
    "EXTRA_LOG_KEYS",
    "MAX_QUERIES",
    "core_from_environment",
    "parse_label",
    "parse_request",
    "response_payload",
    "reward_func",
    "strip_end_tokens",
    "strip_prompt",
]

MAX_QUERIES = 4096
"""Most queries one request may carry."""

EXTRA_LOG_KEYS = (
    "codea1_coder_reward",
    "codea1_tester_reward",
    "codea1_gt_pass_rate",
    "codea1_n_tests",
    "codea1_n_failed",
    "codea1_scored",
    "codea1_prompt_found",
)
"""The ``extra_logs`` keys, every one present for every query (OpenRLHF logs their means)."""

_ANCHOR = 256
_END_TOKENS = re.compile(r"(?:\s*(?:<\|[\w.-]+\|>|</s>|<eos>|<end_of_turn>|<eot>))+\s*\Z")
"""Special tokens a decode with ``skip_special_tokens=False`` leaves at the end of a response
(``<|im_end|>``, ``<|endoftext|>``, ``</s>``, ...): ```` ```<|im_end|> ```` would hide the
closing fence."""


def strip_end_tokens(text: str) -> str:
    """Remove the end-of-turn special tokens (and the whitespace around them) ending ``text``."""
    return _END_TOKENS.sub("", text)


def strip_prompt(query: str, prompt: str) -> tuple[str, bool]:
    """The response part of an OpenRLHF query (prompt + response decoded together).

    In order: the query starts with the prompt; the prompt occurs in the query (special tokens
    before it); the prompt's last 256 characters occur in it (OpenRLHF cut the prompt from the
    left to fit ``max_len``); otherwise the common prefix is removed. Special tokens ending the
    response (:func:`strip_end_tokens`) are removed too.

    Returns:
        ``(response, found)``: ``found`` is False when only the common prefix could be removed.

    """
    response, found = _after_prompt(query, prompt)
    return strip_end_tokens(response), found


def _after_prompt(query: str, prompt: str) -> tuple[str, bool]:
    if not prompt:
        return query, False
    if query.startswith(prompt):
        return query[len(prompt) :], True
    at = query.find(prompt)
    if at >= 0:
        return query[at + len(prompt) :], True
    tail = prompt[-_ANCHOR:]
    at = query.find(tail)
    if at >= 0:
        return query[at + len(tail) :], True
    common = os.path.commonprefix([query, prompt])
    return query[len(common) :], False


def parse_label(core: RewardCore, label: Any, where: str = "label") -> tuple[Any, str, str]:
    """Read one label: ``(problem, role, frozen code)``; see the module docstring.

    Raises:
        RequestError: an unknown problem, a malformed record, a bad role or a missing code.

    """
    value = label
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = decode_json(value)
        except json.JSONDecodeError as exc:
            raise RequestError(where, f"not valid JSON: {exc.msg}") from None
    if isinstance(value, Mapping) and "problem" in value:
        unknown = sorted(set(value) - {"problem", "role", "code"})
        if unknown:
            raise RequestError(where, f"unknown key(s) {unknown}; known: problem, role, code")
        role = value.get("role", "coder")
        if role not in ("coder", "tester"):
            raise RequestError(f"{where}.role", f"expected 'coder' or 'tester', got {role!r}")
        code = value.get("code", "")
        if not isinstance(code, str):
            raise RequestError(f"{where}.code", "expected a string (the frozen coder's answer)")
        if role == "tester" and not code.strip():
            raise RequestError(f"{where}.code", "the tester role needs the frozen coder's code")
        return core.problem(value["problem"], f"{where}.problem"), role, code
    if isinstance(value, (str, Mapping)):
        return core.problem(value, where), "coder", ""
    raise RequestError(where, f"expected a problem id or a JSON object, got {type(value).__name__}")


def _string_list(body: Mapping[str, Any], key: str, required: bool) -> list[str] | None:
    values = body.get(key)
    if values is None:
        if required:
            raise RequestError(key, "missing (a list of strings)")
        return None
    if not isinstance(values, list):
        raise RequestError(key, f"expected a list of strings, got {type(values).__name__}")
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise RequestError(f"{key}[{i}]", f"expected a string, got {type(value).__name__}")
    return values


def parse_request(core: RewardCore, body: Any) -> tuple[list[Row], list[bool]]:
    """Turn an OpenRLHF request body into rows.

    Returns:
        ``(rows, prompt_found)``, one each per query.

    Raises:
        RequestError: naming the wrong field (``"query"``, ``"labels[2]"``, ...).

    """
    if not isinstance(body, Mapping):
        raise RequestError(None, "the body must be a JSON object with query, prompts, labels")
    queries = _string_list(body, "query", required=True)
    assert queries is not None
    if len(queries) > MAX_QUERIES:
        raise RequestError("query", f"{len(queries)} queries; at most {MAX_QUERIES} per request")
    prompts = _string_list(body, "prompts", required=False)
    if prompts is not None and len(prompts) != len(queries):
        raise RequestError("prompts", f"{len(prompts)} prompts for {len(queries)} queries")
    labels = body.get("labels")
    if not isinstance(labels, list):
        raise RequestError("labels", "missing or not a list (one problem label per query)")
    if len(labels) != len(queries):
        raise RequestError("labels", f"{len(labels)} labels for {len(queries)} queries")
    rows: list[Row] = []
    found: list[bool] = []
    for i, (query, label) in enumerate(zip(queries, labels)):
        problem, role, code = parse_label(core, label, f"labels[{i}]")
        response, ok = (
            strip_prompt(query, prompts[i])
            if prompts is not None
            else (strip_end_tokens(query), False)
        )
        found.append(ok)
        row: Row = (
            TesterRow(problem, code, response) if role == "tester" else CoderRow(problem, response)
        )
        rows.append(row)
    return rows, found


def response_payload(
    rows: Sequence[Row], results: Sequence[Any], prompt_found: Sequence[bool]
) -> dict[str, Any]:
    """The OpenRLHF answer for scored rows (see the module docstring)."""
    rewards: list[float] = []
    logs: dict[str, list[float]] = {key: [] for key in EXTRA_LOG_KEYS}
    reasons: list[dict[str, str]] = []
    for row, result, found in zip(rows, results, prompt_found, strict=True):
        if not isinstance(result, PairResult):
            raise TypeError("OpenRLHF rows score as pairs")
        metrics = result.metrics("tester" if isinstance(row, TesterRow) else "coder")
        rewards.append(metrics.pop("score"))
        for name, value in metrics.items():
            logs[f"codea1_{name}"].append(value)
        logs["codea1_prompt_found"].append(1.0 if found else 0.0)
        reasons.append(dict(result.info["reasons"]))
    return {"rewards": rewards, "scores": list(rewards), "extra_logs": logs, "reasons": reasons}


def score_request(core: RewardCore, body: Any) -> dict[str, Any]:
    """Parse, score and answer one OpenRLHF request in this process (no batching service)."""
    rows, found = parse_request(core, body)
    return response_payload(rows, core.score(rows), found)


_CORE: RewardCore | None = None
_CORE_LOCK = threading.Lock()


def core_from_environment() -> RewardCore:
    """The process's core for :func:`reward_func`, built once from environment variables.

    ``CODEA1_SOURCE`` (default ``bank``), ``CODEA1_OPPONENT`` (default ``boundary``),
    ``CODEA1_MODE`` (``code-a1``), ``CODEA1_MISTAKE_BOOK`` (a SQLite path; in memory when unset)
    and ``CODEA1_SEED`` (0).

    Raises:
        ValueError: a variable with a bad value (named).
    """
    global _CORE
    with _CORE_LOCK:
        if _CORE is None:
            seed_text = os.environ.get("CODEA1_SEED", "0")
            try:
                seed = int(seed_text)
            except ValueError:
                raise ValueError(f"CODEA1_SEED must be an integer, got {seed_text!r}") from None
            _CORE = RewardCore(
                os.environ.get("CODEA1_SOURCE", "bank"),
                opponent=os.environ.get("CODEA1_OPPONENT", "boundary"),
                mode=os.environ.get("CODEA1_MODE", "code-a1"),
                mistake_book=os.environ.get("CODEA1_MISTAKE_BOOK") or None,
                seed=seed,
            )
        return _CORE


def reward_func(
    queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]
) -> dict[str, Any]:
    """OpenRLHF's in-process ``reward_func(queries, prompts, labels)``: the HTTP answer's dict."""
    body = {"query": list(queries), "prompts": list(prompts), "labels": list(labels)}
    return score_request(core_from_environment(), body)
