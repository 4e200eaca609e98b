"""The env's scoring as a TRL ``GRPOTrainer`` reward function (the Golden Tests mode).

TRL users keep their own trainer and get our sandbox and reward: each completion is judged by the
:class:`codea1_env.scoring.referee.Referee` against its problem's GT tests, and its reward is the GT
pass rate (``RewardConfig(mode="golden")``). All completions of a batch are judged in one batched
sandbox call.

The dataset needs a ``task_id`` column naming each row's problem (TRL passes every dataset column
to reward functions as a keyword argument).

Example:
    >>> from trl import GRPOConfig, GRPOTrainer                       # doctest: +SKIP
    >>> from agents.integrations.trl import make_trl_reward
    >>> reward = make_trl_reward(problems)  # a ProblemSource, list or dict  # doctest: +SKIP
    >>> trainer = GRPOTrainer(model, reward_funcs=reward,             # doctest: +SKIP
    ...                       args=GRPOConfig(...),
    ...                       train_dataset=dataset)  # dataset: "prompt" and "task_id" columns
    >>> trainer.train(); reward.close()                               # doctest: +SKIP

See ``examples/trl_grpo.py`` for a complete CPU run.

"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from codea1_env.problems.problem import Problem

__all__ = ["GoldenTestReward", "completion_text", "make_trl_reward"]


def completion_text(completion: Any) -> str:
    """Return the text of a TRL completion.

    A completion is a string (standard format) or a list of chat messages (conversational
    format; the assistant messages' contents are joined).

    Raises:
        TypeError: a completion of any other shape.

    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and all(isinstance(m, Mapping) for m in completion):
        return "".join(
            str(m.get("content", ""))
            for m in completion
            if m.get("role", "assistant") == "assistant"
        )
    raise TypeError(
        f"a completion must be a string or a list of chat messages, got {type(completion).__name__}"
    )


def _problem_index(problems: Any) -> Any:
    """Something indexable by task id: a ProblemSource, a mapping, or a dict built from a list."""
    if isinstance(problems, Mapping):
        return problems
    if hasattr(problems, "ids") and hasattr(problems, "__getitem__"):
        return problems
    if isinstance(problems, Iterable):
        index = {}
        for problem in problems:
            if not isinstance(problem, Problem):
                raise TypeError(f"expected Problem values, got {type(problem).__name__}")
            index[problem.task_id] = problem
        return index
    raise TypeError(
        "make_trl_reward needs a ProblemSource, a mapping task_id -> Problem or a list of "
        f"Problems, got {type(problems).__name__}"
    )


class GoldenTestReward:
    """A TRL reward function: the GT pass rate of each completion, judged by the referee.

    Called as TRL calls reward functions,
    ``reward(prompts, completions, completion_ids=..., task_id=[...], **other_columns)``, it
    returns one float per completion in ``[0, 1]``.

    Args:
        problems: A ProblemSource, a mapping ``task_id -> Problem`` or a list of Problems.
        referee: A referee to use (not closed by :meth:`close`); by default one is built with
            the local sandbox, no mistake book and ``RewardConfig(mode="golden")``.
        answer_prefix: Text the prompt already wrote as the start of the answer, put back in
            front of each completion before judging: ``"```python"`` when the prompts end
            with an opened code fence (the compact prompts of the tiny models), so that the code
            is read from the fenced block and whatever the model wrote after it is ignored.

    Attributes:
        __name__: ``"codea1_golden"`` (TRL logs rewards under the function's name).
        calls: Number of calls so far.
        sandbox_seconds: Total seconds spent judging (for the benchmark's sandbox share).

    """

    __name__ = "codea1_golden"

    def __init__(self, problems: Any, referee: Any = None, *, answer_prefix: str = "") -> None:
        self._problems = _problem_index(problems)
        self.answer_prefix = answer_prefix
        self._owns_referee = referee is None
        if referee is None:
            from codea1_env.scoring.referee import Referee
            from codea1_env.scoring.rewards import RewardConfig

            referee = Referee(reward_config=RewardConfig(mode="golden"))
        self.referee = referee
        self.calls = 0
        self.sandbox_seconds = 0.0

    def _problem(self, task_id: Any) -> Problem:
        try:
            problem = self._problems[task_id]
        except (KeyError, IndexError) as exc:
            raise KeyError(f"codea1 reward: unknown task_id {task_id!r}") from exc
        if not isinstance(problem, Problem):
            raise TypeError(f"codea1 reward: task_id {task_id!r} maps to a non-Problem")
        return problem

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        completion_ids: Sequence[Any] | None = None,
        **columns: Any,
    ) -> list[float | None]:
        """Judge ``completions`` (row ``i`` against the problem ``columns["task_id"][i]``).

        Raises:
            ValueError: no ``task_id`` column, or lengths that do not match.
            KeyError: a task id that is not among the problems.

        """
        completions = list(completions or [])
        task_ids = columns.get("task_id")
        if task_ids is None:
            raise ValueError(
                "codea1 reward: the dataset needs a 'task_id' column naming each row's problem"
            )
        task_ids = list(task_ids)
        if len(task_ids) != len(completions):
            raise ValueError(
                f"codea1 reward: {len(completions)} completions but {len(task_ids)} task ids"
            )
        texts = [self.answer_prefix + completion_text(c) for c in completions]
        order: dict[Any, list[int]] = {}
        for row, task_id in enumerate(task_ids):
            order.setdefault(task_id, []).append(row)
        batch: list[tuple[Problem, list[str], list[list[str]]]] = [
            (self._problem(task_id), [texts[r] for r in rows], [[] for _ in rows])
            for task_id, rows in order.items()
        ]
        started = time.perf_counter()
        judgements = self.referee.judge_many(batch, update_book=False)
        self.sandbox_seconds += time.perf_counter() - started
        self.calls += 1
        rewards: list[float | None] = [None] * len(completions)
        for rows, judgement in zip(order.values(), judgements, strict=True):
            for r, value in zip(rows, judgement.gt_pass_rates, strict=True):
                rewards[r] = float(value)
        return rewards

    def close(self) -> None:
        """Close the referee when this object built it. Idempotent."""
        if self._owns_referee and self.referee is not None:
            self.referee.close()
            self.referee = None


def make_trl_reward(
    problems: Any, referee: Any = None, *, answer_prefix: str = ""
) -> GoldenTestReward:
    """Return a TRL reward function scoring completions by their GT pass rate (golden mode).

    Args:
        problems: A ProblemSource (``codea1_env.problems.load_source(...)``), a mapping
            ``task_id -> Problem`` or a list of Problems.
        referee: Optional referee to use; by default a golden-mode one with the local sandbox.
        answer_prefix: See :class:`GoldenTestReward`.

    """
    return GoldenTestReward(problems, referee, answer_prefix=answer_prefix)
