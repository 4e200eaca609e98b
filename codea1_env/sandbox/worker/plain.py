"""Plain data: the only kind of value allowed to cross from untrusted code to the trusted parent.

A value is *plain* when it is built only from the exact builtin types ``None``, ``bool``, ``int``,
``float``, ``complex``, ``str``, ``bytes``, ``list``, ``tuple``, ``dict``, ``set`` and
``frozenset`` (no subclasses). Plain values are encoded as tagged JSON so that the parent can
rebuild them with the standard ``json`` parser, which never runs code, and compare them with
:func:`values_equal`, which compares types as well as contents (``True`` is not ``1``).

Tagged JSON: ``null``, ``true``/``false``, JSON numbers for ``int`` and ``float`` (``float`` is
always written with a fraction or exponent, ``NaN``/``Infinity`` allowed), JSON strings for ``str``,
JSON arrays for ``list``, and single-key objects for everything else: ``{"t": [...]}`` tuple,
``{"d": [[k, v], ...]}`` dict, ``{"s": [...]}`` set, ``{"f": [...]}`` frozenset,
``{"b": "<base64>"}`` bytes, ``{"c": [re, im]}`` complex.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "PlainDataError",
    "decode",
    "dumps",
    "encode",
    "is_plain",
    "loads",
    "to_source",
    "EQUALITIES",
    "equality",
    "python_equal",
    "values_equal",
]

MAX_DEPTH = 100
"""Deepest nesting accepted in either direction."""

_SCALARS = (type(None), bool, int, float, complex, str, bytes)


class PlainDataError(ValueError):
    """A value is not plain data, or an encoded record is malformed."""


def is_plain(value: Any, _depth: int = 0) -> bool:
    """Return True when ``value`` is built only from exact builtin plain types."""
    try:
        encode(value)
    except PlainDataError:
        return False
    return True


def encode(value: Any, _depth: int = 0) -> Any:
    """Encode a plain value as a tagged-JSON-compatible object.

    Raises:
        PlainDataError: ``value`` contains a non-plain object (including subclasses of builtin
            types, such as an ``int`` subclass or an object overriding ``__eq__``) or is nested
            deeper than :data:`MAX_DEPTH`.
    """
    if _depth > MAX_DEPTH:
        raise PlainDataError(f"nested deeper than {MAX_DEPTH}")
    kind = type(value)
    if kind is type(None) or kind is bool or kind is int or kind is str:
        return value
    if kind is float:
        return value
    if kind is bytes:
        return {"b": base64.b64encode(value).decode("ascii")}
    if kind is complex:
        return {"c": [value.real, value.imag]}
    if kind is list:
        return [encode(item, _depth + 1) for item in value]
    if kind is tuple:
        return {"t": [encode(item, _depth + 1) for item in value]}
    if kind is dict:
        return {"d": [[encode(k, _depth + 1), encode(v, _depth + 1)] for k, v in value.items()]}
    if kind is set or kind is frozenset:
        # in a canonical order: a set's iteration order follows the process's string hashes
        items = sorted((encode(item, _depth + 1) for item in value), key=_canonical)
        return {"s" if kind is set else "f": items}
    raise PlainDataError(f"not plain data: object of type {kind.__qualname__}")


def _canonical(encoded: Any) -> str:
    """A sort key for an encoded set item that no process's hash seed changes.

    Built from this module's own builtins only (not ``json``, whose module a program running in
    the same process can reach through ``builtins``).
    """
    kind = type(encoded)
    if kind is list:
        return "[" + ",".join([_canonical(item) for item in encoded]) + "]"
    if kind is dict:
        items = sorted(encoded.items())
        return "{" + ",".join([repr(k) + ":" + _canonical(v) for k, v in items]) + "}"
    return kind.__name__ + ":" + repr(encoded)


def decode(obj: Any, _depth: int = 0) -> Any:
    """Rebuild a plain value from its tagged-JSON form.

    Raises:
        PlainDataError: the record is malformed.
    """
    if _depth > MAX_DEPTH:
        raise PlainDataError(f"nested deeper than {MAX_DEPTH}")
    kind = type(obj)
    if obj is None or kind in (bool, int, float, str):
        return obj
    if kind is list:
        return [decode(item, _depth + 1) for item in obj]
    if kind is dict and len(obj) == 1:
        ((tag, payload),) = obj.items()
        try:
            if tag == "t":
                return tuple(decode(item, _depth + 1) for item in _array(payload))
            if tag == "d":
                pairs = _array(payload)
                out = {}
                for pair in pairs:
                    key, val = _array(pair)
                    out[decode(key, _depth + 1)] = decode(val, _depth + 1)
                return out
            if tag == "s":
                return {decode(item, _depth + 1) for item in _array(payload)}
            if tag == "f":
                return frozenset(decode(item, _depth + 1) for item in _array(payload))
            if tag == "b" and type(payload) is str:
                return base64.b64decode(payload.encode("ascii"), validate=True)
            if tag == "c":
                re_, im_ = _array(payload)
                if type(re_) in (int, float) and type(im_) in (int, float):
                    return complex(re_, im_)
        except (TypeError, ValueError) as exc:  # unhashable key, bad base64, wrong arity
            raise PlainDataError(f"malformed {tag!r} record: {exc}") from None
    raise PlainDataError(f"malformed plain-data record of JSON type {kind.__name__}")


def _array(payload: Any) -> list[Any]:
    if type(payload) is not list:
        raise PlainDataError("expected a JSON array")
    return payload


def dumps(value: Any) -> str:
    """Encode a plain value to a tagged-JSON string (see :func:`encode`)."""
    try:
        return json.dumps(encode(value), separators=(",", ":"))
    except (RecursionError, ValueError) as exc:
        if isinstance(exc, PlainDataError):
            raise
        raise PlainDataError(str(exc)) from None


def loads(text: str | bytes) -> Any:
    """Decode a tagged-JSON string produced by :func:`dumps`.

    Raises:
        PlainDataError: the text is not valid tagged JSON.
    """
    try:
        return decode(json.loads(text))
    except PlainDataError:
        raise
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        raise PlainDataError(f"not tagged JSON: {exc}") from None


def values_equal(a: Any, b: Any, *, rel_tol: float = 1e-9, abs_tol: float = 1e-12) -> bool:
    """Compare two plain values by type and content.

    Types must match exactly at every level (``1 != True``, ``1 != 1.0``, ``[1] != (1,)``).
    Floats compare with :func:`math.isclose` under ``rel_tol``/``abs_tol``, and two NaNs are
    equal. Both arguments are expected to be plain (decoded in the trusted parent); anything else
    compares unequal.
    """
    ta, tb = type(a), type(b)
    if ta is not tb or ta not in _SCALARS + (list, tuple, dict, set, frozenset):
        return False
    if ta is float:
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b or math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    if ta is complex:
        return values_equal(a.real, b.real, rel_tol=rel_tol, abs_tol=abs_tol) and values_equal(
            a.imag, b.imag, rel_tol=rel_tol, abs_tol=abs_tol
        )
    if ta in (list, tuple):
        return len(a) == len(b) and all(
            values_equal(x, y, rel_tol=rel_tol, abs_tol=abs_tol) for x, y in zip(a, b)
        )
    if ta is dict:
        if len(a) != len(b):
            return False
        for key, val in a.items():
            if key not in b or type(key) is not type(_key_in(b, key)):
                return False
            if not values_equal(val, b[key], rel_tol=rel_tol, abs_tol=abs_tol):
                return False
        return True
    if ta in (set, frozenset):
        return bool(a == b) and {type(x) for x in a} == {type(x) for x in b}
    return bool(a == b)


def python_equal(a: Any, b: Any) -> bool:
    """Python's ``a == b`` on two decoded plain values (the authors' comparison).

    ``1 == 1.0 == True``, ``[1] != (1,)``, ``nan != nan``, floats compare exactly. Both values
    are plain data decoded in the trusted parent, so no user-defined ``__eq__`` runs; a
    comparison that cannot complete (a structure nested past the recursion limit) is unequal.
    """
    try:
        return bool(a == b)
    except (RecursionError, MemoryError, TypeError, ValueError):
        return False


EQUALITIES = ("python", "strict")
"""Names of the value comparisons: :func:`python_equal` and :func:`values_equal`."""


def equality(name: str) -> Callable[[Any, Any], bool]:
    """The comparison called ``name`` (``"python"`` or ``"strict"``, see :data:`EQUALITIES`)."""
    if name == "python":
        return python_equal
    if name == "strict":
        return values_equal
    raise ValueError(f"equality must be one of {EQUALITIES}, got {name!r}")


def _key_in(mapping: dict[Any, Any], key: Any) -> Any:
    for k in mapping:
        if k == key:
            return k
    return None


def to_source(value: Any) -> str:
    """Return Python source that evaluates to the plain ``value`` (for display and replay)."""
    kind = type(value)
    if kind is float:
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(value)
    if kind is complex:
        return f"complex({to_source(value.real)}, {to_source(value.imag)})"
    if kind is list:
        return "[" + ", ".join(to_source(v) for v in value) + "]"
    if kind is tuple:
        inner = ", ".join(to_source(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if kind is dict:
        return "{" + ", ".join(f"{to_source(k)}: {to_source(v)}" for k, v in value.items()) + "}"
    if kind in (set, frozenset):
        if not value:
            return "set()" if kind is set else "frozenset()"
        # sorted, so the text is the same whatever order this process's hash seed gives
        inner = "{" + ", ".join(sorted(to_source(v) for v in value)) + "}"
        return inner if kind is set else f"frozenset({inner})"
    return repr(value)
