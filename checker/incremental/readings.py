"""Per-file readings of the tree facts (a file's runner widths, its argument checks, the mode
enum) in the disk cache: when the tree facts' key changes (`idxcheck.engine.tree_keys`), the
files that did not change give what was read from them last time, as long as what every
reading of that kind depends on besides the file (`inputs`) is the same."""

from __future__ import annotations

import pickle
from typing import Any

from idxcheck.incremental.cache import Cache
from idxcheck.incremental.stored import loads
from idxcheck.model.stable import digest
from idxcheck.source.files import SourceFile


class FileReadings:
    """One kind of reading, keyed by the kind, `inputs`, and each file's path and text, and
    of the shape `shape` (a type hint: a stored reading of another is a miss). Stored with the
    file analyses (bounded and cleared with them)."""

    def __init__(self, cache: Cache, kind: str, inputs: str, shape: object) -> None:
        self.cache = cache
        self.kind = kind
        self.inputs = inputs
        self.shape = shape

    def key(self, source: SourceFile) -> str:
        return digest(self.kind, self.inputs, source.path, source.text_digest())

    def get(self, source: SourceFile) -> Any:
        """What was read from this text, or None."""
        return stored_reading(self.cache, self.key(source), self.shape)

    def put(self, source: SourceFile, reading: object) -> None:
        store_reading(self.cache, self.key(source), reading)


def stored_reading(cache: Cache, key: str, shape: object) -> Any:
    """The reading stored under `key`, or None (also for one pickled by another layout of
    these classes, or not of the shape `shape`: it is read again)."""
    stored = cache.get_part(key)
    return loads(stored, shape) if stored is not None else None


def store_reading(cache: Cache, key: str, reading: object) -> None:
    cache.put_part(key, pickle.dumps(reading, pickle.HIGHEST_PROTOCOL))
