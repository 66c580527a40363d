"""A name → callable registry, so a notebook parameter (a string) selects an instrument
(an arm, an intervention, a scorer, an item suite, a recall family, a factor...).

Each design keeps one :class:`Registry` per kind of instrument. Asking
for a name that is not there raises :class:`UnknownNameError`, which lists the valid
names — a typo in a notebook parameter fails at once, with the fix in the message.
A registry lists its names sorted, or, made with ``keep_order=True``, in the order they
were added, where that order means something (it is the order of a grid's cells).
"""
from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError, ValueError):
    """An arm / intervention / scorer / item name that is not registered."""

    def __init__(self, kind: str, name: object, valid: list[str]) -> None:
        self.kind, self.name, self.valid = kind, name, valid
        plural = kind[:-1] + "ies" if kind.endswith("y") else kind + "s"  # recall family -> families
        super().__init__(f"unknown {kind} {name!r}; valid {plural}: {', '.join(valid)}")

    def __str__(self) -> str:  # KeyError would quote the whole message
        return self.args[0]


class Registry(Generic[T]):
    """Named instruments of one kind (``"arm"``, ``"intervention"``, ``"scorer"``...)."""

    def __init__(self, kind: str, *, keep_order: bool = False) -> None:
        self.kind = kind
        self.keep_order = keep_order
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = item
        return item

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""
        return lambda item: self.add(name, item)

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise UnknownNameError(self.kind, name, self.names()) from None

    def names(self) -> list[str]:
        """Sorted, or in the order added with ``keep_order``."""
        return list(self._items) if self.keep_order else sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)
