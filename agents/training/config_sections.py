"""TrainConfig's fields: docstrings, Literal choices, the nested sections' flat names and checks.

``TrainConfig`` nests the env's options (``stability``: a
:class:`~codea1_env.stability.StabilityOptions`, ``limits``: a
:class:`~codea1_env.sandbox.Limits`) instead of mirroring them. This module is the one place that
knows how those sections look from outside: :func:`nested_fields` gives every nested field a flat
name (the flag ``--curriculum-start``, the top-level key of a ``config.json`` written before the
nesting), :func:`nest_flat_keys` moves flat keys into their sections, :func:`merge_config_dicts`
layers presets, files and flags field by field, and :func:`build_section` / :func:`check_type`
validate a section's values from its annotations, naming ``TrainConfig.<path>`` and the flag.
It reads ``TrainConfig`` lazily (``agents.training.config`` imports this module).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
import typing
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple, TypeVar

__all__ = [
    "NestedField",
    "build_section",
    "check_type",
    "describe",
    "dotted_keys",
    "field_docs",
    "literal_choices",
    "merge_config_dicts",
    "nest_flat_keys",
    "nested_fields",
    "optional_base",
    "plain",
    "sections",
    "type_ok",
]


def field_docs(cls: type | None = None) -> dict[str, str]:
    """Read the docstring written under each field of a dataclass (CleanRL style).

    ``cls`` defaults to :class:`~agents.training.config.TrainConfig`.
    """
    if cls is None:
        from agents.training.config import TrainConfig

        cls = TrainConfig
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


@functools.cache
def top_level_hints() -> dict[str, Any]:
    """The annotation of every :class:`TrainConfig` field that is not a section, in field order."""
    from agents.training.config import TrainConfig

    hints = typing.get_type_hints(TrainConfig)
    return {
        f.name: hints[f.name] for f in dataclasses.fields(TrainConfig) if f.name not in sections()
    }


def check_top_level_type(name: str, value: Any) -> None:
    """Reject a top-level field's value that does not fit its annotation (``bool`` is no int).

    A tuple field takes a list or tuple whose items fit (``tuple[float, float]``: exactly two).

    Raises:
        ValueError: ``TrainConfig.<name> = <value> is invalid: expected <type>``.

    """
    hint = top_level_hints()[name]
    ok = type_ok(value, hint)
    if ok and value is not None:
        base = hint if typing.get_origin(hint) is tuple else None
        if base is None and type(None) in typing.get_args(hint):
            inner = optional_base(typing.get_args(hint))
            base = inner if typing.get_origin(inner) is tuple else None
        if base is not None:
            items = typing.get_args(base)
            if len(items) == 2 and items[1] is Ellipsis:
                ok = all(type_ok(v, items[0]) for v in value)
            else:
                ok = len(value) == len(items) and all(
                    type_ok(v, h) for v, h in zip(value, items, strict=True)
                )
    if not ok:
        raise ValueError(f"TrainConfig.{name} = {value!r} is invalid: expected {describe(hint)}")


@functools.cache
def literal_choices() -> dict[str, tuple[Any, ...]]:
    """The allowed values of every ``Literal``-typed :class:`TrainConfig` field, in field order.

    Read from the annotations (``typing.get_args``), so validation, the CLI's ``choices`` and
    the documentation cannot drift apart.
    """
    from agents.training.config import TrainConfig

    hints = typing.get_type_hints(TrainConfig)
    return {
        f.name: typing.get_args(hints[f.name])
        for f in dataclasses.fields(TrainConfig)
        if typing.get_origin(hints[f.name]) is Literal
    }


def optional_base(args: tuple[Any, ...]) -> Any:
    """The non-``None`` member of an ``X | None`` annotation's arguments."""
    return next(a for a in args if a is not type(None))


_Section = TypeVar("_Section")

_FLAT_PREFIXES: dict[tuple[str, ...], str] = {("stability", "curriculum_schedule"): "curriculum_"}
"""Flat-name prefix of the fields of a dataclass nested inside a section (``curriculum_start``);
a section's own fields keep their names, any other nested dataclass gets ``{its name}_``."""


class NestedField(NamedTuple):
    """One field of a nested section, under the flat name that its flag and old configs use."""

    flat: str
    """The flat name: the flag (``--curriculum-start``), the key of a pre-nesting config."""
    path: tuple[str, ...]
    """Where it lives: ``("stability", "curriculum_schedule", "start")``."""
    owner: type
    """The dataclass that defines it (``CurriculumSchedule``)."""
    hint: Any
    """Its annotation, resolved (``float``, ``int | None``)."""
    doc: str
    """The docstring written under it in ``owner``."""

    @property
    def dotted(self) -> str:
        """The path as written in messages and :meth:`TrainConfig.diff`: ``stability.hard_only``."""
        return ".".join(self.path)

    @property
    def flag(self) -> str:
        """Its ``codea1 train`` flag: ``--curriculum-start``."""
        return "--" + self.flat.replace("_", "-")


@functools.cache
def sections() -> dict[str, type]:
    """The :class:`TrainConfig` fields that are dataclasses: ``{"limits": Limits, ...}``."""
    from agents.training.config import TrainConfig

    hints = typing.get_type_hints(TrainConfig)
    return {
        f.name: hints[f.name]
        for f in dataclasses.fields(TrainConfig)
        if isinstance(hints[f.name], type) and dataclasses.is_dataclass(hints[f.name])
    }


@functools.cache
def nested_fields() -> dict[str, NestedField]:
    """Every field of :class:`TrainConfig`'s sections, by flat name, in field order.

    Raises:
        RuntimeError: two fields would share a flat name (or one a top-level field's name).

    """
    found: dict[str, NestedField] = {}

    def walk(cls: type, path: tuple[str, ...], prefix: str) -> None:
        hints, docs = typing.get_type_hints(cls), field_docs(cls)
        for f in dataclasses.fields(cls):
            hint, where = hints[f.name], (*path, f.name)
            if isinstance(hint, type) and dataclasses.is_dataclass(hint):
                walk(hint, where, _FLAT_PREFIXES.get(where, f"{prefix}{f.name}_"))
                continue
            flat = prefix + f.name
            if flat in found:
                raise RuntimeError(f"{'.'.join(where)} and {found[flat].dotted} share {flat!r}")
            found[flat] = NestedField(flat, where, cls, hint, docs.get(f.name, ""))

    from agents.training.config import TrainConfig

    for name, cls in sections().items():
        walk(cls, (name,), "")
    clash = sorted(set(found) & {f.name for f in dataclasses.fields(TrainConfig)})
    if clash:
        raise RuntimeError(f"nested fields named like top-level fields: {clash}")
    return found


def plain(value: Any) -> Any:
    """A section's value as nested plain dicts (a dataclass or a mapping; anything else as is)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    return value


def nest_flat_keys(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with every flat key of a nested field moved into its section, as a new dict.

    The one mapping from the flat names (the flags, preset overrides, the top-level keys of a
    ``config.json`` written before the nesting) to the nested layout. Sections given as
    objects become dicts of their fields. A field given two values in the same ``data``, flat
    and in its section, is refused, not silently resolved; but a section given as an object
    (``limits=Limits(memory_mb=256), call_timeout_s=1.0``) holds every field, the ones its
    caller never set at their defaults, so there a flat key overrides a field at its default.
    Other keys are copied as they are (unknown ones included: :meth:`TrainConfig.from_dict`
    names them).

    Raises:
        ValueError: a flat key whose section is given as something other than an object, or a
            field given both flat and in its section with two values (in a section given as an
            object: a value other than the field's default).

    """
    flat = nested_fields()
    section_types = sections()
    out = {k: plain(v) if k in section_types else v for k, v in data.items() if k not in flat}
    for key, value in data.items():
        if key not in flat:
            continue
        *parents, leaf = flat[key].path
        node = out
        for depth, part in enumerate(parents, 1):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parents[:depth])
                raise ValueError(
                    f"TrainConfig.{where} = {child!r} is invalid: expected an object of its fields"
                )
            node = child
        implicit = _from_object(data, flat[key].path) and _same_value(
            node.get(leaf), _field_default(flat[key])
        )
        if leaf in node and not _same_value(node[leaf], value) and not implicit:
            dotted = ".".join(flat[key].path)
            raise ValueError(
                f"TrainConfig: {key}={value!r} and {dotted}={node[leaf]!r} are the same field "
                "given twice with two values; give it once"
            )
        node[leaf] = value
    return out


def _from_object(data: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    """Whether the field at ``path`` of ``data`` sits in a section given as a dataclass object."""
    node: Any = data
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, Mapping) else None
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            return True
    return False


def _field_default(leaf: NestedField) -> Any:
    """The default of a nested field in its owner dataclass (``MISSING`` when it has none)."""
    for item in dataclasses.fields(leaf.owner):
        if item.name == leaf.path[-1]:
            if item.default is not dataclasses.MISSING:
                return item.default
            if item.default_factory is not dataclasses.MISSING:
                return item.default_factory()
    return dataclasses.MISSING


def _same_value(a: Any, b: Any) -> bool:
    """Equal as config values: a JSON list equals the tuple it stands for."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return bool(a == b)


def merge_config_dicts(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Merge config values given in layers, a later layer winning field by field.

    Each layer may use flat or nested keys (it goes through :func:`nest_flat_keys`); sections
    merge field by field too, so ``quality_filter=True`` over a preset keeps its other options.
    """

    def update(into: dict[str, Any], layer: Mapping[str, Any]) -> None:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                update(into[key], value)
            else:
                into[key] = value

    merged: dict[str, Any] = {}
    for layer in layers:
        update(merged, nest_flat_keys(layer))
    return merged


def build_section(cls: type[_Section], value: Any, path: str) -> _Section:
    """``value`` as a ``cls``: an instance as is, a dict of its fields (nested ones as dicts).

    Raises:
        ValueError: not an object, an unknown field, a value of the wrong type or out of range
            (the message names ``TrainConfig.<path>.<field>``).

    """
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(
            f"TrainConfig.{path} = {value!r} is invalid: expected an object of "
            f"{cls.__name__}'s fields"
        )
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(value) - {f.name for f in dataclasses.fields(cls)})  # type: ignore[arg-type]
    if unknown:
        names = ", ".join(f"{path}.{n}" for n in unknown)
        raise ValueError(f"unknown TrainConfig field(s): {names}")
    leaves = {leaf.path: leaf for leaf in nested_fields().values()}
    values: dict[str, Any] = {}
    for name, item in value.items():
        hint = hints[name]
        where = f"{path}.{name}"
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            values[name] = build_section(hint, item, where)
        else:
            check_type(leaves[tuple(where.split("."))], item)
            values[name] = item
    try:
        return cls(**values)
    except ValueError as exc:
        field = getattr(exc, "field", None)  # LimitsError: the field, its value and its range
        if isinstance(field, str) and (leaf := leaves.get((*path.split("."), field))):
            raise ValueError(
                f"TrainConfig.{path}.{field} = {getattr(exc, 'value', None)!r} is invalid: "
                f"expected {getattr(exc, 'allowed', '')} (flag {leaf.flag})"
            ) from None
        raise ValueError(f"TrainConfig.{path}: {exc}") from exc


def type_ok(value: Any, hint: Any) -> bool:
    """Whether ``value`` fits the annotation ``hint`` (an int fits ``float``, a bool no number)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return value in args
    if type(None) in args:
        return value is None or type_ok(value, optional_base(args))
    if origin is tuple:
        return isinstance(value, (tuple, list))
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


def describe(hint: Any) -> str:
    """``hint`` for a message: ``float``, ``int or null``, ``one of ('a', 'b')``."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is Literal:
        return f"one of {args}"
    if type(None) in args:
        return f"{describe(optional_base(args))} or null"
    if typing.get_origin(hint) is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {describe(args[0])}"
        return f"a list [{', '.join(describe(a) for a in args)}]"
    return getattr(hint, "__name__", str(hint))


def check_type(leaf: NestedField, value: Any) -> None:
    """Reject a nested field's value that does not fit its annotation.

    Raises:
        ValueError: ``TrainConfig.<path> = <value> is invalid: expected <type>`` (and the flag).

    """
    if not type_ok(value, leaf.hint):
        raise ValueError(
            f"TrainConfig.{leaf.dotted} = {value!r} is invalid: expected {describe(leaf.hint)} "
            f"(flag {leaf.flag})"
        )


def dotted_keys(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested dict flattened to dotted keys (``{"limits.memory_mb": 1024, ...}``)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out.update(dotted_keys(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out
