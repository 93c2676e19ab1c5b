"""Journal events to JSON objects and back: the one place that knows how a record sits on disk.

A record's fields become keys of the same name (``metadata["json"]`` renames
one); enums become their values, tuples lists, a value with ``to_json`` (an
``Iteration``, a ``Failure``) its document. Reading goes the other way by the
fields' type annotations, a class with ``from_json`` rebuilding itself, and is
tolerant as ``events.py`` describes: an event that still cannot be read
becomes an ``UnknownEvent`` naming the problem, never an exception.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from typing import Any, Dict, Type

from repairloop.journal.events import EVENT_CLASSES, JournalEvent, ReadEvent, UnknownEvent

_BY_KIND: Dict[str, Type[Any]] = {cls.kind.value: cls for cls in EVENT_CLASSES}


def json_key(f: dataclasses.Field[Any]) -> str:
    """The journal key of a record field: its name, or the ``metadata["json"]`` that renames it."""
    return str(f.metadata.get("json", f.name))


def event_to_json(event: JournalEvent) -> Dict[str, Any]:
    """The fields of ``event``'s journal line (without ``event`` and ``ts``), as JSON values."""
    custom = getattr(event, "to_json", None)
    if custom is not None:
        return dict(custom())
    return {json_key(f): encode(getattr(event, f.name)) for f in dataclasses.fields(event)}


def encode(value: Any) -> Any:
    """``value`` as JSON values; what is left over (paths, sets, exceptions) the dumper converts."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {json_key(f): encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    return value


def event_from_json(data: Dict[str, Any]) -> ReadEvent:
    """The record of one journal line (``data`` holds ``event``, ``ts`` and the fields); never
    raises."""
    name = str(data.get("event", ""))
    cls = _BY_KIND.get(name)
    if cls is None:
        return UnknownEvent(name, data, "an event kind this version of repairloop does not know")
    try:
        event: ReadEvent = decode(cls, data)
    except (TypeError, ValueError, KeyError) as err:
        return UnknownEvent(name, data, f"could not read this {name} event: {err}")
    return event


def decode(hint: Any, raw: Any) -> Any:
    """``raw`` (JSON values) as the annotated type ``hint``. Raises TypeError/ValueError when it
    does not fit."""
    if hint is Any:
        return raw
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        if raw is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"cannot read a value as {hint}")
        return decode(inner[0], raw)
    if origin is tuple:
        if not isinstance(raw, (list, tuple)):
            raise TypeError(f"expected a list, got {type(raw).__name__}")
        return tuple(decode(args[0], v) for v in raw)
    if origin is dict:
        if not isinstance(raw, dict):
            raise TypeError(f"expected an object, got {type(raw).__name__}")
        return dict(raw)
    if isinstance(hint, type):
        return _decode_class(hint, raw)
    raise TypeError(f"cannot read a value as {hint}")


def _decode_class(cls: Type[Any], raw: Any) -> Any:
    if issubclass(cls, enum.Enum):
        return cls(raw)
    if hasattr(cls, "from_json"):
        return cls.from_json(raw)
    if dataclasses.is_dataclass(cls):
        return _decode_fields(cls, raw)
    if cls is bool and isinstance(raw, bool):
        return raw
    if (
        cls is int
        and isinstance(raw, (int, float))
        and not isinstance(raw, bool)
        and float(raw).is_integer()
    ):
        return int(raw)
    if cls is float and isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return float(raw)
    if cls is str and isinstance(raw, str):
        return raw
    raise TypeError(f"expected {cls.__name__}, got {type(raw).__name__} {raw!r:.60}")


def _decode_fields(cls: Type[Any], raw: Any) -> Any:
    """A dataclass from a JSON object: unknown keys ignored, missing ones defaulted or empty."""
    if not isinstance(raw, dict):
        raise TypeError(f"expected an object for {cls.__name__}, got {type(raw).__name__}")
    hints = _hints(cls)
    values: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        key = json_key(f)
        if key in raw:
            values[f.name] = decode(hints[f.name], raw[key])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            values[f.name] = empty_value(hints[f.name], f.name)
    return cls(**values)


_HINTS: Dict[Type[Any], Dict[str, Any]] = {}  # filled on first use: no work at import time


def _hints(cls: Type[Any]) -> Dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


_EMPTY: Dict[Any, Any] = {str: "", int: 0, float: 0.0, bool: False}


def empty_value(hint: Any, name: str = "") -> Any:
    """What a field missing from an older journal reads as. Raises TypeError when its type has no
    empty value."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or (origin is typing.Union and type(None) in args):
        return None
    if origin is tuple:
        return ()
    if origin is dict:
        return {}
    if hint in _EMPTY:
        return _EMPTY[hint]
    raise TypeError(f"the field {name!r} is missing")
