"""Immutable IR nodes, hash-consed.

Terms, formulas and abstract values are DAGs: a path condition is shared by every value built
under it, and an if-then-else repeats its arms' subterms. Structural hashing or equality that
walks such a DAG as a tree is exponential. So each node class interns its instances: building
a node whose fields equal an existing node's returns that node. Structural equality is then
identity, and a node's hash is its identity's: both are the C slots of `object`, so that a
table lookup, which hashes the fields of the node asked for, costs no Python call per child."""

from __future__ import annotations

import dataclasses
import inspect
import weakref
from collections.abc import Callable
from functools import partial
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
    # The dataclass machinery is asked for the fields only (no method it would generate, each
    # compiled from a text at import): a node is filled field by field below, its `__repr__`,
    # `__setattr__` and `__delattr__` are shared by every node class. Every run that loads the
    # analyser builds these classes (bench/RESULTS.md, "What each change did", and "Imports
    # of a pre-commit run").
    if not cls.__doc__:
        # What the dataclass would write there, from a signature it would have to inspect.
        cls.__doc__ = f"{cls.__name__}({', '.join(inspect.get_annotations(cls))})"
    made: Any = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(made)
    names = tuple(f.name for f in fields)
    defaults = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}
    if any(f.default_factory is not dataclasses.MISSING for f in fields):
        raise TypeError(f"a node's field cannot have a default_factory: {cls.__qualname__}")
    holder: list[Any] = [weakref.WeakValueDictionary()]
    _TABLES.append(holder)
    count = len(names)

    def made_from(klass: type[Any], values: tuple[Any, ...]) -> Any:
        # The fields go straight into the instance's dict, where `object.__setattr__` would
        # put them one Python call each (the class's own `__setattr__` refuses): one call
        # for them all (bench/RESULTS.md, "Where a cold scan's Python time went").
        made_obj = object.__new__(klass)
        made_obj.__dict__.update(zip(names, values, strict=True))
        return made_obj

    # A node found in the table is returned as it is: its fields are set once, on the node
    # made, and the class's own `__init__` does nothing. Most nodes a scan builds exist
    # already, and finding one without filling it again is much quicker (bench/RESULTS.md,
    # "What each change did", and "Measurements that stood in code comments").
    def __new__(klass: type[Any], *args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != count:
            if len(args) > count or not kwargs.keys() <= set(names[len(args) :]):
                values = None
            else:
                try:
                    values = (
                        *args,
                        *(kwargs[n] if n in kwargs else defaults[n] for n in names[len(args) :]),
                    )
                except KeyError:  # a missing argument
                    values = None
            if values is None:
                _signature(klass, names, defaults)(*args, **kwargs)  # the TypeError Python raises
                raise AssertionError("a wrong call to a node class was accepted")
        else:
            values = args
        table = holder[0]
        try:
            found = table.get(values)
        except TypeError:  # an unhashable field: not interned
            return made_from(klass, values)
        if found is not None:
            return found
        made_obj = made_from(klass, values)
        table[values] = made_obj
        return made_obj

    def __reduce__(self: Any) -> tuple[Any, ...]:
        return (type(self), tuple(getattr(self, n) for n in names))

    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{type(self).__qualname__}({shown})"

    made.__new__ = __new__
    made.__init__ = _no_init
    made.__repr__ = __repr__
    made.__setattr__ = _frozen_setattr
    made.__delattr__ = _frozen_delattr
    # Two nodes built with equal fields are one object (the table above), so identity is
    # structural equality. A node with an unhashable field is not interned and equals only
    # itself (a structural hash of it would raise). Identity replaces a cached structural hash,
    # a Python call per child hashed (bench/RESULTS.md, "What each change did").
    made.__hash__ = object.__hash__
    made.__eq__ = object.__eq__
    made.__reduce__ = __reduce__
    return made  # type: ignore[no-any-return]


def _no_init(self: Any, *args: Any, **kwargs: Any) -> None:
    pass


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _signature(
    klass: type[Any], names: tuple[str, ...], defaults: dict[str, Any]
) -> Callable[..., None]:
    """A function that takes a node class's arguments as its dataclass `__init__` would, for
    the error of a wrong call (made on such a call only: compiling it costs time)."""
    params = ", ".join(f"{n}=_defaults[{n!r}]" if n in defaults else n for n in names)
    scope: dict[str, Any] = {"_defaults": defaults}
    exec(f"def __init__(self, {params}):\n    pass\n", scope)
    init = scope["__init__"]
    init.__qualname__ = f"{klass.__qualname__}.__init__"
    return partial(init, None)
