"""verl 0.9.1's parquet data: one row per problem (coder role) or per frozen coder answer (tester).

:func:`build_rows` writes rows for the **coder** (the tester is frozen: the reward function's
``reward_kwargs.opponent``); :func:`build_tester_rows` writes rows for the **tester** (the coder
is frozen: each row carries one frozen coder answer in ``extra_info["code"]``, from the GT and
its mutants or sampled from a Code LLM over HTTP, see :data:`CODE_SOURCES`). Every prompt is the
one the env shows the role. With ``env_class`` the rows are SkyRL's too. The rows are scored by
:func:`agents.integrations.verl.compute_score` (through the same ``row_for``);
``python -m agents.integrations.verl --source bank --out train.parquet`` (``--role tester``)
writes a file (:func:`main`): atomically, creating missing folders, and only once every row is
built; a bad input (source, problems file, flag) is a ``... : error: ...`` line on stderr (and
where it was raised, as the ``codea1`` commands say it) and exit status 2, with nothing
written. Like :mod:`agents.integrations.verl`, nothing here imports verl.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from agents.integrations.core import coder_prompt, tester_prompt
from agents.players.prompts import CODER_PROMPT, TESTER_PROMPT
from codea1_env.game.duel import Duel, answer_for
from codea1_env.game.spaces import observe
from codea1_env.problems import Problem, problem_to_dict

__all__ = [
    "CODE_SOURCES",
    "ENV_CLASSES",
    "PROG",
    "build_rows",
    "build_tester_rows",
    "frozen_codes",
    "build_parser",
    "main",
    "tester_prompt",
    "write_parquet",
]


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


ENV_CLASSES = {"coder": "codea1_coder", "tester": "codea1_tester"}
"""SkyRL-gym's env class of each role's rows (the ids :mod:`agents.integrations.skyrl`
registers); ``env_class`` must be the one of the rows' role."""

PROG = "python -m agents.integrations.verl"
"""The name :func:`main` gives itself in usage and error lines."""


def _check_env_class(env_class: str | None, role: str) -> None:
    """``env_class`` is None or the SkyRL env of ``role`` (:data:`ENV_CLASSES`)."""
    if env_class is None or env_class == ENV_CLASSES[role]:
        return
    if env_class in ENV_CLASSES.values():
        raise ValueError(
            f"env_class {env_class!r} is not the {role}'s env; {role} rows need "
            f"{ENV_CLASSES[role]!r}"
        )
    raise ValueError(f"env_class must be one of {sorted(ENV_CLASSES.values())}, got {env_class!r}")


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
        env_class: Also write ``env_class`` and ``reward_spec`` (SkyRL-gym's columns):
            ``"codea1_coder"``, the coder's env (:data:`ENV_CLASSES`).
        limit: At most this many problems.

    Returns:
        ``{"data_source", "prompt", "ability", "reward_model", "extra_info"}`` dicts;
        ``extra_info`` holds ``split``, ``index``, ``task_id`` and ``role`` (``"coder"``).

    Raises:
        ValueError: a bad ``ground_truth`` or ``env_class``, or an unknown source
            (``ProblemFormatError`` for a malformed problems file).
        OSError: the problems file cannot be read.

    """
    _check_ground_truth(ground_truth)
    _check_env_class(env_class, "coder")
    problems_source, name, ids = _problems(source, limit)
    rows = []
    for index, task_id in enumerate(ids):
        problem = problems_source[task_id]
        extra = {"split": split, "index": index, "task_id": problem.task_id, "role": "coder"}
        content = coder_prompt(problem, template)
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
        env_class: Also write SkyRL-gym's ``env_class`` and ``reward_spec`` columns:
            ``"codea1_tester"``, the tester's env (:data:`ENV_CLASSES`).
        limit: At most this many problems.

    Returns:
        One row per (problem, frozen answer); ``extra_info`` holds ``split``, ``index``,
        ``task_id``, ``role`` (``"tester"``), ``code`` (the frozen answer) and ``code_source``.

    Raises:
        ValueError: a bad ``ground_truth``, ``env_class`` or ``codes``, ``http`` without
            ``coder_url``, or an unknown source (``ProblemFormatError`` for a malformed file).
        OSError: the problems file cannot be read.
        HTTPPolicyError: the frozen Code LLM's server failed (``codes="http"``).

    """
    _check_ground_truth(ground_truth)
    _check_env_class(env_class, "tester")
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


def _pyarrow() -> tuple[Any, Any]:
    """``pyarrow`` and ``pyarrow.parquet``, or an ImportError naming the extra to install."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError(
            f"writing parquet needs pyarrow ({exc}): pip install 'codea1[hf]'"
        ) from exc
    return pa, pq


def write_parquet(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str]) -> int:
    """Write rows to a parquet file (pyarrow, installed with the ``hf`` extra); returns the count.

    The file is written as the project's other writers write theirs
    (:mod:`codea1_env.atomic`): to a temporary file beside ``path``, fsynced, then renamed over
    it, so a reader sees the old file or the new one, never a torn one; missing parent folders
    are created. A replaced file keeps its mode; a symbolic link is written through; a path that
    is not a regular file (``/dev/stdout``) is written to directly.

    Args:
        rows: The rows (:func:`build_rows`, :func:`build_tester_rows`).
        path: The ``.parquet`` file.

    Returns:
        How many rows were written.

    Raises:
        ImportError: pyarrow is not installed.
        IsADirectoryError: ``path`` is a directory.
        OSError: the folder cannot be created or written to.

    """
    from codea1_env.atomic import atomic_binary_writer

    pa, pq = _pyarrow()
    table = pa.Table.from_pylist([dict(r) for r in rows])
    with atomic_binary_writer(path) as handle:
        pq.write_table(table, handle)
    return len(rows)


def _input_errors() -> tuple[type[BaseException], ...]:
    """What a bad source, problems file, output path or frozen coder server raises."""
    from agents.lm.http import HTTPPolicyError

    return (OSError, ValueError, KeyError, HTTPPolicyError)


def build_parser() -> argparse.ArgumentParser:
    """The parser of :func:`main` (bad flag values are argparse errors naming the flag)."""
    from agents.commands.argtypes import nonnegative_int, positive_int

    parser = argparse.ArgumentParser(
        prog=PROG, description="write verl (or SkyRL) parquet rows for codea1"
    )
    parser.add_argument("--source", default="bank", help="bank, humaneval, procedural, jsonl:PATH")
    parser.add_argument(
        "--out", required=True, help="the .parquet file to write (missing folders are created)"
    )
    parser.add_argument(
        "--role", choices=("coder", "tester"), default="coder", help="the role verl trains"
    )
    parser.add_argument("--split", default="train")
    parser.add_argument("--ground-truth", choices=("record", "id"), default="record")
    parser.add_argument(
        "--env-class",
        choices=tuple(ENV_CLASSES.values()),
        default=None,
        help="add SkyRL-gym's columns: the role's env (codea1_coder, codea1_tester)",
    )
    parser.add_argument("--limit", type=nonnegative_int, default=None)
    tester = parser.add_argument_group("tester role: the frozen coder's answers")
    tester.add_argument("--codes", choices=CODE_SOURCES, default="gt+mutants")
    tester.add_argument("--mutants", type=nonnegative_int, default=3, help="mutants per problem")
    tester.add_argument(
        "--samples", type=positive_int, default=1, help="answers per problem (http)"
    )
    tester.add_argument("--coder-url", default=None, help="the frozen Code LLM's API root")
    tester.add_argument("--coder-model", default="coder")
    tester.add_argument(
        "--num-tests", type=positive_int, default=8, help="asserts the prompt asks for"
    )
    tester.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agents.integrations.verl``: write verl's parquet for a problem source.

    Bad flags are argparse errors (usage and ``PROG: error: argument --env-class: ...``, exit
    status 2); a bad input found later (an unknown ``--source``, a malformed or missing problems
    file, an unwritable ``--out``, a frozen coder server that fails) is one line,
    ``PROG: error: ProblemFormatError: data.jsonl:3: ...``, and exit status 2
    (``CODEA1_TRACEBACK=1`` prints the traceback too). Nothing is written unless every row
    could be built.

    Returns:
        0 when the file was written, 2 for a bad input.

    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.env_class is not None and args.env_class != ENV_CLASSES[args.role]:
        parser.error(
            f"argument --env-class: {args.env_class} is not the {args.role}'s env; "
            f"--role {args.role} rows need {ENV_CLASSES[args.role]}"
        )
    if args.role == "tester" and args.codes == "http" and not args.coder_url:
        parser.error("--codes http needs --coder-url (the frozen Code LLM's API root)")
    try:
        from agents.commands.argtypes import check_output

        check_output("--out", args.out, directory=False)  # before the work, not after
        _pyarrow()
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
    except ImportError as exc:
        if "pip install " not in str(exc):  # not the optional pyarrow: a bug, with its traceback
            raise
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except _input_errors() as exc:
        from agents.commands.cli import report_input_error

        return report_input_error(PROG, exc)  # as the codea1 commands answer
    print(json.dumps({"rows": count, "out": args.out, "role": args.role}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
