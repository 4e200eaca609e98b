"""Every ``>>>`` example in the packages' docstrings runs as written (or is marked to skip).

Nothing else executes docstring examples, so without this test they drift: a renamed argument or a
missing import would stay in the docs unnoticed. Examples that need a server, a GPU or an extra
that the dev install lacks carry ``# doctest: +SKIP``; everything else runs here.
"""

from __future__ import annotations

import doctest
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("codea1_env", "agents")


def _modules_with_examples() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if ">>>" in path.read_text(encoding="utf-8"):
                parts = path.relative_to(ROOT).with_suffix("").parts
                names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = _modules_with_examples()


def test_the_scan_finds_the_known_examples() -> None:
    # A guard on the scan itself: if it found nothing, the parametrized test below would pass
    # vacuously.
    assert "agents.training.grpo" in MODULES
    assert "agents.lm.http" in MODULES
    assert len(MODULES) >= 8


class _Runner(doctest.DocTestRunner):
    """A doctest runner that keeps the exceptions its examples raised."""

    raised: list[BaseException]

    def report_unexpected_exception(self, out: Any, test: Any, example: Any, exc_info: Any) -> None:
        self.raised.append(exc_info[1])
        super().report_unexpected_exception(out, test, example, exc_info)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    skip_if_extra_missing: Callable[[BaseException], None],
) -> None:
    monkeypatch.chdir(tmp_path)  # examples that write (output_dir="runs/...") write here
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        skip_if_extra_missing(exc)
        raise
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = _Runner(optionflags=doctest.ELLIPSIS)
    runner.raised = []
    examples = 0
    for test in finder.find(module, name, globs=vars(module).copy()):
        examples += len(test.examples)
        runner.run(test)
    result = runner.summarize(verbose=False)
    for raised in runner.raised:  # an example that needs an extra this install lacks
        skip_if_extra_missing(raised)
    assert examples > 0, f"{name}: the file holds '>>>' but doctest found no example"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
