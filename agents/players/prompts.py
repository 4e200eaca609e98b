r"""Prompt templates for the two players, kept as editable ``str.format`` templates.

Fields a template may use (all optional):

- ``{prompt}``: the problem statement (for function problems: signature and docstring), with
  trailing whitespace removed;
- ``{entry_point}``: the name of the function under test;
- ``{code}``: the candidate code the tester must break (tester only), trailing whitespace removed;
- ``{num_tests}``: how many ``assert`` lines the tester is asked for (8 in Code-A1).

Literal braces in a template are doubled (``{{`` and ``}}``), as ``str.format`` wants.

Three families:

- ``*_PROMPT``: instructions in the spirit of the Code-A1 paper, for instruction-tuned chat models.
  The coder answers with the complete function in a fenced ``python`` block; the tester reads the
  question and the candidate code (white-box) and answers with exactly ``num_tests`` lines
  ``assert entry_point(...) == ...`` in a fenced block, aiming at inputs the code gets wrong.
- ``*_AUTHORS`` (with ``*_AUTHORS_SYSTEM``): the Code-A1 authors' own messages, word for word, a
  system message and a user message per role (see the constants for their sources). The system
  message is not part of the template: the language model adds it (``system_prompt`` of
  :class:`~agents.lm.transformers_lm.TransformersLM`; :func:`with_system_prompt`) when it renders
  the prompt with the tokenizer's chat template.
- ``*_COMPACT``: short, regular prompts for the tiny CPU models, which take plain text. They end
  with an opened code fence (```` ```python ````) and no newline, so the model itself emits the
  newline and the code: a prompt that ends in a newline right before indented code (``"):\n"``)
  breaks byte-level BPE generation, because in training text that newline is merged with the
  indentation that follows.
"""

from __future__ import annotations

import copy
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

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
    "PromptStyle",
    "PromptTemplate",
    "close_code_block",
    "ends_with_open_fence",
    "prompt_style",
    "with_system_prompt",
]

TEMPLATE_FIELDS: frozenset[str] = frozenset({"prompt", "entry_point", "code", "num_tests"})

CODER_PROMPT = """\
You are an expert Python programmer. Solve the following programming problem.

```python
{prompt}
```

Write the complete implementation of `{entry_point}`, including the signature and any imports or \
helper functions it needs, in a single ```python code block. Do not write tests, example usage \
or explanations."""

TESTER_PROMPT = """\
You are an expert software tester. Below is a programming problem and a candidate solution \
written by someone else. The candidate may be wrong. Your job is to write unit tests that expose \
its bugs.

Problem:
```python
{prompt}
```

Candidate solution:
```python
{code}
```

Read the candidate carefully and find the inputs it handles incorrectly: edge cases, boundary \
values, empty or unusual (but valid) inputs. Then write exactly {num_tests} unit tests, one per \
line, each of the form `assert {entry_point}(...) == expected`, where `expected` is the CORRECT \
output according to the problem statement, not what the candidate returns. Use only inputs that \
are valid for the problem. Answer with the {num_tests} assert lines in a single ```python code \
block and nothing else."""

CODER_COMPACT = """\
### Problem
{prompt}
### Solution
```python"""

TESTER_COMPACT = """\
### Problem
{prompt}
### Code
```python
{code}
```
### {num_tests} tests that break the code
```python"""

# The Code-A1 authors' prompts (github.com/ZJU-REAL/Code-A1, commit e3bc368), kept verbatim as
# data. Both go through the tokenizer's chat template with add_generation_prompt=True.
#
# Coder: the "prompt" column of Code-A1/code/rl/val_data/validation_data_mix.parquet (the same
# two messages in all 542 rows, HumanEval+ and MBPP+), which verl's RLHFDataset renders
# (data.prompt_key "prompt"); the question is the problem as the coder sees it (signature and
# docstring). The training parquet, kodcode_hard_dual_model_training_data_mix.parquet, is not in
# the released snapshot (its blob is missing), so its coder messages could not be compared.
CODER_AUTHORS_SYSTEM = "You are a helpful code completion assistant."
CODER_AUTHORS = """\
Given the following Question, complete the function. Output the complete function inside \
'```python ... ```' code block, and do not output anything else.

Question:
{prompt}"""

# Tester: Code-A1/code/rl/trainer_a1.py, RayA1Trainer._prepare_model_b_batch_phase2: the system
# message at line 443, the user message at lines 444-468 (the f-string of the non-"sft" branch,
# which opens with a newline and ends with one: both kept). The question is their
# `clean_description`, the code the coder's extracted program (`extract_code_from_response`,
# stripped of newlines). Their "8" is {num_tests} here (TrainConfig.k, 8 by default), so K = 8
# renders their text exactly. TESTER_AUTHORS_SFT below is the other branch of that line.
TESTER_AUTHORS_SYSTEM = "You are a helpful test case generation assistant."
TESTER_AUTHORS = """
# Role
You are specializing in finding specific inputs that cause `Buggy Code` to behave differently \
from the requirements (`Question`).

# Task
Generate {num_tests} assertion-based test cases to detect bugs for the function in `Buggy Code` \
according to the `Question`.

# Strategy
1. **Attack Logic Gaps**: Analyze where the `Buggy Code` logic might be "too simple" compared to \
the `Question`. Construct input `parameters` that hit these blind spots (e.g., missing \
constraints, misinterpreted rules, over-simplified logic).
2. **Prioritize Complexity**: Prefer complex input `parameters` (e.g., boundary values, nested \
loops, compound conditions, rare branches) over simple ones. Ensure every logical branch is \
stressed and every potential issue is covered.
3. **Zero Redundancy**: Do not brute-force generating trivial or repetitive tests. Only the first \
few generated tests will be evaluated, so quality and ordering matter more than quantity.

# Context
Question:
{prompt}

Buggy Code:
```python
{code}
```

# Output Format
Output ALL the assert statements inside ONE '```python ... ```' code block.
Format: 'assert function_name(parameters) == answer'
"""

# Tester, "sft" branch: the user message of trainer_a1.py line 444 that the authors use when the
# tester's checkpoint path contains "sft" (their f-string's '\\n' is a backslash and an n, kept);
# the same system message; the code is not fenced there.
TESTER_AUTHORS_SFT = (
    "Given the following Question, generate {num_tests} assert-based test cases to detect bugs in "
    "the following python function Buggy Code. Each test case must be in the format: "
    "'assert function_name(parameters) == answer', and split by '\\n'. Output all assert "
    "statements inside '```python ... ```' code block, and do not output anything else."
    "\n\nQuestion:\n{prompt}\n\nBuggy Code:\n{code}"
)

PROMPT_STYLES: tuple[str, ...] = ("chat", "compact", "authors", "authors-sft")
"""The names :func:`prompt_style` takes (``TrainConfig.prompt_style``)."""

_OPEN_FENCE_AT_END = re.compile(r"```[\w+.-]*[ \t]*\Z")


@dataclass(frozen=True)
class PromptTemplate:
    r"""A validated ``str.format`` template over :data:`TEMPLATE_FIELDS`.

    Args:
        text: The template text.

    Raises:
        ValueError: If the template names a field outside :data:`TEMPLATE_FIELDS`, uses
            positional fields, reaches into a field (``{prompt.upper}``, ``{num_tests[0]}``),
            or does not render (a bad conversion or format spec: it is tried on sample values).

    Example:
        >>> t = PromptTemplate("Fix {entry_point}: {prompt}")
        >>> t.render(prompt="def f(x):", entry_point="f")
        'Fix f: def f(x):'

    """

    text: str

    def __post_init__(self) -> None:
        try:
            parsed = list(string.Formatter().parse(self.text))
        except ValueError as exc:
            raise ValueError(f"invalid prompt template: {exc}") from exc
        names = {name for _, name, _, _ in parsed if name is not None}
        for name in names:
            if name == "" or name.isdigit():
                raise ValueError("prompt templates take named fields only, e.g. {prompt}")
            base = re.split(r"[.\[]", name, maxsplit=1)[0]
            if base not in TEMPLATE_FIELDS:
                raise ValueError(
                    f"unknown template field {{{base}}}; allowed: {sorted(TEMPLATE_FIELDS)}"
                )
            if name != base:
                raise ValueError(
                    f"template field {{{name}}}: fields are filled as they are, not indexed or "
                    f"read into; use {{{base}}}"
                )
        sample = {field: "x" for field in TEMPLATE_FIELDS} | {"num_tests": 8}
        try:  # a conversion or a format spec that does not fit the values fails here, not later
            self.text.format(**sample)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            raise ValueError(f"prompt template does not render: {exc}") from None

    @property
    def fields(self) -> frozenset[str]:
        """The fields this template uses."""
        return frozenset(
            re.split(r"[.\[]", name, maxsplit=1)[0]
            for _, name, _, _ in string.Formatter().parse(self.text)
            if name
        )

    @property
    def opens_code_block(self) -> bool:
        """Whether a rendered prompt ends inside an opened code fence (the compact style)."""
        return ends_with_open_fence(self.text)

    def render(self, **values: Any) -> str:
        """Fill the template; fields it does not use are ignored.

        Raises:
            KeyError: If the template uses a field that is not given.

        """
        missing = self.fields - values.keys()
        if missing:
            raise KeyError(f"prompt template needs {sorted(missing)}")
        return self.text.format(**values)

    def render_observation(self, observation: Mapping[str, Any], num_tests: int = 8) -> str:
        """Fill the template from an env observation (``prompt``, ``entry_point``, ``code``).

        Raises:
            ValueError: If the observation lacks a field the template uses.

        """
        values: dict[str, Any] = {"num_tests": num_tests}
        for key in ("prompt", "entry_point", "code"):
            if key in observation:
                values[key] = str(observation[key]).rstrip()
        missing = self.fields - values.keys()
        if missing:
            raise ValueError(f"observation lacks {sorted(missing)} needed by the prompt template")
        return self.render(**values)


def ends_with_open_fence(text: str) -> bool:
    """Whether ``text`` ends with an opening code fence such as ```` ```python ````."""
    return _OPEN_FENCE_AT_END.search(text) is not None and text.count("```") % 2 == 1


def close_code_block(answer: str) -> str:
    r"""Append a closing fence when ``answer`` has an opened, unclosed code block.

    Example:
        >>> close_code_block("```python\ndef f(x):\n    return x")
        '```python\ndef f(x):\n    return x\n```'

    """
    if answer.count("```") % 2 == 1:
        return answer.rstrip() + "\n```"
    return answer


@dataclass(frozen=True)
class PromptStyle:
    """What a prompt style (``TrainConfig.prompt_style``) selects for both roles.

    Attributes:
        coder: The coder's template text.
        tester: The tester's template text.
        stop: The stop strings of every rollout.
        chat_template: ``None``: the tokenizer's chat template (when it has one); ``False``: none.
        coder_system: The coder's system message (``None``: none; the chat template may then
            insert its default one, as Qwen2.5's does). Shown only through a chat template.
        tester_system: The tester's system message, likewise.

    """

    coder: str
    tester: str
    stop: tuple[str, ...]
    chat_template: bool | None
    coder_system: str | None = None
    tester_system: str | None = None

    def system(self, role: str) -> str | None:
        """The system message of ``role`` (``"coder"`` or ``"tester"``)."""
        if role not in ("coder", "tester"):
            raise ValueError(f"unknown role {role!r}: expected 'coder' or 'tester'")
        return self.coder_system if role == "coder" else self.tester_system


def prompt_style(style: str) -> PromptStyle:
    """The templates, stop strings and chat-template use of a prompt style.

    ``"chat"``: the paper-style instructions, in the tokenizer's chat template, no stop string;
    ``"compact"``: the tiny models' short prompts, no chat template, stopping at a closing fence;
    ``"authors"``: the Code-A1 authors' system and user messages (:data:`CODER_AUTHORS`,
    :data:`TESTER_AUTHORS`), in the tokenizer's chat template, no stop string;
    ``"authors-sft"``: the same, with the tester's shorter user message the authors give a tester
    checkpoint whose path holds ``sft`` (:data:`TESTER_AUTHORS_SFT`). Without a chat template a
    prompt is its user message as plain text, and the system message is not shown.

    Raises:
        ValueError: For a name outside :data:`PROMPT_STYLES`.

    """
    if style == "compact":
        return PromptStyle(CODER_COMPACT, TESTER_COMPACT, ("```",), False)
    if style in ("authors", "authors-sft"):
        return PromptStyle(
            CODER_AUTHORS,
            TESTER_AUTHORS if style == "authors" else TESTER_AUTHORS_SFT,
            (),
            None,
            coder_system=CODER_AUTHORS_SYSTEM,
            tester_system=TESTER_AUTHORS_SYSTEM,
        )
    if style == "chat":
        return PromptStyle(CODER_PROMPT, TESTER_PROMPT, (), None)
    raise ValueError(f"unknown prompt style {style!r}: expected one of {PROMPT_STYLES}")


_LM = TypeVar("_LM")


def with_system_prompt(lm: _LM, system: str | None) -> _LM:
    """``lm`` with ``system`` as its system message: a shallow copy when that changes it.

    The copy shares the model, tokenizer and engine of ``lm`` (it only renders prompts
    differently), so one model can play both roles with each role's system message (self-play).
    ``system=None`` (no system message for this role) returns ``lm`` unchanged, and so does an
    ``lm`` that already has ``system``.
    """
    if system is None or getattr(lm, "system_prompt", None) == system:
        return lm
    view = copy.copy(lm)
    view.system_prompt = system  # type: ignore[attr-defined]
    return view
