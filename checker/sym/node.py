"""Immutable IR nodes with cached structural hashes.

Terms, formulas and abstract values are DAGs: a path condition is shared by every value built
under it, and an if-then-else repeats its arms' subterms. Python's generated dataclass hash
walks the whole structure each time (exponential on a DAG); these nodes compute it once, and
equality tests the cached hashes before the fields."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def _hash(self: Any) -> int:
    try:
        return self.__dict__["_hash"]  # type: ignore[no-any-return]
    except KeyError:
        value = hash((type(self).__name__, *(getattr(self, f.name) for f in dataclasses.fields(self))))
        object.__setattr__(self, "_hash", value)
        return value


def _eq(self: Any, other: object) -> bool:
    if self is other:
        return True
    if type(self) is not type(other):
        return NotImplemented  # type: ignore[no-any-return]
    if _hash(self) != _hash(other):
        return False
    return all(getattr(self, f.name) == getattr(other, f.name) for f in dataclasses.fields(self))


def node(cls: type[T]) -> type[T]:
    """`@dataclass(frozen=True)` with a cached hash and a hash-first equality."""
    made = dataclasses.dataclass(frozen=True)(cls)
    made.__hash__ = _hash  # type: ignore[method-assign]
    made.__eq__ = _eq  # type: ignore[method-assign,assignment]
    return made
