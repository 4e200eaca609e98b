"""LM-backed players: :class:`CoderPolicy` and :class:`TesterPolicy`.

Both turn env observations (``{"role", "prompt", "entry_point", "code"}``) into prompts with an
editable template (:mod:`agents.players.prompts`), sample from any
:class:`~agents.lm.interfaces.LanguageModel` (transformers, an OpenAI-compatible server, vLLM) and
return action texts, following the :class:`~agents.lm.interfaces.Policy` protocol. The trainer calls
:meth:`act_with_generations` to also get the token ids and log-probabilities.

This module re-exports the shared types, so ``from agents.players.policy import ...`` covers
:class:`SamplingParams`, :class:`Generation`, :class:`LanguageModel`, :class:`Policy` and
:class:`TransformersLM`.

Example:
    >>> from agents.lm.models import build_tiny_model
    >>> from agents.lm.tokenizer import load_tiny_tokenizer
    >>> tok = load_tiny_tokenizer()
    >>> coder = CoderPolicy(TransformersLM(build_tiny_model("nano", tok), tok))
    >>> obs = {"role": 0, "prompt": "def f(x: int) -> int:", "entry_point": "f", "code": ""}
    >>> answers = coder.act([obs])     # one fenced ```python answer per observation

"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agents.lm.interfaces import FinishReason, Generation, LanguageModel, Policy, SamplingParams
from agents.lm.transformers_lm import TransformersLM
from agents.players.prompts import (
    CODER_COMPACT,
    CODER_PROMPT,
    TESTER_COMPACT,
    TESTER_PROMPT,
    PromptTemplate,
    close_code_block,
)

__all__ = [
    "CODE_BLOCK_STOP",
    "CoderPolicy",
    "FinishReason",
    "Generation",
    "LanguageModel",
    "Policy",
    "RolePolicy",
    "SamplingParams",
    "TesterPolicy",
    "TransformersLM",
]

CODE_BLOCK_STOP = "\n```\n"
"""Default stop string: a closing fence on its own line. An opening fence (```` ```python ````)
never matches it, so a chat model that writes its own opening fence is not cut short."""

_ROLE_NAMES = {0: "coder", 1: "tester"}


class RolePolicy:
    """Shared machinery of the two LM players; use :class:`CoderPolicy` or :class:`TesterPolicy`.

    Args:
        lm: Any :class:`~agents.lm.interfaces.LanguageModel`.
        template: A template string or :class:`~agents.players.prompts.PromptTemplate`. Default: the
            paper-style instruction prompt when ``lm`` uses a chat template
            (``lm.uses_chat_template``), else the compact plain-text prompt.
        params: Sampling parameters; default: temperature 1.0 (the paper's rollout setting),
            the role's token budget, and :data:`CODE_BLOCK_STOP` as stop string.
        num_tests: How many ``assert`` lines the tester is asked for (``{num_tests}``).

    """

    role: ClassVar[int]
    chat_template_text: ClassVar[str]
    compact_template_text: ClassVar[str]
    default_max_new_tokens: ClassVar[int]

    def __init__(
        self,
        lm: LanguageModel,
        template: str | PromptTemplate | None = None,
        params: SamplingParams | None = None,
        num_tests: int = 8,
    ) -> None:
        if num_tests < 1:
            raise ValueError(f"num_tests must be >= 1, got {num_tests}")
        self.lm = lm
        if template is None:
            chat = bool(getattr(lm, "uses_chat_template", False))
            template = self.chat_template_text if chat else self.compact_template_text
        self.template = (
            template if isinstance(template, PromptTemplate) else PromptTemplate(template)
        )
        self.params = params or SamplingParams(
            temperature=1.0, max_new_tokens=self.default_max_new_tokens, stop=(CODE_BLOCK_STOP,)
        )
        self.num_tests = num_tests

    def build_prompt(self, observation: Mapping[str, Any]) -> str:
        """Render the prompt (before any chat template) for one observation.

        Raises:
            ValueError: If the observation belongs to the other role or lacks a field the
                template needs.

        """
        role = observation.get("role", self.role)
        if int(role) != self.role:
            raise ValueError(
                f"{type(self).__name__} got an observation for the "
                f"{_ROLE_NAMES.get(int(role), f'role {role}')}"
            )
        return self.template.render_observation(observation, self.num_tests)

    def answer(self, generation: Generation) -> str:
        """Turn a generation into the action text: a closed fenced block where one was begun.

        With a compact template the prompt opened the fence, so its opening line is put back in
        front of the completion; an unclosed fence (the stop string was cut off, or the budget ran
        out) gets its closing line.
        """
        text = generation.text
        if self.template.opens_code_block:
            text = "```python" + (text if text.startswith("\n") else "\n" + text)
        return close_code_block(text)

    def act_with_generations(
        self,
        observations: Sequence[Mapping[str, Any]],
        infos: Sequence[Mapping[str, Any]] | None = None,
        params: SamplingParams | None = None,
    ) -> list[Generation]:
        """Sample one generation per observation (for the trainer: ids and log-probabilities).

        Args:
            observations: Env observations of this policy's role.
            infos: Accepted for the :class:`~agents.lm.interfaces.Policy` protocol; not used.
            params: Overrides the policy's sampling parameters for this call (e.g. a seed).

        """
        prompts = [self.build_prompt(obs) for obs in observations]
        return self.lm.generate(prompts, params or self.params)

    def act(
        self,
        observations: Sequence[Mapping[str, Any]],
        infos: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[str]:
        """Return one action text per observation (see :meth:`answer`)."""
        return [self.answer(g) for g in self.act_with_generations(observations, infos)]


class CoderPolicy(RolePolicy):
    """The Code LLM: reads the problem, answers with the complete function in a python block."""

    role = 0
    chat_template_text = CODER_PROMPT
    compact_template_text = CODER_COMPACT
    default_max_new_tokens = 512


class TesterPolicy(RolePolicy):
    """The Test LLM: reads the problem and the candidate code (white-box), writes tests.

    It answers with ``num_tests`` lines ``assert entry_point(...) == expected`` aimed at the code's
    bugs.
    """

    role = 1
    chat_template_text = TESTER_PROMPT
    compact_template_text = TESTER_COMPACT
    default_max_new_tokens = 384
