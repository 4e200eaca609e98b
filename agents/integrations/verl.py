r"""verl 0.9.1: a custom reward function scored by codea1's referee (data: :mod:`.verl_data`).

verl is not a codea1 dependency (verl 0.9.1 needs ``transformers<5.11``); nothing here imports
it. The reward function is loaded by verl from this file's path::

    python -m verl.trainer.main_ppo \
        data.train_files=codea1_train.parquet data.val_files=codea1_val.parquet \
        reward.custom_reward_function.path=$(python -c \
            "import agents.integrations.verl as m; print(m.__file__)") \
        reward.custom_reward_function.name=compute_score \
        +reward.custom_reward_function.reward_kwargs.opponent=boundary \
        +reward.custom_reward_function.reward_kwargs.mistake_book=/shared/book.sqlite ...

:func:`compute_score` has verl's signature
``compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)`` (the ``naive``
and ``remote`` reward managers call it once per response, ``solution_str`` being the response
only) and returns a dict with ``"score"`` and the same extra keys for every row
(:data:`SCORE_KEYS`; verl logs them as ``reward_extra_info``). :func:`compute_score_batch` is
the ``batch`` reward manager's form (``data_sources=..., solution_strs=..., ...``): one referee
call for the whole batch.

``reward_kwargs`` choose the scoring (the same names as ``codea1 serve-reward``'s flags):
``source`` (``bank``), ``opponent`` (``boundary``; ``gt`` is the Golden Tests reward),
``mode``, ``alpha``, ``k``, ``mistake_book`` (a SQLite path: every reward worker process opens
the same WAL-mode file, so they share one book), ``seed``, ``num_tests``, ``workers``,
``opponent_url``, ``opponent_model``, ``update_book`` (False: replay the book without
changing it, e.g. for validation). Each process builds one
:class:`~agents.integrations.core.RewardCore` per distinct setting and keeps it. Any other
keyword is an error (``ValueError: unknown reward keyword(s) ['opponentt']; codea1's: [...]``),
except :data:`VERL_KWARGS`, the ones verl 0.9.1 adds itself, which are ignored: a misspelled
option never silently scores with the default.

``reward_url`` (``http://HOST:8011``) scores through a running ``codea1 serve-reward`` instead
(its ``POST /v1/rows``, :mod:`agents.integrations.reward_client`): no core, sandbox or book in
the reward worker; reward workers on many nodes share the service's one book. The result is the
same dict, scored by the same :func:`row_for` and :meth:`RewardCore.score
<agents.integrations.core.RewardCore.score>` in the service; the scoring options are then the
service's flags (giving one in ``reward_kwargs`` too is an error). ``reward_timeout_s`` (900)
and ``reward_retries`` (4, only for a refused connection or a 503) tune the client; an
unreachable service or an error answer raises
:class:`~agents.integrations.reward_client.RewardServiceError` (never a silent 0).
:func:`compute_score_async` is the coroutine form verl's reward loop awaits
(``reward.custom_reward_function.name=compute_score_async``: verl 0.9.1's ``naive``, ``dapo``,
``gdpo`` and ``limited`` managers check ``inspect.iscoroutinefunction``; its ``remote`` manager
refuses coroutines).

Roles: verl trains one policy per run. :func:`build_rows` writes rows for the **coder** (the
tester is frozen: ``reward_kwargs.opponent``); :func:`build_tester_rows` writes rows for the
**tester** (the coder is frozen: each row carries one frozen coder answer in
``extra_info["code"]``, from the GT and its mutants or sampled from a Code LLM over HTTP, see
:data:`CODE_SOURCES`), and :func:`compute_score` then returns the tester's reward. Both go
through :func:`row_for` and one :meth:`RewardCore.score
<agents.integrations.core.RewardCore.score>`: the env's ``info["rewards"][role]``.
``python -m agents.integrations.verl --source bank --out train.parquet`` (``--role tester``)
writes a file. The builders live in :mod:`agents.integrations.verl_data` and are re-exported
here.

verl 0.9.1's trainer calls the reward function once per sample (its reward loop);
:mod:`agents.integrations.verl_manager` is the ``codea1`` reward manager that scores the samples
of a reward worker in batches (one referee call each).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from agents.integrations import reward_client
from agents.integrations.core import (
    CoderRow,
    PairResult,
    RequestError,
    RewardCore,
    SharedCores,
    TesterRow,
)
from agents.integrations.verl_data import (
    CODE_SOURCES,
    ENV_CLASSES,
    build_rows,
    build_tester_rows,
    frozen_codes,
    main,
    tester_prompt,
    write_parquet,
)

__all__ = [
    "CODE_SOURCES",
    "ENV_CLASSES",
    "SCORE_KEYS",
    "SCORING_KWARGS",
    "VERL_KWARGS",
    "build_rows",
    "check_reward_kwargs",
    "build_tester_rows",
    "compute_score",
    "compute_score_async",
    "compute_score_batch",
    "core_for",
    "frozen_codes",
    "main",
    "remote_scoring",
    "row_for",
    "score_rows",
    "scores_for",
    "tester_prompt",
    "write_parquet",
]

SCORE_KEYS = (
    "score",
    "coder_reward",
    "tester_reward",
    "gt_pass_rate",
    "n_tests",
    "n_failed",
    "scored",
)
"""The keys of every :func:`compute_score` result (all floats)."""

SCORING_KWARGS = (
    "source",
    "opponent",
    "mode",
    "alpha",
    "k",
    "mistake_book",
    "seed",
    "num_tests",
    "workers",
    "opponent_url",
    "opponent_model",
    "update_book",
)
"""The ``reward_kwargs`` that choose the local scoring (``codea1 serve-reward``'s flags)."""

VERL_KWARGS = ("reward_router_address", "reward_model_tokenizer")
"""The keywords verl 0.9.1 itself adds to a custom ``compute_score`` call (accepted, ignored).

verl 0.9.1 calls the reward function with ``data_source``, ``solution_str``, ``ground_truth`` and
``extra_info`` (the batch manager: ``data_sources``, ``solution_strs``, ``ground_truths``,
``extra_infos``), the user's ``reward_kwargs`` (merged in by ``get_custom_reward_fn`` in
``verl/trainer/ppo/reward.py``) and, from its reward-loop managers (``naive``, ``dapo``,
``gdpo``, ``limited``, ``remote`` in ``verl/experimental/reward_loop/reward_manager/``), these two
when a reward-model router is set. Its legacy managers (``verl/workers/reward_manager/``) and
``main_eval`` pass nothing else; verl's sandbox-fusion keywords go only to its own default
reward function, never to a custom one.
"""

_KNOWN_KWARGS = frozenset(SCORING_KWARGS) | frozenset(reward_client.REMOTE_KWARGS)
_ACCEPTED_KWARGS = _KNOWN_KWARGS | frozenset(VERL_KWARGS)
_CORES = SharedCores()


def check_reward_kwargs(kwargs: Mapping[str, Any]) -> None:
    """Reject a keyword that is neither codea1's nor one of verl's own (:data:`VERL_KWARGS`).

    Args:
        kwargs: The keywords :func:`compute_score` (or its batch or async form) got besides the
            row's fields: verl's own and the user's ``reward_kwargs``.

    Raises:
        ValueError: ``unknown reward keyword(s) [...]; codea1's: [...]``, a misspelled
            ``reward_kwargs`` key (say ``opponentt``), which would otherwise score with the
            default opponent without a word.

    """
    unknown = sorted(str(key) for key in kwargs if key not in _ACCEPTED_KWARGS)
    if unknown:
        raise ValueError(
            f"unknown reward keyword(s) {unknown}; codea1's: {sorted(_KNOWN_KWARGS)} "
            f"(verl's own {sorted(VERL_KWARGS)} are ignored)"
        )


def core_for(kwargs: Mapping[str, Any]) -> RewardCore:
    """The process's core for these ``reward_kwargs``, built once.

    Other keywords are left out here: the callers check them first (:func:`compute_score` and
    its forms with :func:`check_reward_kwargs`, the ``codea1`` reward manager against its own
    list), so a misspelled one is an error there.

    Args:
        kwargs: ``reward_kwargs`` (see the module docstring); keys that are not in
            :data:`SCORING_KWARGS` (verl's own keywords, the ``reward_url`` client's) and None
            values are left out.

    Returns:
        The one :class:`RewardCore` of this process for this setting.

    """
    config = {
        key: kwargs[key] for key in SCORING_KWARGS if key in kwargs and kwargs[key] is not None
    }
    return _CORES.get(config)


def close_cores() -> None:
    """Close the cores this process built (sandboxes and mistake books)."""
    _CORES.close()


def _problem_spec(
    ground_truth: Any, extra_info: Mapping[str, Any] | None, where: str, info_where: str
) -> tuple[Any, str]:
    """The problem of a row and the field it came from.

    ``ground_truth`` (id or record), else ``extra_info["problem"]``.
    """
    if ground_truth is not None and not (isinstance(ground_truth, str) and not ground_truth):
        return ground_truth, where
    if extra_info and extra_info.get("problem") is not None:
        return extra_info["problem"], f"{info_where}.problem"
    raise RequestError(
        where, "the row has no ground_truth (a problem id or record) nor extra_info.problem"
    )


def row_for(
    core: RewardCore,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
    response: str,
    where: str = "ground_truth",
    info_where: str = "extra_info",
) -> CoderRow | TesterRow:
    """The scoring row of one verl sample: the coder's answer, or the tester's suite.

    ``extra_info["role"] == "tester"`` (the rows of :func:`build_tester_rows`) makes the response
    a tester's suite against the frozen coder answer ``extra_info["code"]``; any other row
    (``role`` missing, None or ``"coder"``) is a coder's answer against the core's frozen tester.

    Args:
        core: The core that resolves the problem.
        ground_truth: ``reward_model.ground_truth`` (a problem id or record).
        extra_info: The row's ``extra_info`` (may be None).
        response: The policy's response text.
        where: The field named in errors about ``ground_truth``.
        info_where: The field named in errors about ``extra_info`` (its ``role``, ``code``
            and ``problem``).

    Returns:
        A :class:`~agents.integrations.core.CoderRow` or
        :class:`~agents.integrations.core.TesterRow`.

    Raises:
        RequestError: no problem, an unknown problem, a malformed record, an unknown role, or a
            tester row without its frozen code.

    """
    info = extra_info or {}
    spec, spec_where = _problem_spec(ground_truth, info, where, info_where)
    problem = core.problem(spec, spec_where)
    role = info.get("role") or "coder"
    if role == "coder":
        return CoderRow(problem, response)
    if role != "tester":
        raise RequestError(f"{info_where}.role", f"expected coder or tester, got {role!r}")
    code = info.get("code")
    if not isinstance(code, str) or not code.strip():
        raise RequestError(f"{info_where}.code", "a tester row needs the frozen coder's answer")
    return TesterRow(problem, code, response)


def scores_for(result: PairResult, row: CoderRow | TesterRow) -> dict[str, float]:
    """The :data:`SCORE_KEYS` of a scored row; ``score`` is the trained role's reward.

    Args:
        result: What :meth:`RewardCore.score` returned for ``row``.
        row: The row (its type says which role is trained).

    Returns:
        ``score`` (the coder's reward for a coder row, the tester's for a tester row, that is
        the env's ``info["rewards"][role]``), both rewards, the GT pass rate of the code, the
        number of tests and of failed tests, and ``scored`` (1.0 when the trained role's move
        could be scored).

    """
    return result.metrics("tester" if isinstance(row, TesterRow) else "coder")


def score_rows(core: RewardCore, rows: Sequence[CoderRow | TesterRow]) -> list[dict[str, float]]:
    """Score rows with one referee call; one :func:`scores_for` dict per row."""
    results = core.score(rows)
    out = []
    for row, result in zip(rows, results, strict=True):
        assert isinstance(result, PairResult)
        out.append(scores_for(result, row))
    return out


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """Verl's custom reward: the trained role's reward for ``solution_str`` (see the module).

    Args:
        data_source: The row's ``data_source`` (``codea1/<source>``; not used for scoring).
        solution_str: The model's response (the prompt is not part of it in verl).
        ground_truth: ``reward_model.ground_truth``: a problem id of the ``source`` kwarg, or a
            problem record in the JSONL schema (JSON text or a dict).
        extra_info: The row's ``extra_info`` (``extra_info["problem"]`` is used when
            ``ground_truth`` is empty; ``role`` and ``code`` make a tester row, see
            :func:`row_for`).
        **kwargs: ``reward_kwargs`` (see the module docstring); verl's own keywords
            (:data:`VERL_KWARGS`) are ignored, any other is an error.

    Returns:
        ``{"score": the coder's (or, for a tester row, the tester's) reward, ...}`` with the
        keys of :data:`SCORE_KEYS`.

    Raises:
        RequestError: the row cannot be scored (no or an unknown problem, a bad role, a tester
            row without its code).
        RewardServiceError: with ``reward_url``: the service is unreachable or answered an
            error (a 400 names the row's field).
        ValueError: an unknown keyword (:func:`check_reward_kwargs`), or ``reward_url``
            together with local scoring options.

    """
    check_reward_kwargs(kwargs)
    remote = remote_scoring(kwargs)
    if remote is not None:
        row = reward_client.wire_row(ground_truth, extra_info, solution_str)
        return reward_client.post_rows(remote, [row], SCORE_KEYS)[0]
    core = core_for(kwargs)
    return score_rows(core, [row_for(core, ground_truth, extra_info, solution_str)])[0]


async def compute_score_async(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """The coroutine form of :func:`compute_score`, which verl's reward loop awaits.

    verl 0.9.1's ``get_custom_reward_fn`` and its ``naive``/``dapo``/``gdpo``/``limited``
    managers see a coroutine function (``inspect.iscoroutinefunction``) and await it instead of
    running it in their thread pool: ``reward.custom_reward_function.name=compute_score_async``.
    With ``reward_url`` the request runs in a thread (the service batches the concurrent
    requests of every worker); without it the local scoring does.

    Args:
        data_source: The row's ``data_source`` (not used for scoring).
        solution_str: The model's response.
        ground_truth: ``reward_model.ground_truth`` (a problem id or record).
        extra_info: The row's ``extra_info``.
        **kwargs: ``reward_kwargs`` (see the module docstring).

    Returns:
        :func:`compute_score`'s dict.

    Raises:
        RequestError: the row cannot be scored.
        RewardServiceError: with ``reward_url``: the service is unreachable or answered an error.
        ValueError: an unknown keyword (:func:`check_reward_kwargs`), or ``reward_url``
            together with local scoring options.

    """
    check_reward_kwargs(kwargs)
    remote = remote_scoring(kwargs)
    if remote is not None:
        row = reward_client.wire_row(ground_truth, extra_info, solution_str)
        return (await reward_client.apost_rows(remote, [row], SCORE_KEYS))[0]
    return await asyncio.to_thread(
        compute_score, data_source, solution_str, ground_truth, extra_info, **kwargs
    )


def remote_scoring(kwargs: Mapping[str, Any]) -> reward_client.RemoteScoring | None:
    """The ``reward_url`` options of ``reward_kwargs`` (None: score in this process).

    Raises:
        ValueError: ``reward_url`` together with one of :data:`SCORING_KWARGS`, or bad values.

    """
    return reward_client.remote_scoring(kwargs, SCORING_KWARGS)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """The batch form of :func:`compute_score` (verl's legacy ``batch`` manager): one referee call.

    verl 0.9.1's legacy ``verl/workers/reward_manager/batch.py`` calls it with
    ``data_sources=, solution_strs=, ground_truths=, extra_infos=``; its reward loop (what
    ``main_ppo`` runs) has no batch manager of its own, see :mod:`agents.integrations.verl_manager`.
    With ``reward_url`` the batch is ONE request to the service.

    Raises:
        ValueError: lists of different lengths, an unknown keyword
            (:func:`check_reward_kwargs`), or ``reward_url`` together with local scoring options.
        RequestError: a row cannot be scored (its field is named, e.g. ``extra_infos[1].role``).
        RewardServiceError: with ``reward_url``: the service is unreachable or answered an error.

    """
    check_reward_kwargs(kwargs)
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    if not len(data_sources) == len(solution_strs) == len(ground_truths) == len(infos):
        raise ValueError("compute_score_batch: the four lists must have the same length")
    remote = remote_scoring(kwargs)
    if remote is not None:
        wire = [
            reward_client.wire_row(gt, info, text)
            for text, gt, info in zip(solution_strs, ground_truths, infos)
        ]
        return reward_client.post_rows(remote, wire, SCORE_KEYS)
    core = core_for(kwargs)
    rows = [
        row_for(core, gt, info, text, f"ground_truths[{i}]", f"extra_infos[{i}]")
        for i, (text, gt, info) in enumerate(zip(solution_strs, ground_truths, infos))
    ]
    return score_rows(core, rows)


if __name__ == "__main__":
    raise SystemExit(main())
