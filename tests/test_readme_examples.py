"""The README's env loops and docs/metrics.md's example run as written and print what they say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README_DIR = Path(__file__).resolve().parents[1]
README = (README_DIR / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


def _block(marker: str) -> str:
    (block,) = [b for b in BLOCKS if marker in b]
    return block


def _run(source: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "README.md", "exec"), {"__name__": "readme"})  # noqa: S102
    return out.getvalue()


def test_the_gymnasium_loop_prints_the_rewards_its_comment_gives() -> None:
    block = _block('print(info["rewards"])')
    (claimed,) = re.findall(r"# e\.g\. (\{'coder': [^}]*\})", block)
    assert _run(block).splitlines()[0] == claimed


def test_the_custom_problem_snippet_runs_on_its_own_env() -> None:
    block = _block('"problem_id": "bank/clamp"')
    assert "gym.make(" in block and "env.close()" in block  # not the closed env of the loop
    _run("import gymnasium as gym\nimport codea1_env\n" + block)


@pytest.mark.requires("pettingzoo")
def test_the_pettingzoo_loop_runs() -> None:
    _run("import codea1_env\n" + _block("pettingzoo_env("))


def test_the_metrics_page_example_runs_and_prints_its_figures() -> None:
    page = (README_DIR / "docs" / "metrics.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "coverage_job" in b]
    assert _run(block).split() == ["1.0", "None", "3", "1.0"]
