r"""Prompt templates for the two players, kept as editable ``str.format`` templates.

Fields a template may use (all optional):

- ``{prompt}``: the problem statement (for function problems: signature and docstring), with
  trailing whitespace removed;
- ``{entry_point}``: the name of the function under test;
- ``{code}``: the candidate code the tester must break (tester only), trailing whitespace removed;
- ``{num_tests}``: how many ``assert`` lines the tester is asked for (8 in Code-A1).

Literal braces in a template are doubled (``{{`` and ``}}``), as ``str.format`` wants.

Two families:

- ``*_PROMPT``: instructions in the spirit of the Code-A1 paper, for instruction-tuned chat models.
  The coder answers with the complete function in a fenced ``python`` block; the tester reads the
  question and the candidate code (white-box) and answers with exactly ``num_tests`` lines
  ``assert entry_point(...) == ...`` in a fenced block, aiming at inputs the code gets wrong.
- ``*_COMPACT``: short, regular prompts for the tiny CPU models, which take plain text. They end
  with an opened code fence (```` ```python ````) and no newline, so the model itself emits the
  newline and the code: a prompt that ends in a newline right before indented code (``"):\n"``)
  breaks byte-level BPE generation, because in training text that newline is merged with the
  indentation that follows.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CODER_COMPACT",
    "CODER_PROMPT",
    "TEMPLATE_FIELDS",
    "TESTER_COMPACT",
    "TESTER_PROMPT",
    "PromptStyle",
    "PromptTemplate",
    "close_code_block",
    "ends_with_open_fence",
    "prompt_style",
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

    """

    coder: str
    tester: str
    stop: tuple[str, ...]
    chat_template: bool | None


def prompt_style(style: str) -> PromptStyle:
    """The templates, stop strings and chat-template use of a prompt style.

    ``"chat"``: the paper-style instructions, in the tokenizer's chat template, no stop string;
    ``"compact"``: the tiny models' short prompts, no chat template, stopping at a closing fence.
    """
    if style == "compact":
        return PromptStyle(CODER_COMPACT, TESTER_COMPACT, ("```",), False)
    return PromptStyle(CODER_PROMPT, TESTER_PROMPT, (), None)
