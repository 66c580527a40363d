"""Typed access to the fields of a decoded transcript record.

A reader takes every field it uses through one of these accessors, so a field of the
wrong type (``"text": 42``, a list where an id belongs, a string where an object
belongs) raises :class:`BadRecord` naming the field and what was found, instead of a
``TypeError`` deep inside the reader. The reader catches it per record: the record is
skipped and counted in the parse report with its line, nothing of it half-applied.

``what`` names the field in messages (a path such as ``message.content[2].text``); it
defaults to the key. ``None`` (JSON ``null``) and an absent key are the same: the accessor returns the
default. ``true``/``false`` are never numbers here, although Python's ``bool`` is an
``int``.
"""
from __future__ import annotations

from typing import Any, Iterator

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


def _opt(obj: dict, key: str, kind: type, what: str | None, default: Any) -> Any:
    value = obj.get(key)
    if value is None:
        return default
    return value if type(value) is kind else expect(value, (kind,), what or key)


def opt_str(obj: dict, key: str, what: str | None = None, default: str | None = None) -> str | None:
    return _opt(obj, key, str, what, default)


def opt_bool(obj: dict, key: str, what: str | None = None) -> bool:
    return _opt(obj, key, bool, what, False)


def opt_int(obj: dict, key: str, what: str | None = None) -> int | None:
    return _opt(obj, key, int, what, None)


def opt_dict(obj: dict, key: str, what: str | None = None) -> dict | None:
    return _opt(obj, key, dict, what, None)


def opt_list(obj: dict, key: str, what: str | None = None) -> list | None:
    return _opt(obj, key, list, what, None)


def req_str(obj: dict, key: str, what: str | None = None) -> str:
    value = obj.get(key)
    if value is None:
        raise BadRecord(f"{what or key} is missing")
    return expect(value, (str,), what or key)


def dict_item(value: Any, what: str) -> dict:
    """An element of a list that must be an object (a content block, a history item)."""
    return expect(value, (dict,), what)


def blocks(items: list, what: str) -> Iterator[tuple[str, dict, str | None]]:
    """``(path, block, type)`` for each block of a content list: each must be an object,
    its ``type`` a string or absent."""
    for i, b in enumerate(items):
        path = f"{what}[{i}]"
        b = dict_item(b, path)
        yield path, b, opt_str(b, "type", f"{path}.type")


def str_items(obj: dict, key: str, what: str | None = None) -> tuple[str, ...]:
    """A list of strings (ids); absent or null is the empty tuple."""
    what = what or key
    items = opt_list(obj, key, what) or []
    return tuple(expect(v, (str,), f"{what}[{i}]") for i, v in enumerate(items))


def content_value(obj: dict, key: str, what: str | None = None) -> str | list | None:
    """A message content: a string, a list of blocks, or absent."""
    value = obj.get(key)
    return None if value is None else expect(value, (str, list), what or key)
