"""``codea1 train``'s flags, generated from :class:`~agents.training.config.TrainConfig`'s fields.

One ``--flag`` per field (underscores become dashes), its help the docstring under the field; a
nested section's fields get their flat names (``--quality-filter``, ``--call-timeout-s``,
``--curriculum-start``; :func:`~agents.training.config_sections.nested_fields`). Every flag
defaults to ``argparse.SUPPRESS`` so :func:`config_from_args` builds the config from the preset
(or a saved file) and only the flags the user gave. It reads ``TrainConfig`` lazily
(``agents.training.config`` imports this module and re-exports both functions).
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from agents.training.config_sections import (
    field_docs,
    merge_config_dicts,
    nested_fields,
    optional_base,
    sections,
)
from agents.training.presets import PRESETS

if TYPE_CHECKING:
    from agents.training.config import TrainConfig

__all__ = ["add_config_arguments", "config_from_args"]


def _none_or(kind: type) -> Any:
    def convert(text: str) -> Any:
        return None if text.lower() in ("none", "null") else kind(text)

    convert.__name__ = kind.__name__
    return convert


def _flag_fields() -> list[tuple[str, Any, str]]:
    """``(flat name, annotation, help)`` of every flag, in field order.

    A section's fields come in its place, their help saying where they live in ``config.json``.
    """
    from agents.training.config import TrainConfig

    hints = typing.get_type_hints(TrainConfig)
    docs = field_docs()
    section_types = sections()
    out: list[tuple[str, Any, str]] = []
    for f in dataclasses.fields(TrainConfig):
        if f.name not in section_types:
            out.append((f.name, hints[f.name], docs.get(f.name, "")))
            continue
        out += [
            (leaf.flat, leaf.hint, f"{leaf.doc} [config.json: {leaf.dotted}]")
            for leaf in nested_fields().values()
            if leaf.path[0] == f.name
        ]
    return out


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one ``--flag`` per :class:`TrainConfig` field (underscores become dashes).

    A nested section's fields get flat flags (``--quality-filter``, ``--call-timeout-s``,
    ``--curriculum-start``; :func:`nested_fields`), with the help of their own docstrings.
    Every flag defaults to ``argparse.SUPPRESS`` so :func:`config_from_args` can tell which
    fields the user set; booleans get ``--x/--no-x``; tuples take several values.
    """
    group = parser.add_argument_group("training config (defaults: the preset, else the paper's)")
    for name, hint, help_text in _flag_fields():
        flag = "--" + name.replace("_", "-")
        help_text = help_text.replace("%", "%%")  # argparse expands %(default)s-style fields
        kwargs: dict[str, Any] = {"default": argparse.SUPPRESS, "help": help_text, "dest": name}
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if hint is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif origin is Literal:
            kwargs["choices"] = list(args)
        elif origin is tuple:
            kwargs["nargs"] = "+" if args[-1] is Ellipsis else len(args)
            kwargs["type"] = args[0]
            kwargs["metavar"] = args[0].__name__.upper()
        elif type(None) in args and typing.get_origin(optional_base(args)) is tuple:
            items = typing.get_args(optional_base(args))  # an optional fixed-length tuple
            kwargs["nargs"] = len(items)
            kwargs["type"] = items[0]
            kwargs["metavar"] = items[0].__name__.upper()
        elif type(None) in args:
            base = optional_base(args)
            kwargs["type"] = _none_or(base)
            kwargs["metavar"] = base.__name__.upper()
        else:
            kwargs["type"] = hint
        group.add_argument(flag, **kwargs)


def config_from_args(
    args: argparse.Namespace,
    preset: str | None = None,
    *,
    base: Mapping[str, Any] | None = None,
) -> TrainConfig:
    """Build the config: ``base`` or the preset (or the paper defaults), then the flags given.

    ``base`` is a saved config's dict (``--config FILE``), flat or nested.

    Raises:
        ValueError: unknown preset or a bad value (named).

    """
    from agents.training.config import TrainConfig

    if preset and preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
    start = base if base is not None else PRESETS[preset] if preset else {}
    given: dict[str, Any] = {}
    for name, _hint, _help in _flag_fields():
        if hasattr(args, name):
            value = getattr(args, name)
            given[name] = tuple(value) if isinstance(value, list) else value
    return TrainConfig.from_dict(merge_config_dicts(start, given))
