"""Syntax trees of class texts kept in the cache from one scan to the next.

libcst parses a class in about 2.6 times the time that unpickling its tree takes (the
attention backends of SGLang 0.5.23: 1.96 s against 0.74 s for 107 classes). A scan after an
edit parses again the classes around the edited one (its base classes, the subclasses in other
files), whose text did not change. A text's trees are stored the second time a scan parses it
(the first leaves a mark): pickling costs about as much as parsing, and most texts a cold scan
parses are never parsed again. Keyed by the digest of the text, idxcheck's code and libcst's
version; a tree that does not unpickle is parsed again."""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Iterator
from contextlib import contextmanager

from idxcheck.cache import Cache, digest
from idxcheck.extract import source
from idxcheck.extract.source import Parsed

_SEEN = b""  # the mark of a text parsed once


def _libcst_version() -> str:
    from idxcheck.lazy_import import lazy_module

    return str(getattr(lazy_module("libcst"), "LIBCST_VERSION", "unknown"))


class ParseStore:
    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self._prefix = digest("parse", cache.versions(), _libcst_version())
        self._marked: dict[str, bool] = {}  # by key: whether `get` found the mark

    def _key(self, text: str) -> str:
        data = text.encode("utf-8", "surrogatepass")
        return digest(self._prefix, hashlib.sha256(data).hexdigest())

    def get(self, text: str) -> Parsed | None:
        key = self._key(text)
        stored = self.cache.get_parse(key)
        self._marked[key] = stored is not None
        if not stored:
            return None
        try:
            found = pickle.loads(stored)
        except Exception:  # another layout of the node classes, a tree too deep: parse it
            return None
        return found if isinstance(found, tuple) and len(found) == 2 else None

    def parsed(self, text: str, trees: Parsed) -> None:
        """A text parsed (after `get` missed it): marked the first time, its trees stored the
        second."""
        key = self._key(text)
        marked = self._marked.pop(key, None)
        if marked is None:
            marked = self.cache.get_parse(key) is not None
        if not marked:
            self.cache.put_parse(key, _SEEN)
            return
        try:
            data = pickle.dumps(trees, pickle.HIGHEST_PROTOCOL)
        except (RecursionError, pickle.PicklingError, TypeError):
            return
        self.cache.put_parse(key, data)


@contextmanager
def parses_from(cache: Cache | None) -> Iterator[None]:
    """Within, `SourceFile.parse_block` takes and keeps class trees in `cache`."""
    if cache is None:
        yield
        return
    before = source.parse_store
    source.parse_store = ParseStore(cache)
    try:
        yield
    finally:
        source.parse_store = before
