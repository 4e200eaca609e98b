"""Kept as a documented import path; the code lives in :mod:`agents.players.prompts`."""

from agents.players.prompts import (
    CODER_COMPACT,
    CODER_PROMPT,
    TEMPLATE_FIELDS,
    TESTER_COMPACT,
    TESTER_PROMPT,
    PromptTemplate,
    close_code_block,
    ends_with_open_fence,
)

__all__ = [
    "CODER_COMPACT",
    "CODER_PROMPT",
    "TEMPLATE_FIELDS",
    "TESTER_COMPACT",
    "TESTER_PROMPT",
    "PromptTemplate",
    "close_code_block",
    "ends_with_open_fence",
]
