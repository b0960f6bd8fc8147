"""What the disk cache holds, read back as data and never as code.

A cache folder is input like any other (a CI cache restored from an earlier run, a shared
runner's folder): an entry is checked before it is used, and one that fails is a miss, which
the scan computes again.

- Pickles are read by an unpickler that builds only the classes the cache's entries are made
  of: idxcheck's and libcst's dataclasses and enums, Python's syntax tree nodes (`ast`), a few
  builtin containers and exceptions, and `Loc.fixed`, by which a place pickles. Any other
  name (a function such as `os.system`, `getattr`, a class with behaviour) refuses the entry:
  the default unpickler would call whatever the bytes name.
- What was loaded must then have the shape its reader expects (`conforms`): classes by
  `isinstance` (a dataclass's fields are not looked into), tuples, lists, dicts and unions
  element by element.

A well-formed entry of the right classes is still trusted for what it says: keep the cache
as private as the results it holds."""

from __future__ import annotations

import ast
import builtins
import dataclasses
import enum
import importlib
import io
import pickle
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

# Builtins an entry may name: containers and scalars whose construction runs no code of the
# entry's choosing. Exceptions are allowed too (a syntax error is stored with its text).
_BUILTINS = frozenset(
    {
        "bool",
        "bytearray",
        "bytes",
        "complex",
        "dict",
        "float",
        "frozenset",
        "int",
        "list",
        "range",
        "set",
        "slice",
        "str",
        "tuple",
        "Ellipsis",
    }
)
# Packages whose dataclasses and enums an entry may name.
_PACKAGES = ("idxcheck", "libcst")
# Classes of those packages that are neither: where they may be built from.
_PLAIN = frozenset({("idxcheck.model.spans", "Loc")})
# Class methods an entry may call, by class (a method pickles as `getattr(class, name)`).
_METHODS: Mapping[tuple[str, str], frozenset[str]] = {
    ("idxcheck.model.spans", "Loc"): frozenset({"fixed"})
}
# Modules of the packages never imported to read an entry: the runtime companion loads torch.
_NEVER_IMPORTED = ("idxcheck.runtime_kernels", "idxcheck.__main__")

# (module, name) -> what `find_class` gives, for the names allowed so far.
_FOUND: dict[tuple[str, str], object] = {}


class Refused(pickle.UnpicklingError):
    pass


def loads(data: bytes, shape: object) -> Any:
    """The value pickled in `data`, or None where it does not load with the allowed classes
    or does not have the shape `shape` (a type or a type hint; `object` for any value)."""
    try:
        value = _Loader(io.BytesIO(data)).load()
    except Exception:  # refused, truncated, another layout of the classes, a tree too deep
        return None
    return value if conforms(value, shape) else None


def hex_digest(data: bytes | None) -> str | None:
    """A stored SHA-256 hex digest (a key that names another entry), or None."""
    if data is None or len(data) != 64:
        return None
    try:
        text = data.decode("ascii")
        int(text, 16)
    except ValueError:
        return None
    return text


class _Loader(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        key = (module, name)
        found = _FOUND.get(key)
        if found is None:
            found = _allowed(module, name)
            _FOUND[key] = found
        return found


def _allowed(module: str, name: str) -> object:
    refused = Refused(f"a cache entry names {module}.{name}, which the cache never stores")
    if "." in name:  # protocol 4 looks dotted names up attribute by attribute
        raise refused
    if module == "builtins":
        if name == "getattr":
            return _member
        found = getattr(builtins, name, None)
        if name in _BUILTINS or (isinstance(found, type) and issubclass(found, BaseException)):
            return found
        raise refused
    if module in ("ast", "_ast"):
        found = getattr(ast, name, None)
        if isinstance(found, type) and issubclass(found, ast.AST):
            return found
        raise refused
    if module.split(".")[0] not in _PACKAGES or module.startswith(_NEVER_IMPORTED):
        raise refused
    try:
        loaded = sys.modules.get(module) or importlib.import_module(module)
    except ImportError:
        raise refused from None
    found = vars(loaded).get(name)
    if (
        isinstance(found, type)
        and found.__module__ == module  # defined there, not imported
        and (
            dataclasses.is_dataclass(found)
            or issubclass(found, enum.Enum)
            or (module, name) in _PLAIN
        )
    ):
        return found
    raise refused


def _member(owner: object, name: str) -> object:
    """`getattr` for an entry: an enum's member by name, or a class method of `_METHODS`."""
    if isinstance(owner, type):
        if issubclass(owner, enum.Enum) and name in owner.__members__:
            return owner.__members__[name]
        allowed = _METHODS.get((owner.__module__, owner.__qualname__), frozenset())
        if name in allowed and _FOUND.get((owner.__module__, owner.__qualname__)) is owner:
            return getattr(owner, name)
    raise Refused(f"a cache entry looks up {name!r} of {owner!r}")


def conforms(value: object, shape: object) -> bool:
    """Whether `value` has the shape `shape`: a class (by `isinstance`), `Any`/`object`,
    None, a union, or tuple, list, set, frozenset and dict hints checked element by
    element."""
    origin = typing.get_origin(shape)
    if origin is None:
        if shape is Any or shape is object:
            return True
        if shape is None or shape is type(None):
            return value is None
        return isinstance(shape, type) and isinstance(value, shape)
    args = typing.get_args(shape)
    if origin is typing.Union or origin is types.UnionType:
        return any(conforms(value, arg) for arg in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(item, args[0]) for item in value)
        return len(value) == len(args) and all(map(conforms, value, args))
    if origin in (list, set, frozenset):
        return isinstance(value, origin) and all(conforms(item, args[0]) for item in value)
    if origin is dict or origin is Mapping:
        return isinstance(value, origin) and all(
            conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items()
        )
    if origin is Callable:
        return callable(value)
    return isinstance(value, origin)
