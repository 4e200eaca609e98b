"""Find the code and the stdin/stdout examples in a model's raw Markdown answer.

:func:`extract_fenced_blocks` and :func:`extract_code` take code out of prose with Markdown fences;
:func:`parse_io_pairs` reads a tester's stdin/stdout examples for stdio problems. Nothing here
raises for any ``str``: what did not become a pair is a :class:`Rejected` value with a reason.
These names are also importable from :mod:`codea1_env.scoring.testcases`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from codea1_env.problems.problem import IOPair

__all__ = [
    "ParsedIOPairs",
    "Rejected",
    "extract_code",
    "extract_fenced_blocks",
    "parse_io_pairs",
]

# --------------------------------------------------------------------------------------------
# Code extraction from prose with Markdown fences
# --------------------------------------------------------------------------------------------

PYTHON_TAGS = ("python", "py", "python3")
"""Fence info strings that mark a Python block."""
_FENCE = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")


def extract_fenced_blocks(text: str, languages: Sequence[str] | None = None) -> list[str]:
    """Return the contents of the Markdown fenced blocks of ``text``, in order.

    A block opens with a line of three or more backticks (or tildes) followed by an optional
    language tag, and closes with a line holding only a fence of the same character at least as
    long. A block left open (a generation cut short) runs to the end of the text.

    Args:
        text: Any string.
        languages: Keep only blocks whose tag (first word, lower-cased) is in this list; ``""``
            stands for an untagged block. None keeps every block.

    """
    blocks: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        fence, info = match.group("fence"), match.group("info").strip()
        tag = info.split()[0].lower() if info else ""
        body: list[str] = []
        i += 1
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence) and stripped == fence[0] * len(stripped):
                break
            body.append(lines[i])
            i += 1
        i += 1  # past the closing fence
        if languages is None or tag in languages:
            blocks.append("\n".join(body))
    return blocks


def extract_code(text: str, language: str = "python") -> str:
    """Return the program in a coder's answer.

    Rule: the longest fenced block tagged ``language`` (for Python also ``py``/``python3``);
    if there is none, the longest untagged block; if there is none, the whole text. Ties go to
    the last such block (a model that revises its answer puts the final version last). The
    longest block is chosen because answers often add a short usage example after the solution.

    Args:
        text: Any string (the whole answer).
        language: Language tag to look for.

    """
    if not isinstance(text, str):
        return ""
    tags = PYTHON_TAGS if language.lower() in PYTHON_TAGS else (language.lower(),)
    blocks = extract_fenced_blocks(text, tags) or extract_fenced_blocks(text, ("",))
    if not blocks:
        return text
    best = blocks[0]
    for block in blocks[1:]:
        if len(block) >= len(best):
            best = block
    return best


# --------------------------------------------------------------------------------------------
# Stdin/stdout problems: input/output pairs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rejected:
    """A statement (or stdio block) that did not become a test, and why.

    Attributes:
        line: 1-based line in the extracted code (0 when unknown).
        source: The offending source, truncated to 200 characters.
        reason: One of :data:`~codea1_env.scoring.testcases.REJECT_REASONS`.

    """

    line: int
    source: str
    reason: str


def clip_source(source: str, limit: int = 200) -> str:
    """``source`` cut to ``limit`` characters (with ``...``), as rejections show it."""
    return source if len(source) <= limit else source[: limit - 3] + "..."


def cut_at_line(text: str, max_chars: int) -> tuple[str, Rejected | None]:
    """``text`` cut to at most ``max_chars`` characters at a line break, and what was left out.

    A suite is read up to the last line break before the limit (the whole first line's first
    ``max_chars`` characters when it has none), so that no statement or block is cut inside a
    line.

    Returns:
        The kept text, and None when nothing was cut, else a ``"cut_off"`` rejection at the first
        line left out, whose source is that line's beginning.

    """
    if len(text) <= max_chars:
        return text, None
    cut = text.rfind("\n", 0, max_chars)
    kept = text[: cut if cut > 0 else max_chars]
    if cut > 0:  # the first line left out starts after the line break
        line, rest = kept.count("\n") + 2, text[cut + 1 :]
    else:  # the rest of the first line
        line, rest = 1, text[max_chars:]
    return kept, Rejected(line, clip_source(rest.split("\n", 1)[0]), "cut_off")


_IO_HEADER = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*|>[ \t]*|[-*][ \t]+)?(?:\*\*|__)?[ \t]*"
    r"(?:(?:example|sample|test)[ \t]*)?(?P<kind>input|output|stdin|stdout)"
    r"(?:[ \t]*#?[ \t]*\d+)?[ \t]*(?:\*\*|__)?[ \t]*"
    r"(?::(?:[ \t]*(?:\*\*|__))?(?P<rest>.*))?$",
    re.IGNORECASE,
)
_IO_TAGS = {"input": "input", "stdin": "input", "output": "output", "stdout": "output"}


@dataclass(frozen=True)
class ParsedIOPairs:
    """The result of :func:`parse_io_pairs`.

    Attributes:
        pairs: Accepted pairs, in order, at most ``max_cases``; a repeated input is kept here
            (the referee's grading counts it as a duplicate: invalid, not kept).
        rejected: Blocks that did not become pairs (``line`` is the block's header line), in
            line order; a text past ``max_chars`` adds ``"cut_off"`` entries.
        reason: ``""`` when at least one pair was found, else ``"empty"`` or ``"no_pairs"``.

    """

    pairs: tuple[IOPair, ...]
    rejected: tuple[Rejected, ...]
    reason: str


def parse_io_pairs(text: str, *, max_chars: int = 20000, max_cases: int = 64) -> ParsedIOPairs:
    r"""Parse a tester's stdin/stdout examples.

    Accepted formats, tried in this order:

    1. Fenced blocks tagged ``input``/``stdin`` and ``output``/``stdout``: each input block is
       paired with the next output block.
    2. Header lines ``Input:`` / ``Output:`` (any case; optional Markdown such as ``**Input:**``,
       ``### Output``, ``- Input 2:``, ``Sample Input 1:``). A section runs to the next header; its
       text is the first fenced block inside it if there is one, else its lines (with any text
       after the header's colon as the first line).

    Leading and trailing blank lines are removed and both texts end with one ``"\n"``. The
    expected output is the tester's claim; the referee replaces it with the GT's output. Only the
    first ``max_chars`` characters of ``text`` are read, up to the last line break before the limit
    (see :func:`cut_at_line`); when the text is cut, the block that reaches the cut is not read
    (its text may be partial) and both are reported as ``"cut_off"``. Never raises for any
    ``str``.
    """
    if not isinstance(text, str) or not text.strip():
        return ParsedIOPairs((), (), "empty")
    text, cut_off = cut_at_line(text, max_chars)
    sections = _fenced_io_sections(text) or _header_io_sections(text)
    pairs: list[IOPair] = []
    rejected: list[Rejected] = []
    if cut_off is not None and sections and sections[-1][3]:
        line, _kind, body, _open = sections.pop()  # it reached the cut: its text may be partial
        rejected.append(Rejected(line, clip_source(body), "cut_off"))
    pending: tuple[int, str] | None = None
    for line, kind, body, _open in sections:
        if kind == "input":
            if pending is not None:
                rejected.append(Rejected(pending[0], clip_source(pending[1]), "missing_output"))
            pending = (line, body)
            continue
        if pending is None:
            rejected.append(Rejected(line, clip_source(body), "missing_input"))
            continue
        in_line, stdin = pending
        pending = None
        if len(pairs) >= max_cases:
            rejected.append(Rejected(in_line, clip_source(stdin), "too_many"))
        else:
            pairs.append(IOPair(stdin, body))
    if pending is not None:
        rejected.append(Rejected(pending[0], clip_source(pending[1]), "missing_output"))
    if cut_off is not None:
        rejected.append(cut_off)
    rejected.sort(key=lambda r: r.line)
    return ParsedIOPairs(tuple(pairs), tuple(rejected), "" if pairs else "no_pairs")


def _normalize_io(lines: Sequence[str]) -> str:
    kept = list(lines)
    while kept and not kept[0].strip():
        kept.pop(0)
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(line.rstrip("\r") for line in kept) + "\n"


def _fenced_io_sections(text: str) -> list[tuple[int, str, str, bool]]:
    """``(line, kind, body, open)`` for each fenced block tagged input/output/stdin/stdout.

    ``open``: the block runs to the end of ``text`` (no closing fence).
    """
    sections: list[tuple[int, str, str, bool]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        start, fence = i, match.group("fence")
        info = match.group("info").strip()
        tag = info.split()[0].lower() if info else ""
        body: list[str] = []
        i += 1
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence) and stripped == fence[0] * len(stripped):
                break
            body.append(lines[i])
            i += 1
        unclosed = i >= len(lines)
        i += 1
        if tag in _IO_TAGS:
            sections.append((start + 1, _IO_TAGS[tag], _normalize_io(body), unclosed))
    return sections


def _header_io_sections(text: str) -> list[tuple[int, str, str, bool]]:
    """``(line, kind, body, open)`` for each ``Input:``/``Output:`` section.

    ``open``: the section runs to the end of ``text`` (the last one does).
    """
    lines = text.split("\n")
    heads: list[tuple[int, str, str]] = []
    for index, line in enumerate(lines):
        if len(line) > 200 or _FENCE.match(line):
            continue
        match = _IO_HEADER.match(line)
        if match is not None:
            heads.append((index, _IO_TAGS[match.group("kind").lower()], match.group("rest") or ""))
    sections: list[tuple[int, str, str, bool]] = []
    for number, (index, kind, rest) in enumerate(heads):
        end = heads[number + 1][0] if number + 1 < len(heads) else len(lines)
        body_lines = ([rest.strip()] if rest.strip() else []) + lines[index + 1 : end]
        fenced = extract_fenced_blocks("\n".join(lines[index + 1 : end]))
        body = _normalize_io(fenced[0].split("\n")) if fenced else _normalize_io(body_lines)
        sections.append((index + 1, kind, body, number + 1 == len(heads)))
    return sections
