r"""verl 0.9.1 reward loop: the ``codea1`` reward manager, batching samples into one referee call.

verl 0.9.1 scores rollouts in its *reward loop*: ``RewardLoopManager`` (driver) splits a batch
over ``reward.num_workers`` Ray actors (``RewardLoopWorker``), and each worker awaits one
``reward_manager.run_single(sample)`` task per sample, all at once (``asyncio.gather``; with the
agent loop, samples arrive one by one as rollouts finish). :class:`CodeA1RewardManager`
(a ``verl.experimental.reward_loop.reward_manager.base.RewardManagerBase``) gathers the samples
that reach ``run_single`` within ``batch_window_ms`` into ONE
:meth:`~agents.integrations.core.RewardCore.score` call, that is one frozen-tester call and one
``Referee.judge_many`` (one sandbox call), instead of one per sample. The scores are
:func:`agents.integrations.verl.compute_score`'s (the same rows, the same
:class:`~agents.integrations.core.RewardCore`): the coder's reward for coder rows, the tester's
for the tester rows of :func:`agents.integrations.verl.build_tester_rows`.

Loading: importing this module registers the class under the name ``codea1`` with verl's
``@register`` (``verl.experimental.reward_loop.reward_manager.register``). codea1 declares it in
the ``verl.plugins`` entry-point group, which ``import verl`` loads in every process (the
driver and each Ray reward worker; ``VERL_USE_EXTERNAL_PLUGINS=none`` turns it off), so with
codea1 installed in verl's environment::

    python -m verl.trainer.main_ppo ... reward.reward_manager.name=codea1 \
        +reward.reward_kwargs.opponent=boundary \
        +reward.reward_kwargs.mistake_book=/local/disk/codea1_book.sqlite

Without the entry point (codea1 importable but not installed, or plugins turned off), verl's
``importlib`` source imports the module by name (``pkg://``; a file path works too)::

    reward.reward_manager.source=importlib \
    reward.reward_manager.module.path=pkg://agents.integrations.verl_manager \
    reward.reward_manager.name=CodeA1RewardManager

Options are read from ``reward.reward_kwargs`` (the key verl's DAPO manager reads): the
``reward_kwargs`` of :func:`~agents.integrations.verl.compute_score` (``source``, ``opponent``,
``mode``, ``alpha``, ``k``, ``mistake_book``, ``seed``, ``num_tests``, ``workers``,
``opponent_url``, ``opponent_model``, ``update_book``; ``reward_url``, ``reward_timeout_s``,
``reward_retries``) plus ``batch_window_ms`` (20) and ``max_batch`` (1024). Only this manager
reads ``reward.reward_kwargs`` when it is selected, so any other key (a misspelling such as
``opponentt``, or the DAPO manager's ``overlong_buffer_cfg``) is an error naming the key(s):
``ValueError: CodeA1RewardManager: unknown reward.reward_kwargs key(s) ['opponentt']; known:
[...]``.
``reward.custom_reward_function`` is not needed and the ``compute_score`` verl passes is not
used: the rows are scored by the referee directly.

With ``reward_url`` (``+reward.reward_kwargs.reward_url=http://HOST:8011``, a running
``codea1 serve-reward``) each gathered batch is ONE ``POST /v1/rows`` request
(:mod:`agents.integrations.reward_client`) instead of a local referee call: the reward workers
build no core, sandbox or book and may sit on any Ray node, and the service scores their
requests with its one referee and one mistake book (the same rows and dicts as locally). The
scoring options are then the service's flags; ``reward_timeout_s`` and ``reward_retries`` tune
the client, and a service that is unreachable or answers an error fails every sample of the
batch with :class:`~agents.integrations.reward_client.RewardServiceError`.

verl is imported here only; it is not a codea1 dependency (verl 0.9.1 needs
``transformers<5.11``, see ``docs/integrations.md`` for its venv).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

try:
    from verl import DataProto
except ImportError as exc:  # not an extra: verl needs its own venv (docs/integrations.md)
    raise ImportError(
        "the verl reward manager needs verl 0.9: pip install verl==0.9.1 in its own venv "
        "(see docs/integrations.md#verl)"
    ) from exc
from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase
from verl.experimental.reward_loop.reward_manager.registry import REWARD_MANAGER, register

__all__ = ["NAME", "CodeA1RewardManager", "known_options", "reward_options"]

NAME = "codea1"
"""The name verl's ``reward.reward_manager.name`` selects this manager by."""

_MANAGER_KEYS = ("batch_window_ms", "max_batch")


def known_options() -> frozenset[str]:
    """The ``reward.reward_kwargs`` keys the manager reads (anything else is an error).

    :data:`~agents.integrations.verl.SCORING_KWARGS`, the ``reward_url`` client's
    (:data:`~agents.integrations.reward_client.REMOTE_KWARGS`), ``batch_window_ms`` and
    ``max_batch``.
    """
    from agents.integrations.reward_client import REMOTE_KWARGS
    from agents.integrations.verl import SCORING_KWARGS

    return frozenset(SCORING_KWARGS) | frozenset(REMOTE_KWARGS) | frozenset(_MANAGER_KEYS)


def reward_options(config: Any) -> dict[str, Any]:
    """``config.reward.reward_kwargs`` as a plain dict (empty when absent).

    Args:
        config: verl's trainer config (an OmegaConf DictConfig, or a mapping in tests).

    """
    reward = config.get("reward") if hasattr(config, "get") else None
    options = reward.get("reward_kwargs") if reward is not None else None
    if options is None:
        return {}
    if hasattr(options, "_metadata"):  # an OmegaConf container
        from omegaconf import OmegaConf

        options = OmegaConf.to_container(options, resolve=True)
    if not isinstance(options, Mapping):
        raise TypeError(f"reward.reward_kwargs must be a mapping, got {type(options).__name__}")
    return {str(key): value for key, value in options.items()}


class CodeA1RewardManager(RewardManagerBase):  # type: ignore[misc]
    """verl's reward manager ``codea1``: concurrent ``run_single`` calls share one referee call.

    Args:
        config: verl's trainer config; options from ``reward.reward_kwargs`` (module docstring).
        tokenizer: The policy's tokenizer (responses are decoded with
            ``skip_special_tokens=True``, as verl's ``naive`` manager does).
        compute_score: What verl passes as the reward function; not used (the rows are scored by
            :class:`~agents.integrations.core.RewardCore`).
        reward_router_address: verl's reward-model router; not used.
        reward_model_tokenizer: verl's reward-model tokenizer; not used.
        **kwargs: Other keywords verl may pass; ignored.

    Raises:
        ValueError: an unknown ``reward.reward_kwargs`` key (named, with the known ones: see
            :func:`known_options`), bad ``batch_window_ms``/``max_batch``, or ``reward_url``
            together with local scoring options.

    Attributes:
        remote: Where the batches are posted (``reward_url``), or None to score locally.
        batch_window_s: How long the first waiting sample waits for others.
        max_batch: A batch is scored at once when it has this many samples.
        batch_sizes: The size of every batch scored so far (this process).

    """

    def __init__(
        self,
        config: Any,
        tokenizer: Any,
        compute_score: Any = None,
        reward_router_address: str | None = None,
        reward_model_tokenizer: Any = None,
        **kwargs: Any,
    ) -> None:
        options = reward_options(config)
        known = known_options()
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(
                f"{type(self).__name__}: unknown reward.reward_kwargs key(s) {unknown}; "
                f"known: {sorted(known)}"
            )
        super().__init__(config, tokenizer, compute_score)
        self.batch_window_s = float(options.pop("batch_window_ms", 20.0)) / 1000.0
        self.max_batch = int(options.pop("max_batch", 1024))
        if self.batch_window_s < 0 or self.max_batch < 1:
            raise ValueError("reward_kwargs: need batch_window_ms >= 0 and max_batch >= 1")
        from agents.integrations.verl import remote_scoring

        self.remote = remote_scoring(options)
        self.options = options
        self.batch_sizes: list[int] = []
        self._pending: list[tuple[Any, asyncio.Future[dict[str, float]]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def _core(self) -> Any:
        from agents.integrations.verl import core_for

        return core_for(self.options)

    async def run_single(self, data: DataProto) -> dict[str, Any]:
        """Score one sample (the last sequence of ``data``), batched with concurrent calls.

        Returns:
            ``{"reward_score": score, "reward_extra_info": {...}}``: ``score`` is the trained
            role's reward (the env's ``info["rewards"][role]``); the extra info holds the
            :data:`~agents.integrations.verl.SCORE_KEYS` and ``batch_size`` (how many samples
            shared this sample's referee call).

        Raises:
            RequestError: The sample names an unknown problem, a malformed record, or is a
                tester row without its frozen code (with ``reward_url``: a
                ``RewardServiceError`` for the whole batch, naming the row).
            RewardServiceError: With ``reward_url``: the service is unreachable or answered an
                error.

        """
        from agents.integrations.reward_client import wire_row
        from agents.integrations.verl import row_for

        item = data[-1:][0]
        response_ids = item.batch["responses"]
        length = response_ids.shape[-1]
        valid = int(item.batch["attention_mask"][-length:].sum())
        text = self.tokenizer.decode(response_ids[:valid], skip_special_tokens=True)
        extra_info = item.non_tensor_batch.get("extra_info") or {}
        ground_truth = item.non_tensor_batch["reward_model"]["ground_truth"]
        row = (
            wire_row(ground_truth, extra_info, text)
            if self.remote is not None
            else row_for(self._core(), ground_truth, extra_info, text)
        )
        scores = await self._submit(row)
        return {"reward_score": scores["score"], "reward_extra_info": scores}

    async def _submit(self, row: Any) -> dict[str, float]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, float]] = loop.create_future()
        self._pending.append((row, future))
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_later(self.batch_window_s, self._flush)
        return await future

    def _flush(self) -> None:
        """Start scoring what waits (in a thread, so the loop keeps collecting the next batch)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if not batch:
            return
        task = asyncio.get_running_loop().create_task(self._score(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _score(self, batch: list[tuple[Any, asyncio.Future[dict[str, float]]]]) -> None:
        from agents.integrations.reward_client import post_rows
        from agents.integrations.verl import SCORE_KEYS, score_rows

        rows = [row for row, _ in batch]
        self.batch_sizes.append(len(rows))
        try:
            loop = asyncio.get_running_loop()
            if self.remote is not None:
                results = await loop.run_in_executor(None, post_rows, self.remote, rows, SCORE_KEYS)
            else:
                results = await loop.run_in_executor(None, score_rows, self._core(), rows)
        except BaseException as exc:  # every waiting sample gets the error
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for (_, future), scores in zip(batch, results, strict=True):
            if not future.done():
                future.set_result({**scores, "batch_size": float(len(rows))})


def _register() -> None:
    """Register :class:`CodeA1RewardManager` as ``codea1`` unless a copy of it already is.

    verl's ``importlib`` source loads this file a second time under another module name; that
    copy leaves the first registration in place instead of failing verl's duplicate check.
    """
    if NAME not in REWARD_MANAGER:
        register(NAME)(CodeA1RewardManager)


_register()
