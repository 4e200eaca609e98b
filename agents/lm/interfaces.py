"""The small interfaces every policy shares: sampling parameters, generations, the protocols.

A :class:`LanguageModel` turns a batch of prompt strings into a batch of :class:`Generation`
values (text plus the token ids and log-probabilities a trainer needs). A :class:`Policy` turns a
batch of environment observations into a batch of action texts; scripted baselines and the LM role
policies of :mod:`agents.players.policy` both follow it; it is defined once, in
:mod:`codea1_env.baselines.scripted`, and re-exported here. This module imports neither torch nor
transformers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from codea1_env.game.policy import Policy

__all__ = ["FinishReason", "Generation", "LanguageModel", "Policy", "SamplingParams"]

FinishReason = Literal["stop", "length"]
"""``"stop"``: the model emitted an end-of-sequence token or a stop string;
``"length"``: it reached ``max_new_tokens``."""


STREAM_STEP = 0x9E3779B97F4A7C15
"""The golden-ratio step between the stream keys of consecutive prompts (splitmix64's)."""


def stream_key(seed: int, index: int) -> int:
    """The 64-bit key of prompt ``index``'s random stream: ``seed + index * STREAM_STEP``.

    :class:`~agents.lm.transformers_lm.TransformersLM` mixes it into the prompt's generator
    seed; the HTTP backend sends it as a request's seed, so that the bundled server samples
    what the local model samples, however the prompts are split into requests.
    """
    return (seed + index * STREAM_STEP) & 0xFFFF_FFFF_FFFF_FFFF


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion per prompt.

    Attributes:
        temperature: Softmax temperature; ``0`` means greedy decoding.
        top_p: Nucleus sampling: sample among the most likely tokens whose probabilities sum to at
            least ``top_p`` (``1.0`` disables it).
        max_new_tokens: Most tokens generated per completion.
        stop: Strings that end a completion. The returned text stops before the first one (as in
            the OpenAI API); the token ids still hold the tokens that completed it.
        seed: Seed for this call's random draws; ``None`` draws from the global RNG. The same
            prompts, parameters and seed give the same completions on the same machine. Each
            prompt has its own random stream, keyed by ``seed + seed_offset + index``, so a
            prompt's completion does not depend on the other prompts of the call.
        seed_offset: Index of this call's first prompt in a larger batch that was split across
            calls or processes (data-parallel rollouts): the split batch then samples exactly
            what the whole batch would have.

    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = None
    seed_offset: int = 0

    def __post_init__(self) -> None:
        if not self.temperature >= 0.0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.seed_offset < 0:
            raise ValueError(f"seed_offset must be >= 0, got {self.seed_offset}")
        if isinstance(self.stop, str):
            raise TypeError("stop must be a sequence of strings, not a single string")
        stop = tuple(self.stop)
        if any(not isinstance(s, str) or not s for s in stop):
            raise ValueError(f"stop strings must be non-empty strings, got {stop!r}")
        object.__setattr__(self, "stop", stop)

    def replace(self, **changes: Any) -> SamplingParams:
        """Return a copy with some fields changed, e.g. ``params.replace(seed=3)``."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Generation:
    """One sampled completion.

    Attributes:
        text: The completion text, without the prompt, special tokens or the stop string.
        prompt_ids: Token ids of the prompt as the model saw it (chat template applied). Empty
            when the backend does not expose tokens (an HTTP server).
        completion_ids: Token ids of the completion, including a final end-of-sequence token and
            the tokens that completed a stop string. Empty when the backend does not expose them.
        logprobs: One log-probability per completion token under the distribution it was actually
            sampled from (temperature and top-p applied; for greedy decoding, the untempered
            model distribution). Empty when the backend does not return them.
        finish_reason: See :data:`FinishReason`.
        prompt: The prompt text as the model saw it (chat template applied).

    """

    text: str
    prompt_ids: tuple[int, ...] = ()
    completion_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()
    finish_reason: FinishReason = "length"
    prompt: str = ""


@runtime_checkable
class LanguageModel(Protocol):
    """Anything that samples completions for a batch of prompts.

    ``prompts`` are user messages: a backend with a chat template wraps each in it. Implementations:
    :class:`agents.lm.transformers_lm.TransformersLM`, :class:`agents.lm.http.OpenAICompatibleLM`,
    :class:`agents.lm.vllm.VLLMLM`.
    """

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Generation]:
        """Return one :class:`Generation` per prompt, in order."""
        ...
