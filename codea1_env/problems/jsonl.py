"""Reading and writing problem files (JSON Lines, optionally gzip-compressed).

Loading is all-or-nothing: every line is decoded and validated before anything is returned, and
the first bad line raises :class:`~codea1_env.problems.schema.ProblemFormatError` naming the file,
the line and the field. Blank lines are ignored. ``task_id`` values must be unique in a file.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from codea1_env.atomic import atomic_writer
from codea1_env.problems.adapters import adapt_record, id_field
from codea1_env.problems.jsontext import decode_json
from codea1_env.problems.problem import Problem
from codea1_env.problems.schema import ProblemFormatError, problem_to_dict

__all__ = ["collect_problems", "parse_json_lines", "read_problems", "write_problems"]


def parse_json_lines(text: str, where: str) -> Iterator[tuple[int, Any]]:
    r"""Yield ``(line_number, decoded_object)`` for each non-blank line of ``text``.

    Lines end at ``"\n"`` only (JSON reads a ``"\r"`` before it as blank space): strings
    may hold the other characters that :meth:`str.splitlines` breaks at (U+2028, U+0085, ...)
    unescaped, as ``json.dumps(..., ensure_ascii=False)`` writes them.

    Raises:
        ProblemFormatError: a line is not valid JSON, or nests too deeply to decode.
    """
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            yield number, decode_json(raw)
        except ValueError as exc:
            raise ProblemFormatError(where, number, None, f"not valid JSON: {exc}") from None


def collect_problems(
    records: Iterable[tuple[int, Any]], layout: str, where: str, *, skip_invalid: bool = False
) -> tuple[list[Problem], list[ProblemFormatError]]:
    """Convert numbered raw records into problems, checking that task ids are unique.

    Args:
        records: ``(line_number, record)`` pairs.
        layout: A layout of :data:`codea1_env.problems.adapters.LAYOUTS`.
        where: Origin named in errors.
        skip_invalid: Skip records that fail validation instead of raising; they are returned
            as the second element. JSON syntax errors and duplicate ids always raise.

    Returns:
        ``(problems, skipped_errors)``.

    Raises:
        ProblemFormatError: the first invalid record (unless ``skip_invalid``), a duplicate
            ``task_id``, or no problem at all.
        ValueError: ``layout`` is unknown.
    """
    problems: list[Problem] = []
    skipped: list[ProblemFormatError] = []
    first_seen: dict[str, int] = {}
    for number, record in records:
        try:
            problem = adapt_record(record, layout, where=where, line=number)
        except ProblemFormatError as exc:
            if not skip_invalid:
                raise
            skipped.append(exc)
            continue
        if problem.task_id in first_seen:
            field = id_field(record, layout)  # named as the file names it
            raise ProblemFormatError(
                where,
                number,
                field,
                f"duplicate {field} {_raw_id(record, field, problem.task_id)!r}"
                f" (first on line {first_seen[problem.task_id]})",
            )
        first_seen[problem.task_id] = number
        problems.append(problem)
    if not problems:
        detail = f" ({len(skipped)} invalid records skipped)" if skipped else ""
        raise ProblemFormatError(where, None, None, f"no problems{detail}")
    return problems, skipped


def _raw_id(record: Any, field: str, task_id: str) -> Any:
    """The id as the record wrote it (the task id when it cannot be read back)."""
    return record.get(field, task_id) if isinstance(record, dict) else task_id


def read_problems(
    path: str | os.PathLike[str], layout: str = "codea1", *, skip_invalid: bool = False
) -> tuple[list[Problem], list[ProblemFormatError]]:
    """Load every problem of a JSONL file (``.gz`` is decompressed).

    Returns:
        ``(problems, skipped_errors)``; see :func:`collect_problems`.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ProblemFormatError: the file cannot be decoded or a record is invalid.
    """
    where = os.fspath(path)
    raw = Path(path).read_bytes()
    if where.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise ProblemFormatError(where, None, None, f"not a gzip file: {exc}") from None
    if raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark, as some editors write
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ProblemFormatError(where, line, None, "not valid UTF-8") from None
    return collect_problems(parse_json_lines(text, where), layout, where, skip_invalid=skip_invalid)


def write_problems(path: str | os.PathLike[str], problems: Iterable[Problem]) -> int:
    """Write problems as JSONL in the package schema, atomically (temp file, then rename).

    Returns:
        The number of problems written.
    """
    with atomic_writer(path) as handle:
        return _write_lines(handle, problems)


def _write_lines(handle: IO[str], problems: Iterable[Problem]) -> int:
    count = 0
    for problem in problems:
        handle.write(json.dumps(problem_to_dict(problem), ensure_ascii=False) + "\n")
        count += 1
    return count
