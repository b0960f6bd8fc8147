"""Syntax trees of class texts kept in the cache from one scan to the next.

Unpickling a class's libcst tree is quicker than parsing its text (bench/RESULTS.md, "What
each change did"). A scan after an edit parses again the classes around the edited one (its base
classes, the subclasses in other files), whose text did not change. A text's trees are stored the second time a scan parses it
(the first leaves a mark): pickling costs about as much as parsing, and most texts a cold scan
parses are never parsed again. Keyed by the digest of the text, idxcheck's code and libcst's
version; a tree that does not unpickle is parsed again.

The edited class itself is parsed chunk by chunk (`idxcheck.source.chunks`), and the chunks
are kept the same way: after an edit of one method, the other methods' trees come from here."""

from __future__ import annotations

import ast
import copyreg
import dataclasses
import functools
import hashlib
import io
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from idxcheck.incremental.cache import Cache
from idxcheck.incremental.stored import loads
from idxcheck.model.stable import digest
from idxcheck.source import files as source
from idxcheck.source.files import Parsed
from idxcheck.source.lazy_import import lazy_module

if TYPE_CHECKING:
    import libcst as cst
else:
    cst = lazy_module("libcst")

_SEEN = b""  # the mark of a text parsed once


def _libcst_version() -> str:
    from idxcheck.source.lazy_import import lazy_module

    return str(getattr(lazy_module("libcst"), "LIBCST_VERSION", "unknown"))


class ParseStore:
    """Whole class texts' trees (`get`, `parsed`) and their chunks' (`get_chunk`,
    `parsed_chunk`, `idxcheck.source.chunks`), under keys of their own. What is parsed is
    written at `flush`, in one transaction: a class is a few dozen chunks."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        versions = (cache.versions(), _libcst_version())
        self._prefix = digest("parse", *versions)
        self._chunk_prefix = digest("parse-chunk", *versions)
        self._marked: dict[str, bool] = {}  # by key: whether `get` found the mark
        self._pending: dict[str, bytes] = {}  # written at `flush`

    def _key(self, prefix: str, text: str) -> str:
        data = text.encode("utf-8", "surrogatepass")
        return digest(prefix, hashlib.sha256(data).hexdigest())

    def get(self, text: str) -> Parsed | None:
        found: Parsed | None = self._load(
            self._key(self._prefix, text), tuple[ast.Module | SyntaxError, cst.Module | None]
        )
        return found

    def get_chunk(self, text: str) -> cst.Module | None:
        found: cst.Module | None = self._load(self._key(self._chunk_prefix, text), cst.Module)
        return found

    def parsed(self, text: str, trees: Parsed) -> None:
        """A text parsed (after `get` missed it): marked the first time, its trees stored the
        second."""
        self._note(self._key(self._prefix, text), trees)

    def parsed_chunk(self, text: str, module: cst.Module) -> None:
        self._note(self._key(self._chunk_prefix, text), module)

    def flush(self) -> None:
        if self._pending:
            self.cache.put_parses(list(self._pending.items()))
            self._pending.clear()

    def _load(self, key: str, shape: object) -> Any:
        stored = self._pending.get(key)
        if stored is None:
            stored = self.cache.get_parse(key)
        self._marked[key] = stored is not None
        if not stored:
            return None
        # None: another layout of the node classes, a tree too deep, not a tree: parse it
        return loads(stored, shape)

    def _note(self, key: str, value: object) -> None:
        marked = self._marked.pop(key, None)
        if marked is None:
            marked = key in self._pending or self.cache.get_parse(key) is not None
        if not marked:
            self._pending[key] = _SEEN
            return
        try:
            data = _dumps(value)
        except (RecursionError, pickle.PicklingError, TypeError):
            return
        self._pending[key] = data


# Each libcst node class's reducer (`_node_reducers`), made once a process.
_REDUCERS: dict[type, Callable[[Any], Any]] | None = None
# What `object.__reduce_ex__` names to make an instance without `__init__` (typeshed lacks it).
_NEWOBJ: Callable[..., Any] = copyreg.__newobj__  # type: ignore[attr-defined]


def _dumps(value: object) -> bytes:
    """`pickle.dumps(value, pickle.HIGHEST_PROTOCOL)`, the same bytes, faster for libcst's
    trees: a node pickles by its `__getstate__`, which asks `dataclasses.fields` for the
    class's fields each time, where this keeps the names per class (bench/RESULTS.md, "What
    each change did")."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _node_reducers()
    pickler.dump(value)
    return buffer.getvalue()


def _node_reducers() -> dict[type, Callable[[Any], Any]]:
    """copyreg's table, plus a reducer for each libcst node class whose state is its fields
    by name (libcst's slotted dataclasses): what `object.__reduce_ex__` gives for them, from
    the field names kept once."""
    global _REDUCERS
    if _REDUCERS is None:
        table: dict[type, Callable[[Any], Any]] = dict(copyreg.dispatch_table)
        pending: list[type] = [cst.CSTNode]
        while pending:
            cls = pending.pop()
            pending.extend(cls.__subclasses__())
            if (
                dataclasses.is_dataclass(cls)
                and "__slots__" in cls.__dict__
                and cls.__reduce_ex__ is object.__reduce_ex__  # no reduction of its own
                and cls.__reduce__ is object.__reduce__
            ):
                names = tuple(field.name for field in dataclasses.fields(cls))
                table[cls] = functools.partial(_reduce_node, cls, names)
        _REDUCERS = table
    return _REDUCERS


def _reduce_node(cls: type, names: tuple[str, ...], node: Any) -> tuple[Any, ...]:
    return (_NEWOBJ, (cls,), {name: getattr(node, name) for name in names})


@contextmanager
def parses_from(cache: Cache | None) -> Iterator[None]:
    """Within, `SourceFile.parse_block` takes and keeps class trees in `cache` (written as
    the block ends)."""
    if cache is None:
        yield
        return
    before = source.parse_store
    store = source.parse_store = ParseStore(cache)
    try:
        yield
    finally:
        source.parse_store = before
        store.flush()
