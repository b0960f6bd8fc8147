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
    with a callback per node, a Python-level lookup) costs a share of a scan worth saving, and
    what it would free is freed when the worker exits: its peak memory barely grows
    (bench/RESULTS.md, "What each change did", and "Measurements that stood in code
    comments")."""
    for holder in _TABLES:
        if not isinstance(holder[0], dict):
            holder[0] = dict(holder[0].items())


@dataclass_transform(frozen_default=True)
def node(cls: type[T]) -> type[T]:
    """`@dataclass(frozen=True)`, interned, with identity for equality and hash."""
    # eq=False: the generated `__eq__` (and the `__hash__` that goes with it) would be
    # replaced below anyway, and generating them costs time at import in every run that loads
    # the analyser (bench/RESULTS.md, "What each change did", and "Measurements that stood in
    # code comments").
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
    # `__init__` does nothing. Most nodes a scan builds exist already, and finding one without
    # running `__init__` again is much quicker (bench/RESULTS.md, "What each change did", and
    # "Measurements that stood in code comments").
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
    # itself (a structural hash of it would raise). Identity replaces a cached structural hash,
    # a Python call per child hashed (bench/RESULTS.md, "What each change did").
    made.__hash__ = object.__hash__
    made.__eq__ = object.__eq__
    made.__reduce__ = __reduce__
    return made  # type: ignore[no-any-return]
