"""Kept as a documented import path; the code lives in :mod:`agents.players.prompts`."""

from agents.players.prompts import (
    CODER_AUTHORS,
    CODER_AUTHORS_SYSTEM,
    CODER_COMPACT,
    CODER_PROMPT,
    PROMPT_STYLES,
    TEMPLATE_FIELDS,
    TESTER_AUTHORS,
    TESTER_AUTHORS_SFT,
    TESTER_AUTHORS_SYSTEM,
    TESTER_COMPACT,
    TESTER_PROMPT,
    PromptTemplate,
    close_code_block,
    ends_with_open_fence,
)

__all__ = [
    "CODER_AUTHORS",
    "CODER_AUTHORS_SYSTEM",
    "CODER_COMPACT",
    "CODER_PROMPT",
    "PROMPT_STYLES",
    "TEMPLATE_FIELDS",
    "TESTER_AUTHORS",
    "TESTER_AUTHORS_SFT",
    "TESTER_AUTHORS_SYSTEM",
    "TESTER_COMPACT",
    "TESTER_PROMPT",
    "PromptTemplate",
    "close_code_block",
    "ends_with_open_fence",
]
