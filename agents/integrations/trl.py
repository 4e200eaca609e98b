"""The env's scoring as a TRL ``GRPOTrainer`` reward function (the Golden Tests mode).

TRL users keep their own trainer and get our sandbox and reward: each completion is played as the
coder's move of a duel and scored through :class:`agents.integrations.core.RewardCore` with
``opponent="gt"``, the path every adapter and ``CodeTestDuel-Coder-v0(opponent="gt")`` share. Its
reward is the GT pass rate (``RewardConfig(mode="golden")``), and 0 for a move that cannot score
(empty, too long, no code: the env's reasons). All completions of a batch are judged in one batched
sandbox call.

The dataset needs a ``task_id`` column naming each row's problem (TRL passes every dataset column
to reward functions as a keyword argument). When TRL passes ``log_extra`` (TRL >= 1.x), each
completion's reason (``""`` when it was scored) is logged as the column ``codea1_reason``.

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


def _message_text(content: Any) -> str:
    """The text of one chat message's ``content``: a string, None, or a list of content blocks."""
    if content is None:
        return ""  # e.g. an assistant turn that only calls a tool
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])  # {"type": "text", "text": ...}; images carry none
        return "".join(parts)
    raise TypeError(f"a chat message's content must be text, got {type(content).__name__}")


def completion_text(completion: Any) -> str:
    """Return the text of a TRL completion.

    A completion is a string (standard format) or a list of chat messages (conversational
    format). The assistant messages' contents are joined with newlines, so that a code fence that
    closes one message stays a line of its own; a content may be a string, None (a turn that only
    calls a tool) or a list of content blocks (their ``"text"`` parts are read).

    Raises:
        TypeError: a completion of any other shape.

    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and all(isinstance(m, Mapping) for m in completion):
        return "\n".join(
            _message_text(m.get("content"))
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
    if isinstance(problems, str):
        raise TypeError(
            f"make_trl_reward needs problems, got the string {problems!r}: for a source by name "
            f"pass codea1_env.problems.load_source({problems!r})"
        )
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
    """A TRL reward function: the GT pass rate of each completion, scored as the env scores it.

    Called as TRL calls reward functions,
    ``reward(prompts, completions, completion_ids=..., task_id=[...], **other_columns)``, it
    returns one float per completion in ``[0, 1]``: the reward
    ``CodeTestDuel-Coder-v0(opponent="gt")`` gives the same answer. A completion that is not
    text (None, a number) scores 0 with the reason ``not_text``; ``bytes`` are decoded as UTF-8
    as the env decodes them (``binary`` when they are not UTF-8). Each row's reason is in
    :attr:`last_reasons`.

    Args:
        problems: A ProblemSource, a mapping ``task_id -> Problem`` or a list of Problems.
        referee: A golden-mode referee to use (not closed by :meth:`close`); by default one is
            built with the local sandbox, an in-memory mistake book and
            ``RewardConfig(mode="golden")``.
        answer_prefix: Text the prompt already wrote as the start of the answer, put back in
            front of each completion before judging: ``"```python"`` when the prompts end
            with an opened code fence (the compact prompts of the tiny models), so that the code
            is read from the fenced block and whatever the model wrote after it is ignored.
        workers: Sandbox workers of the default referee (default: one per core).

    Attributes:
        __name__: ``"codea1_golden"`` (TRL logs rewards under the function's name).
        calls: Number of calls so far.
        sandbox_seconds: Total seconds spent judging (for the benchmark's sandbox share).
        last_reasons: Per completion of the last call, why it could not score (``""`` when it
            was scored): the env's reasons (``empty``, ``too_long``, ``no_code``, ``not_text``).

    Raises:
        ValueError: ``referee`` does not score in golden mode.
        TypeError: ``answer_prefix`` is not a string.

    """

    __name__ = "codea1_golden"

    def __init__(
        self,
        problems: Any,
        referee: Any = None,
        *,
        answer_prefix: str = "",
        workers: int | None = None,
    ) -> None:
        from agents.integrations.core import RewardCore

        if not isinstance(answer_prefix, str):
            raise TypeError(
                "make_trl_reward: answer_prefix must be a string, got "
                f"{type(answer_prefix).__name__}"
            )
        self._problems = _problem_index(problems)
        if referee is not None and referee.reward_config.mode != "golden":
            raise ValueError(
                "make_trl_reward: the referee must score in golden mode "
                f"(RewardConfig(mode='golden')), got mode {referee.reward_config.mode!r}"
            )
        self.answer_prefix = answer_prefix
        index = self._problems
        source = list(index.values()) if isinstance(index, Mapping) else index
        # The core builds and owns the default referee, or borrows the one given.
        self._core: RewardCore | None = RewardCore(
            source, opponent="gt", referee=referee, workers=workers, update_book=False
        )
        self.calls = 0
        self.sandbox_seconds = 0.0
        self.last_reasons: list[str] = []

    @property
    def referee(self) -> Any:
        """The referee that scores the completions (None once closed)."""
        return None if self._core is None else self._core.referee

    def _problem(self, row: int, task_id: Any) -> Problem:
        if not isinstance(task_id, str):
            raise TypeError(
                f"codea1 reward: task_id[{row}] must be a string, got {type(task_id).__name__}"
            )
        try:
            problem = self._problems[task_id]
        except (KeyError, IndexError) as exc:
            raise KeyError(f"codea1 reward: unknown task_id {task_id!r}") from exc
        if not isinstance(problem, Problem):
            raise TypeError(f"codea1 reward: task_id {task_id!r} maps to a non-Problem")
        return problem

    def _answer(self, completion: Any) -> Any:
        """The coder's move for a completion; a completion that is not text is passed as is."""
        if isinstance(completion, (bytes, bytearray)):
            try:
                return self.answer_prefix + bytes(completion).decode("utf-8")
            except UnicodeDecodeError:
                return completion  # the duel scores it 0 with the reason "binary"
        try:
            return self.answer_prefix + completion_text(completion)
        except TypeError:
            return completion  # the duel scores it 0 with the reason "not_text"

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
            TypeError: a task id that is not a string.
            RuntimeError: called after :meth:`close`.

        """
        from agents.integrations.core import CoderRow

        if self._core is None:
            raise RuntimeError("codea1 reward: closed (close() was called)")
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
        rows = [
            CoderRow(self._problem(row, task_id), self._answer(completion))
            for row, (task_id, completion) in enumerate(zip(task_ids, completions))
        ]
        started = time.perf_counter()
        results = self._core.score(rows)
        self.sandbox_seconds += time.perf_counter() - started
        self.calls += 1
        self.last_reasons = [str(r.info["reasons"]["coder"]) for r in results]  # type: ignore[union-attr]
        log_extra = columns.get("log_extra")
        if callable(log_extra):
            log_extra("codea1_reason", list(self.last_reasons))
        return [float(r.coder) for r in results]  # type: ignore[union-attr]

    def close(self) -> None:
        """Close the referee if this object built it; no call may follow. Idempotent."""
        core, self._core = self._core, None
        if core is not None:
            core.close()

    def __enter__(self) -> GoldenTestReward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_trl_reward(
    problems: Any,
    referee: Any = None,
    *,
    answer_prefix: str = "",
    workers: int | None = None,
) -> GoldenTestReward:
    """Return a TRL reward function scoring completions by their GT pass rate (golden mode).

    Args:
        problems: A ProblemSource (``codea1_env.problems.load_source(...)``), a mapping
            ``task_id -> Problem`` or a list of Problems.
        referee: Optional golden-mode referee to use; by default one with the local sandbox.
        answer_prefix: See :class:`GoldenTestReward`.
        workers: Sandbox workers of the default referee (default: one per core).

    """
    return GoldenTestReward(problems, referee, answer_prefix=answer_prefix, workers=workers)
