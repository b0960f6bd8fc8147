"""A digest of plain data (dataclasses, IR nodes, containers, places) that is the same in every
run: Python's own `hash` of strings, and so the iteration order of sets, changes with
PYTHONHASHSEED, and a pickle of a set follows that order.

The tree facts are keyed by it (`idxcheck.incremental.keys.context_key`): a cached file analysis depends
on what the tree facts are, not on the text they were read from, so that editing a file the
facts are read from (a backend that quotes a registry name in a `raise`) keeps every other
file's analysis unless the facts themselves change."""

from __future__ import annotations

import dataclasses
import enum
import hashlib

from idxcheck.model.spans import Loc


def digest(*parts: str) -> str:
    """The digest of some strings, in order: the cache keys' hash. Paths may hold any bytes
    (`os.fsdecode` gives a name that is not UTF-8 as lone surrogates): encoded with
    `surrogatepass`, which is one to one."""
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.encode("utf-8", "surrogatepass"))
        hasher.update(b"\x1f")
    return hasher.hexdigest()


def stable_digest(value: object) -> str:
    """The digest of `value`'s structure: dataclass fields in order, lists and tuples in order,
    dicts in insertion order, sets sorted, places by their span and text. Shared parts (IR
    nodes are DAGs) are digested once. Anything else raises TypeError: an object without a
    stable rendering must not silently make a key that changes from run to run."""
    return _Digester().digest(value)


class _Digester:
    def __init__(self) -> None:
        # id -> (object, digest): the object is held so that its id is not reused meanwhile.
        self.memo: dict[int, tuple[object, str]] = {}

    def digest(self, value: object) -> str:
        found = self.memo.get(id(value))
        if found is not None and found[0] is value:
            return found[1]
        # `surrogatepass`: a path that is not UTF-8 holds lone surrogates (`os.fsdecode`).
        result = hashlib.sha256(self._render(value).encode("utf-8", "surrogatepass")).hexdigest()
        self.memo[id(value)] = (value, result)
        return result

    def _render(self, value: object) -> str:
        if value is None or isinstance(value, (bool, int, float, str, bytes, enum.Enum)):
            return f"{type(value).__name__}:{value!r}"
        if isinstance(value, Loc):
            return f"Loc:{self.digest(value.span)}:{value.text!r}"
        if isinstance(value, (tuple, list)):
            inner = ",".join(self.digest(item) for item in value)
            return f"{type(value).__name__}[{inner}]"
        if isinstance(value, (set, frozenset)):
            inner = ",".join(sorted(self.digest(item) for item in value))
            return f"{type(value).__name__}{{{inner}}}"
        if isinstance(value, dict):
            inner = ",".join(f"{self.digest(k)}:{self.digest(v)}" for k, v in value.items())
            return f"dict{{{inner}}}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            inner = ",".join(
                f"{f.name}={self.digest(getattr(value, f.name))}" for f in dataclasses.fields(value)
            )
            return f"{type(value).__module__}.{type(value).__qualname__}({inner})"
        raise TypeError(f"no stable digest for a {type(value).__name__}")
