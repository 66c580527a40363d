"""Typed access to the fields of a decoded transcript record.

A reader takes every field it uses through one of these accessors, so a field of the
wrong type (``"text": 42``, a list where an id belongs, a string where an object
belongs) raises :class:`BadRecord` naming the field and what was found, instead of a
``TypeError`` deep inside the reader. The reader catches it per record: the record is
skipped and counted in the parse report with its line, nothing of it half-applied.

``None`` (JSON ``null``) and an absent key are the same: the accessor returns the
default. ``true``/``false`` are never numbers here, although Python's ``bool`` is an
``int``.
"""
from __future__ import annotations

from typing import Any

_JSON_NAMES = {str: "a string", int: "a number", float: "a number", bool: "true/false",
               list: "a list", dict: "an object"}


class BadRecord(Exception):
    """A record holds a field of the wrong type (the message names field and type)."""


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type, as the error messages say it."""
    return _JSON_NAMES.get(type(value), type(value).__name__)


def expect(value: Any, kinds: tuple[type, ...], what: str) -> Any:
    """``value`` when its type is one of ``kinds``; :class:`BadRecord` naming ``what`` otherwise."""
    if type(value) in kinds:
        return value
    wanted = " or ".join(dict.fromkeys(_JSON_NAMES[k] for k in kinds))
    raise BadRecord(f"{what} is {json_type(value)}, expected {wanted}")


def opt_str(obj: dict, key: str, what: str, default: str | None = None) -> str | None:
    value = obj.get(key)
    return default if value is None else expect(value, (str,), what)


def opt_bool(obj: dict, key: str, what: str) -> bool:
    value = obj.get(key)
    return False if value is None else expect(value, (bool,), what)


def opt_int(obj: dict, key: str, what: str) -> int | None:
    value = obj.get(key)
    return None if value is None else expect(value, (int,), what)


def opt_dict(obj: dict, key: str, what: str) -> dict | None:
    value = obj.get(key)
    return None if value is None else expect(value, (dict,), what)


def opt_list(obj: dict, key: str, what: str) -> list | None:
    value = obj.get(key)
    return None if value is None else expect(value, (list,), what)


def req_str(obj: dict, key: str, what: str) -> str:
    value = obj.get(key)
    if value is None:
        raise BadRecord(f"{what} is missing")
    return expect(value, (str,), what)


def dict_item(value: Any, what: str) -> dict:
    """An element of a list that must be an object (a content block, a history item)."""
    return expect(value, (dict,), what)


def str_items(obj: dict, key: str, what: str) -> tuple[str, ...]:
    """A list of strings (ids); absent or null is the empty tuple."""
    items = opt_list(obj, key, what) or []
    return tuple(expect(v, (str,), f"{what}[{i}]") for i, v in enumerate(items))


def content_value(obj: dict, key: str, what: str) -> str | list | None:
    """A message content: a string, a list of blocks, or absent."""
    value = obj.get(key)
    return None if value is None else expect(value, (str, list), what)
