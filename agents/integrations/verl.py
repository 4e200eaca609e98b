r"""verl 0.9.1: a custom reward function scored by codea1's referee, and a parquet data builder.

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
:class:`~agents.integrations.core.RewardCore` per distinct setting and keeps it.

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
writes a file.

verl 0.9.1's trainer calls the reward function once per sample (its reward loop);
:mod:`agents.integrations.verl_manager` is the ``codea1`` reward manager that scores the samples
of a reward worker in batches (one referee call each).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from agents.integrations import reward_client
from agents.integrations.core import CoderRow, PairResult, RequestError, RewardCore, TesterRow
from agents.players.prompts import CODER_PROMPT, TESTER_PROMPT, PromptTemplate
from codea1_env.game.duel import Duel, answer_for
from codea1_env.game.spaces import observe
from codea1_env.problems import Problem, problem_to_dict

__all__ = [
    "CODE_SOURCES",
    "SCORE_KEYS",
    "SCORING_KWARGS",
    "build_rows",
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
_CORES: dict[tuple[Any, ...], RewardCore] = {}
_LOCK = threading.Lock()


def core_for(kwargs: Mapping[str, Any]) -> RewardCore:
    """The process's core for these ``reward_kwargs``, built once (other keywords are ignored).

    Args:
        kwargs: ``reward_kwargs`` (see the module docstring); keys that are not codea1's
            (verl's own keywords) and None values are left out.

    Returns:
        The one :class:`RewardCore` of this process for this setting.

    """
    config = {
        key: kwargs[key] for key in SCORING_KWARGS if key in kwargs and kwargs[key] is not None
    }
    key = tuple(sorted((k, str(v)) for k, v in config.items()))
    with _LOCK:
        core = _CORES.get(key)
        if core is None:
            source = config.pop("source", "bank")
            core = RewardCore(source, **config)
            _CORES[key] = core
        return core


def close_cores() -> None:
    """Close the cores this process built (sandboxes and mistake books)."""
    with _LOCK:
        cores = list(_CORES.values())
        _CORES.clear()
    for core in cores:
        core.close()


def _problem_spec(ground_truth: Any, extra_info: Mapping[str, Any] | None, where: str) -> Any:
    """The problem of a row: ``ground_truth`` (id or record), else ``extra_info["problem"]``."""
    if ground_truth is not None and not (isinstance(ground_truth, str) and not ground_truth):
        return ground_truth
    if extra_info and extra_info.get("problem") is not None:
        return extra_info["problem"]
    raise RequestError(
        where, "the row has no ground_truth (a problem id or record) nor extra_info.problem"
    )


def row_for(
    core: RewardCore,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
    response: str,
    where: str = "ground_truth",
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
        where: The field named in errors.

    Returns:
        A :class:`~agents.integrations.core.CoderRow` or
        :class:`~agents.integrations.core.TesterRow`.

    Raises:
        RequestError: no problem, an unknown problem, a malformed record, an unknown role, or a
            tester row without its frozen code.

    """
    info = extra_info or {}
    problem = core.problem(_problem_spec(ground_truth, info, where), where)
    role = info.get("role") or "coder"
    if role == "coder":
        return CoderRow(problem, response)
    if role != "tester":
        raise RequestError(f"{where}: extra_info.role", f"expected coder or tester, got {role!r}")
    code = info.get("code")
    if not isinstance(code, str) or not code.strip():
        raise RequestError(
            f"{where}: extra_info.code", "a tester row needs the frozen coder's answer"
        )
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
    info = result.info
    verdicts = info.get("verdicts", [])
    role = "tester" if isinstance(row, TesterRow) else "coder"
    return {
        "score": float(result.tester if role == "tester" else result.coder),
        "coder_reward": float(result.coder),
        "tester_reward": float(result.tester),
        "gt_pass_rate": float(info.get("gt_pass_rate", 0.0)),
        "n_tests": float(len(verdicts)),
        "n_failed": float(sum(not v["passed"] for v in verdicts)),
        "scored": 0.0 if info["reasons"].get(role) else 1.0,
    }


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
        **kwargs: ``reward_kwargs`` (see the module docstring); verl's own keywords are ignored.

    Returns:
        ``{"score": the coder's (or, for a tester row, the tester's) reward, ...}`` with the
        keys of :data:`SCORE_KEYS`.

    Raises:
        RequestError: the row cannot be scored (no or an unknown problem, a bad role, a tester
            row without its code).
        RewardServiceError: with ``reward_url``: the service is unreachable or answered an
            error (a 400 names the row's field).
        ValueError: ``reward_url`` together with local scoring options.

    """
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
        ValueError: ``reward_url`` together with local scoring options.

    """
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
    """
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
        row_for(core, gt, info, text, f"ground_truths[{i}]")
        for i, (text, gt, info) in enumerate(zip(solution_strs, ground_truths, infos))
    ]
    return score_rows(core, rows)


CODE_SOURCES = ("gt", "mutants", "gt+mutants", "http")
"""Where :func:`build_tester_rows` takes the frozen coder's answers from.

* ``gt``: the problem's GT program (a suite against it earns validity only: nothing to expose).
* ``mutants``: up to ``mutants`` single-point AST mutants of the GT
  (:mod:`codea1_env.scoring.mutation`), the buggy codes a tester should expose (as
  :class:`~codea1_env.baselines.scripted.MutantCoder` plays).
* ``gt+mutants``: both.
* ``http``: ``samples`` answers per problem from a frozen Code LLM behind an OpenAI-compatible
  server (``coder_url``, ``coder_model``: vLLM's ``vllm serve`` or ``python -m agents.serve``),
  sampled once, when the file is written, with codea1's coder prompt.
"""


def _coder_prompt(problem: Problem, template: str) -> str:
    return PromptTemplate(template).render_observation(observe(Duel(problem)))


def tester_prompt(
    problem: Problem, code: str, template: str = TESTER_PROMPT, num_tests: int = 8
) -> str:
    """The tester's prompt for a frozen coder answer (white-box), as the env shows it.

    Args:
        problem: The problem.
        code: The frozen coder's answer (its python block is extracted, as ``Duel.play_code``
            does).
        template: The tester prompt (``{prompt}``, ``{entry_point}``, ``{code}``,
            ``{num_tests}``).
        num_tests: How many asserts the prompt asks for.

    """
    duel = Duel(problem)
    duel.play_code(code)
    return PromptTemplate(template).render_observation(observe(duel), num_tests)


def _problems(source: Any, limit: int | None) -> tuple[Any, str, list[str]]:
    """The problem source, its name and its first ``limit`` ids."""
    from codea1_env.game.host import ProblemPicker

    problems_source = ProblemPicker(source).source
    name = str(getattr(problems_source, "name", source if isinstance(source, str) else "custom"))
    ids = list(problems_source.ids())
    return problems_source, name, ids[:limit] if limit is not None else ids


def _check_ground_truth(ground_truth: str) -> None:
    if ground_truth not in ("record", "id"):
        raise ValueError(f"ground_truth must be 'record' or 'id', got {ground_truth!r}")


def _truth(problem: Problem, ground_truth: str) -> str:
    """The ``ground_truth`` column: the problem's JSON record, or its task id."""
    if ground_truth == "id":
        return problem.task_id
    return json.dumps(problem_to_dict(problem), sort_keys=True)


def _verl_row(
    name: str,
    content: str,
    truth: str,
    extra_info: dict[str, Any],
    env_class: str | None,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "data_source": f"codea1/{name}",
        "prompt": [{"role": "user", "content": content}],
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": truth},
        "extra_info": extra_info,
    }
    if env_class is not None:
        row["env_class"] = env_class
        row["reward_spec"] = {"method": "rule", "ground_truth": truth}
    return row


def build_rows(
    source: Any = "bank",
    *,
    split: str = "train",
    ground_truth: str = "record",
    template: str = CODER_PROMPT,
    env_class: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Verl rows (SkyRL rows with ``env_class``) for the coder role, one per problem.

    Args:
        source: A problem source spec (``bank``, ``humaneval``, ``procedural``,
            ``jsonl:PATH``), a ProblemSource or a list of Problems.
        split: Stored in ``extra_info["split"]``.
        ground_truth: ``"record"``: the problem's JSONL record as JSON text (self-contained: any
            reward worker can score it whatever its ``source``); ``"id"``: the task id (the
            reward function's ``source`` must hold it). The GT solution is in this column,
            which verl gives only to the reward function, never to the policy.
        template: The coder prompt (``{prompt}``, ``{entry_point}``); the paper-style chat prompt
            by default.
        env_class: Also write ``env_class`` and ``reward_spec`` (SkyRL-gym's columns), e.g.
            ``"codea1_coder"``.
        limit: At most this many problems.

    Returns:
        ``{"data_source", "prompt", "ability", "reward_model", "extra_info"}`` dicts;
        ``extra_info`` holds ``split``, ``index``, ``task_id`` and ``role`` (``"coder"``).

    """
    _check_ground_truth(ground_truth)
    problems_source, name, ids = _problems(source, limit)
    rows = []
    for index, task_id in enumerate(ids):
        problem = problems_source[task_id]
        extra = {"split": split, "index": index, "task_id": problem.task_id, "role": "coder"}
        content = _coder_prompt(problem, template)
        rows.append(_verl_row(name, content, _truth(problem, ground_truth), extra, env_class))
    return rows


def frozen_codes(
    problems: Sequence[Problem],
    codes: str = "gt+mutants",
    *,
    mutants: int = 3,
    samples: int = 1,
    coder: Any = None,
    coder_url: str | None = None,
    coder_model: str = "coder",
    seed: int = 0,
) -> list[list[tuple[str, str]]]:
    """The frozen coder's answers per problem, each as ``(code_source, answer)``.

    Args:
        problems: The problems.
        codes: One of :data:`CODE_SOURCES`.
        mutants: With ``mutants`` / ``gt+mutants``: at most this many mutants per problem
            (picked with ``seed``; a problem without mutants gets none).
        samples: With ``http`` (or ``coder``): answers per problem.
        coder: A frozen coder policy (``act(observations, infos) -> answers``, e.g.
            :class:`agents.players.policy.CoderPolicy` over any LM, or
            :class:`codea1_env.baselines.scripted.MutantCoder`) to sample instead of the ``http``
            one.
        coder_url: The OpenAI-compatible API root of the frozen Code LLM (``codes="http"``).
        coder_model: Its model name.
        seed: Seed of the mutant choice.

    Returns:
        ``answers[i]``: the frozen answers to ``problems[i]``; ``code_source`` is ``"gt"``,
        ``"mutant:<operator>"``, ``"http:<model>"`` or ``"policy"``.

    Raises:
        ValueError: an unknown ``codes``, or ``http`` without ``coder_url``.

    """
    if codes not in CODE_SOURCES:
        raise ValueError(f"codes must be one of {CODE_SOURCES}, got {codes!r}")
    if codes == "http" or coder is not None:
        label = "policy"
        if coder is None:
            if not coder_url:
                raise ValueError("codes='http' needs coder_url (an OpenAI-compatible API root)")
            from agents.lm.http import OpenAICompatibleLM
            from agents.players.policy import CoderPolicy

            coder = CoderPolicy(OpenAICompatibleLM(coder_url, model=coder_model))
            label = f"http:{coder_model}"
        duels = [Duel(problem) for problem in problems for _ in range(samples)]
        from codea1_env.envs.duel_env import duel_info

        answers = coder.act([observe(d) for d in duels], [duel_info(d) for d in duels])
        return [
            [(label, str(a)) for a in answers[i * samples : (i + 1) * samples]]
            for i in range(len(problems))
        ]
    import numpy as np

    from codea1_env.scoring.mutation import MutantCache

    cache = MutantCache()
    rng = np.random.default_rng(seed)
    out: list[list[tuple[str, str]]] = []
    for problem in problems:
        answers_i: list[tuple[str, str]] = []
        if codes in ("gt", "gt+mutants"):
            answers_i.append(("gt", answer_for(problem.gt_program)))
        if codes in ("mutants", "gt+mutants") and mutants > 0:
            pool = cache.get(problem.gt_program)
            picked = sorted(rng.permutation(len(pool))[:mutants]) if pool else []
            for j in picked:
                mutant = pool[int(j)]
                answers_i.append((f"mutant:{mutant.operator}", answer_for(mutant.source)))
        out.append(answers_i)
    return out


def build_tester_rows(
    source: Any = "bank",
    *,
    codes: str = "gt+mutants",
    mutants: int = 3,
    samples: int = 1,
    coder: Any = None,
    coder_url: str | None = None,
    coder_model: str = "coder",
    seed: int = 0,
    split: str = "train",
    ground_truth: str = "record",
    template: str = TESTER_PROMPT,
    num_tests: int = 8,
    env_class: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Verl rows (SkyRL rows with ``env_class="codea1_tester"``) for the tester role.

    The Test LLM is trained; the coder is frozen: each row carries one frozen coder answer (see
    :func:`frozen_codes`) in ``extra_info["code"]`` and shows it in the tester's prompt
    (white-box, as the env does). :func:`compute_score` (and the ``codea1`` reward manager)
    score the response as the tester's suite against that code: ``score`` is the env's
    ``info["rewards"]["tester"]`` for the pair (validity on the GT, and exposing the code's
    bugs, with the mistake book), through the same :class:`RewardCore` as the coder role.

    Args:
        source: A problem source spec, a ProblemSource or a list of Problems.
        codes: Where the frozen answers come from (:data:`CODE_SOURCES`).
        mutants: Mutants per problem (``mutants`` / ``gt+mutants``).
        samples: Answers per problem from the frozen coder (``http`` / ``coder``).
        coder: A frozen coder policy to sample from instead of ``coder_url``.
        coder_url: The frozen Code LLM's OpenAI-compatible API root (``codes="http"``).
        coder_model: Its model name.
        seed: Seed of the mutant choice.
        split: Stored in ``extra_info["split"]``.
        ground_truth: ``"record"`` (the problem's JSON record) or ``"id"``, as in
            :func:`build_rows`.
        template: The tester prompt; the paper-style chat prompt by default.
        num_tests: How many asserts the prompt asks for.
        env_class: Also write SkyRL-gym's ``env_class`` and ``reward_spec`` columns.
        limit: At most this many problems.

    Returns:
        One row per (problem, frozen answer); ``extra_info`` holds ``split``, ``index``,
        ``task_id``, ``role`` (``"tester"``), ``code`` (the frozen answer) and ``code_source``.

    """
    _check_ground_truth(ground_truth)
    problems_source, name, ids = _problems(source, limit)
    problems = [problems_source[task_id] for task_id in ids]
    answers = frozen_codes(
        problems,
        codes,
        mutants=mutants,
        samples=samples,
        coder=coder,
        coder_url=coder_url,
        coder_model=coder_model,
        seed=seed,
    )
    rows: list[dict[str, Any]] = []
    for problem, frozen in zip(problems, answers, strict=True):
        truth = _truth(problem, ground_truth)
        for code_source, code in frozen:
            extra = {
                "split": split,
                "index": len(rows),
                "task_id": problem.task_id,
                "role": "tester",
                "code": code,
                "code_source": code_source,
            }
            content = tester_prompt(problem, code, template, num_tests)
            rows.append(_verl_row(name, content, truth, extra, env_class))
    return rows


def write_parquet(rows: Sequence[Mapping[str, Any]], path: str) -> int:
    """Write rows to a parquet file (pyarrow, installed with the ``hf`` extra); returns the count.

    Raises:
        ImportError: pyarrow is not installed.

    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([dict(r) for r in rows]), path)
    return len(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.integrations.verl``: write verl's parquet for a problem source."""
    parser = argparse.ArgumentParser(description="write verl (or SkyRL) parquet rows for codea1")
    parser.add_argument("--source", default="bank", help="bank, humaneval, procedural, jsonl:PATH")
    parser.add_argument("--out", required=True, help="the .parquet file to write")
    parser.add_argument(
        "--role", choices=("coder", "tester"), default="coder", help="the role verl trains"
    )
    parser.add_argument("--split", default="train")
    parser.add_argument("--ground-truth", choices=("record", "id"), default="record")
    parser.add_argument(
        "--env-class", default=None, help="add SkyRL columns (codea1_coder, codea1_tester)"
    )
    parser.add_argument("--limit", type=int, default=None)
    tester = parser.add_argument_group("tester role: the frozen coder's answers")
    tester.add_argument("--codes", choices=CODE_SOURCES, default="gt+mutants")
    tester.add_argument("--mutants", type=int, default=3, help="mutants per problem")
    tester.add_argument("--samples", type=int, default=1, help="answers per problem (http)")
    tester.add_argument("--coder-url", default=None, help="the frozen Code LLM's API root")
    tester.add_argument("--coder-model", default="coder")
    tester.add_argument("--num-tests", type=int, default=8, help="asserts the prompt asks for")
    tester.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    common: dict[str, Any] = {
        "split": args.split,
        "ground_truth": args.ground_truth,
        "env_class": args.env_class,
        "limit": args.limit,
    }
    if args.role == "tester":
        rows = build_tester_rows(
            args.source,
            codes=args.codes,
            mutants=args.mutants,
            samples=args.samples,
            coder_url=args.coder_url,
            coder_model=args.coder_model,
            num_tests=args.num_tests,
            seed=args.seed,
            **common,
        )
    else:
        rows = build_rows(args.source, **common)
    count = write_parquet(rows, args.out)
    print(json.dumps({"rows": count, "out": args.out, "role": args.role}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
