"""Every import path the README, docs/ and examples/ name keeps working (issue #14).

The documents are read as text: every dotted ``codea1_env.*`` / ``agents.*`` path (a module, or a
module and the attributes after it), every ``from X import Y`` (single-line or parenthesized), and
every ``codea1_env/...`` / ``agents/...`` file path. Each must import, resolve or exist. The old
module paths that the documents named before the layout change (:data:`LEGACY`) are checked too:
they stay as re-export modules.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "examples").glob("*.py")]
)
PACKAGES = ("codea1_env", "agents")

LEGACY: dict[str, tuple[str, ...]] = {
    "codea1_env.env": ("CodeTestDuelEnv",),
    "codea1_env.vector": ("CodeTestDuelVectorEnv",),
    "codea1_env.tokens": ("TokenEnv",),
    "codea1_env.referee": ("Referee", "Judgement", "SuiteVerdict", "TestVerdict"),
    "codea1_env.rewards": ("RewardConfig",),
    "codea1_env.testcases": ("parse_tests",),
    "codea1_env.mutation": ("generate_mutants",),
    "codea1_env.plain": ("values_equal",),
    "codea1_env.scripted": ("BoundaryTester", "MutantCoder", "RandomTester", "TrivialTester"),
    "agents.cli": ("main",),
    "agents.config": ("TrainConfig", "MODES", "from_preset"),
    "agents.evaluate": (
        "EvalSettings",
        "evaluate_policies",
        "markdown_table",
        "select_problems",
        "summarize_seeds",
    ),
    "agents.models": ("build_tiny_model", "load_tokenizer"),
    "agents.prompts": ("CODER_COMPACT", "CODER_PROMPT", "PromptTemplate"),
    "agents.report": ("write_report",),
    "agents.serve": ("main",),
    "agents.tokenizer": ("load_tiny_tokenizer",),
    "agents.trainer": ("Trainer", "build_referee"),
    "agents.trl_reward": ("make_trl_reward",),
}
"""Old module paths the documents named before the layout of #14, and the names they used."""

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = re.compile(rf"(?<![\w./])((?:{'|'.join(PACKAGES)})(?:\.{_NAME})+)")
_FROM = re.compile(
    rf"from\s+((?:{'|'.join(PACKAGES)})(?:\.{_NAME})*)\s+import\s+(\(([^)]*)\)|[^\n#]+)"
)
_FILE = re.compile(rf"(?<![\w./-])((?:{'|'.join(PACKAGES)})/[A-Za-z0-9_/.]*[A-Za-z0-9_/])")


def _texts() -> list[tuple[str, str]]:
    return [(str(path.relative_to(ROOT)), path.read_text()) for path in DOCUMENTS]


def documented_paths() -> set[str]:
    """Dotted paths named anywhere in the documents."""
    return {m.group(1) for _, text in _texts() for m in _DOTTED.finditer(text)}


def documented_imports() -> set[tuple[str, str]]:
    """``(module, name)`` of every ``from module import name`` in the documents."""
    found = set()
    for _, text in _texts():
        for m in _FROM.finditer(text):
            names = m.group(3) if m.group(3) is not None else m.group(2)
            for name in names.replace("\n", " ").split(","):
                name = name.split(" as ")[0].strip().strip("`").strip()
                if re.fullmatch(_NAME, name):
                    found.add((m.group(1), name))
    return found


def documented_files() -> set[str]:
    """``codea1_env/...`` and ``agents/...`` file and folder paths named in the documents."""
    return {m.group(1) for _, text in _texts() for m in _FILE.finditer(text)}


Skip = Callable[[BaseException], None]
"""conftest's ``skip_if_extra_missing``: skips when an optional third-party module is missing."""


def _import(module: str, skip: Skip) -> Any:
    """Import ``module``; skip when it needs a third-party package that is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        skip(exc)
        raise


def resolve(path: str, skip: Skip) -> Any:
    """The object a dotted path names: its longest importable module prefix, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            spec = importlib.util.find_spec(module)  # imports the packages above ``module``
        except ImportError as exc:
            skip(exc)
            if not isinstance(exc, ModuleNotFoundError):
                raise
            spec = None
        if spec is None:
            continue
        obj = _import(module, skip)
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute)  # AttributeError: the path is broken
        return obj
    raise ModuleNotFoundError(f"no module in {path!r}")


def test_the_documents_name_paths() -> None:
    assert len(documented_paths()) > 20
    assert len(documented_imports()) > 20
    assert len(documented_files()) > 10


@pytest.mark.parametrize("path", sorted(documented_paths()))
def test_documented_dotted_path_resolves(path: str, skip_if_extra_missing: Skip) -> None:
    resolve(path, skip_if_extra_missing)


@pytest.mark.parametrize(("module", "name"), sorted(documented_imports()))
def test_documented_from_import_works(module: str, name: str, skip_if_extra_missing: Skip) -> None:
    imported = _import(module, skip_if_extra_missing)
    if not hasattr(imported, name):
        importlib.import_module(f"{module}.{name}")  # ``from package import submodule``


@pytest.mark.parametrize("path", sorted(documented_files()))
def test_documented_file_exists(path: str) -> None:
    assert (ROOT / path).exists(), f"{path} is named in the documents but does not exist"


@pytest.mark.parametrize(("module", "names"), sorted(LEGACY.items()))
def test_legacy_path_reexports(
    module: str, names: tuple[str, ...], skip_if_extra_missing: Skip
) -> None:
    imported = _import(module, skip_if_extra_missing)
    assert set(names) <= set(imported.__all__), f"{module}.__all__ lacks {names}"
    for name in imported.__all__:
        assert getattr(imported, name) is not None


def test_every_subpackage_lists_its_modules() -> None:
    # docs/ARCHITECTURE.md: "Each subpackage is one layer; its __init__.py lists its modules".
    import ast

    missing = []
    for init in sorted(
        [*ROOT.glob("codea1_env/*/__init__.py"), *ROOT.glob("agents/*/__init__.py")]
    ):
        package = init.parent
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        names = [p.stem for p in package.glob("*.py") if p.stem != "__init__"]
        names += [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
        missing += [
            f"{package.relative_to(ROOT)}/{name}"
            for name in names
            if f".{name}`" not in doc and f"`{name}" not in doc
        ]
    assert not missing, f"modules no __init__.py docstring names: {missing}"
