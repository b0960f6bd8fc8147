"""Immutable IR nodes, hash-consed.

Terms, formulas and abstract values are DAGs: a path condition is shared by every value built
under it, and an if-then-else repeats its arms' subterms. Structural hashing or equality that
walks such a DAG as a tree is exponential. So each node class interns its instances: building
a node whose fields equal an existing node's returns that node. Structural equality is then
identity, and a node's hash is its identity's: both are the C slots of `object`, so that a
table lookup, which hashes the fields of the node asked for, costs no Python call per child."""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")


# Each node class's table of interned instances, in a one-element list so that it can be
# swapped: weak by default, so that a long scan in one process frees what a file built.
_TABLES: list[list[Any]] = []


def keep_interned_nodes() -> None:
    """Hold every interned node for the rest of the process, in a plain dict: for a worker
    that analyses one file and exits, where the weak table's bookkeeping (a weak reference
    with a callback per node, a Python-level lookup) cost 4-5% of a scan, and what it would
    free is freed when the worker exits (a worker's peak RSS on SGLang 0.5.23 rose by 3-4 MB,
    to 175-177 MB)."""
    for holder in _TABLES:
        if not isinstance(holder[0], dict):
            holder[0] = dict(holder[0].items())


@dataclass_transform(frozen_default=True)
def node(cls: type[T]) -> type[T]:
    """`@dataclass(frozen=True)`, interned, with identity for equality and hash."""
    # eq=False: the generated `__eq__` (and the `__hash__` that goes with it) would be
    # replaced below anyway, and generating them costs 0.1 ms per class at import (4-5 ms of
    # every run that loads the analyser, measured with 15 imports each way).
    made: Any = dataclasses.dataclass(frozen=True, eq=False)(cls)
    fields = dataclasses.fields(made)
    names = [f.name for f in fields]
    defaults = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}
    holder: list[Any] = [weakref.WeakValueDictionary()]
    _TABLES.append(holder)
    count = len(names)
    init = made.__init__

    # A node found in the table is returned as it is: the dataclass `__init__` (one
    # `object.__setattr__` per field) runs once, on the node made, and the class's own
    # `__init__` does nothing. Most nodes a scan builds exist already (1.5 million
    # constructions on SGLang 0.5.23): finding one in a worker's table costs 0.43 us against
    # 1.16 us with `__init__` run again (a `Sym`), and a cold scan 3% less.
    def __new__(klass: type[Any], *args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != count:
            try:
                values = (
                    *args,
                    *(kwargs[n] if n in kwargs else defaults[n] for n in names[len(args) :]),
                )
            except KeyError:  # a missing argument: the dataclass `__init__` says so
                values = None
            if values is None or len(args) > count or not kwargs.keys() <= set(names[len(args) :]):
                made_obj = object.__new__(klass)
                init(made_obj, *args, **kwargs)  # raises the TypeError Python would
                return made_obj
        else:
            values = args
        table = holder[0]
        try:
            found = table.get(values)
        except TypeError:  # an unhashable field: not interned
            made_obj = object.__new__(klass)
            init(made_obj, *args, **kwargs)
            return made_obj
        if found is not None:
            return found
        made_obj = object.__new__(klass)
        init(made_obj, *args, **kwargs)
        table[values] = made_obj
        return made_obj

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        pass

    def __reduce__(self: Any) -> tuple[Any, ...]:
        return (type(self), tuple(getattr(self, n) for n in names))

    made.__new__ = __new__
    made.__init__ = __init__
    # Two nodes built with equal fields are one object (the table above), so identity is
    # structural equality. A node with an unhashable field is not interned and equals only
    # itself (a structural hash of it would raise). In place of a cached structural hash (a
    # Python call per child hashed: py-spy gave `_hash` 4.1% of a cold scan's samples, `_eq`
    # 1.2%), a cold scan of SGLang 0.5.23 took 15.22 s against 17.31 s (medians of 4
    # alternating runs).
    made.__hash__ = object.__hash__
    made.__eq__ = object.__eq__
    made.__reduce__ = __reduce__
    return made  # type: ignore[no-any-return]
