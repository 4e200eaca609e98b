"""Helpers shared by the tests that judge batches of duels and compare the judgements."""

from __future__ import annotations

import dataclasses
from typing import Any


def fenced(program: str) -> str:
    """``program`` as a model answers it: in a python code block."""
    return f"```python\n{program}\n```"


def plain_judgement(judgement: Any) -> Any:
    """A judgement without what varies from run to run (call durations, sandbox seconds)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("duration_s", "wall_s")}
        if isinstance(value, (list, tuple)):
            return [strip(v) for v in value]
        return value

    data = strip(dataclasses.asdict(judgement))
    data["metrics"].pop("sandbox/seconds")
    return data
