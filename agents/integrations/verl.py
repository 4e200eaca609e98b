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
``opponent_url``, ``opponent_model``. Each process builds one
:class:`~agents.integrations.core.RewardCore` per distinct setting and keeps it.

:func:`build_rows` writes verl's rows for the coder role from any codea1 problem source;
``python -m agents.integrations.verl --source bank --out train.parquet`` writes a file.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from agents.integrations.core import CoderRow, PairResult, RewardCore
from agents.prompts import CODER_PROMPT, PromptTemplate
from codea1_env.duel import Duel
from codea1_env.problems import Problem, problem_to_dict
from codea1_env.spaces import observe

__all__ = [
    "SCORE_KEYS",
    "build_rows",
    "compute_score",
    "compute_score_batch",
    "main",
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

_KWARGS = (
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
)
_CORES: dict[tuple[Any, ...], RewardCore] = {}
_LOCK = threading.Lock()


def _core(kwargs: Mapping[str, Any]) -> RewardCore:
    """The process's core for these ``reward_kwargs`` (other verl keywords are ignored)."""
    config = {key: kwargs[key] for key in _KWARGS if key in kwargs and kwargs[key] is not None}
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


def _problem_spec(ground_truth: Any, extra_info: Mapping[str, Any] | None) -> Any:
    """The problem of a row: ``ground_truth`` (id or record), else ``extra_info["problem"]``."""
    if ground_truth not in (None, ""):
        return ground_truth
    if extra_info and extra_info.get("problem") is not None:
        return extra_info["problem"]
    raise ValueError("codea1 compute_score: the row has no ground_truth (a problem id or record)")


def _scores(result: PairResult) -> dict[str, float]:
    info = result.info
    verdicts = info.get("verdicts", [])
    return {
        "score": float(result.coder),
        "coder_reward": float(result.coder),
        "tester_reward": float(result.tester),
        "gt_pass_rate": float(info.get("gt_pass_rate", 0.0)),
        "n_tests": float(len(verdicts)),
        "n_failed": float(sum(not v["passed"] for v in verdicts)),
        "scored": 0.0 if info["reasons"].get("coder") else 1.0,
    }


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """Verl's custom reward: the coder's reward for ``solution_str`` (see the module docstring).

    Args:
        data_source: The row's ``data_source`` (``codea1/<source>``; not used for scoring).
        solution_str: The model's response (the prompt is not part of it in verl).
        ground_truth: ``reward_model.ground_truth``: a problem id of the ``source`` kwarg, or a
            problem record in the JSONL schema (JSON text or a dict).
        extra_info: The row's ``extra_info`` (``extra_info["problem"]`` is used when
            ``ground_truth`` is empty).
        **kwargs: ``reward_kwargs`` (see the module docstring); verl's own keywords are ignored.

    Returns:
        ``{"score": coder reward, ...}`` with the keys of :data:`SCORE_KEYS`.

    """
    core = _core(kwargs)
    problem = core.problem(_problem_spec(ground_truth, extra_info), "ground_truth")
    result = core.score([CoderRow(problem, solution_str)])[0]
    assert isinstance(result, PairResult)
    return _scores(result)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    **kwargs: Any,
) -> list[dict[str, float]]:
    """Verl's ``batch`` reward manager form of :func:`compute_score`: one referee call."""
    core = _core(kwargs)
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    if not len(data_sources) == len(solution_strs) == len(ground_truths) == len(infos):
        raise ValueError("compute_score_batch: the four lists must have the same length")
    rows = [
        CoderRow(core.problem(_problem_spec(gt, info), f"ground_truths[{i}]"), text)
        for i, (text, gt, info) in enumerate(zip(solution_strs, ground_truths, infos))
    ]
    results = core.score(rows)
    return [_scores(r) for r in results if isinstance(r, PairResult)]


def _coder_prompt(problem: Problem, template: str) -> str:
    return PromptTemplate(template).render_observation(observe(Duel(problem)))


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
        ``{"data_source", "prompt", "ability", "reward_model", "extra_info"}`` dicts.

    """
    if ground_truth not in ("record", "id"):
        raise ValueError(f"ground_truth must be 'record' or 'id', got {ground_truth!r}")
    from codea1_env.builders import ProblemPicker

    problems_source = ProblemPicker(source).source
    name = str(getattr(problems_source, "name", source if isinstance(source, str) else "custom"))
    ids = list(problems_source.ids())
    if limit is not None:
        ids = ids[:limit]
    rows = []
    for index, task_id in enumerate(ids):
        problem = problems_source[task_id]
        truth = (
            json.dumps(problem_to_dict(problem), sort_keys=True)
            if ground_truth == "record"
            else problem.task_id
        )
        row: dict[str, Any] = {
            "data_source": f"codea1/{name}",
            "prompt": [{"role": "user", "content": _coder_prompt(problem, template)}],
            "ability": "code",
            "reward_model": {"style": "rule", "ground_truth": truth},
            "extra_info": {"split": split, "index": index, "task_id": problem.task_id},
        }
        if env_class is not None:
            row["env_class"] = env_class
            row["reward_spec"] = {"method": "rule", "ground_truth": truth}
        rows.append(row)
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
    parser.add_argument("--split", default="train")
    parser.add_argument("--ground-truth", choices=("record", "id"), default="record")
    parser.add_argument("--env-class", default=None, help="add SkyRL columns (codea1_coder)")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(argv)
    rows = build_rows(
        args.source,
        split=args.split,
        ground_truth=args.ground_truth,
        env_class=args.env_class,
        limit=args.limit,
    )
    count = write_parquet(rows, args.out)
    print(json.dumps({"rows": count, "out": args.out}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
