"""The disk cache as the pipeline's `Store` (`idxcheck.check.ports`): each kind of value under
its key, kept in `Cache`'s tables."""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from idxcheck.facts.kernels import Launcher
from idxcheck.incremental import keys
from idxcheck.incremental.cache import Cache, solver_version
from idxcheck.incremental.readings import FileReadings, store_reading, stored_reading
from idxcheck.incremental.stored import loads
from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult
from idxcheck.profiles.schema import Profile
from idxcheck.source.tree import LoadedTree


class DiskStore:
    def __init__(self, cache: Cache) -> None:
        self.cache = cache

    @classmethod
    def for_config(cls, config: Config) -> DiskStore | None:
        """The store of `config.cache_dir`, or None when the scan keeps nothing."""
        if config.cache_dir is None:
            return None
        return cls(Cache(Path(config.cache_dir), solver_version()))

    def verdict_key(self, *parts: str) -> str:
        return self.cache.verdict_key(*parts)

    def get_verdict(self, key: str) -> dict[str, Any] | None:
        return self.cache.get_verdict(key)

    def put_verdict(self, key: str, value: dict[str, Any]) -> None:
        self.cache.put_verdict(key, value)

    def tree_key(self, tree: LoadedTree, config: Config, profile: Profile) -> str:
        return keys.tree_key(tree, config, profile, self.cache)

    def tree_keys(self, tree: LoadedTree, config: Config, profile: Profile) -> tuple[str, str]:
        return keys.tree_keys(tree, config, profile, self.cache)

    def context_key(self, inputs: str, facts_value: str, launchers: Mapping[str, Launcher]) -> str:
        return keys.context_key(inputs, facts_value, dict(launchers))

    def result(self, key: str) -> ScanResult | None:
        stored = self.cache.get_result(key)
        # None: written by another layout of these classes (or not by idxcheck): scan again.
        found: ScanResult | None = loads(stored, ScanResult) if stored is not None else None
        return found

    def put_result(self, key: str, result: ScanResult) -> None:
        # Pickled rather than plain data: it is several times faster to write and read back
        # (bench/RESULTS.md).
        self.cache.put_result(key, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))

    def value(self, key: str, shape: object) -> Any:
        stored = self.cache.get_blob(key)
        return loads(stored, shape) if stored is not None else None

    def put_value(self, key: str, value: object) -> None:
        self.cache.put_blob(key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def reading(self, key: str, shape: object) -> Any:
        return stored_reading(self.cache, key, shape)

    def put_reading(self, key: str, value: object) -> None:
        store_reading(self.cache, key, value)

    def readings(self, kind: str, inputs: str, shape: object) -> FileReadings:
        return FileReadings(self.cache, kind, inputs, shape)

    def prune(self) -> None:
        self.cache.prune()

    def close(self) -> None:
        self.cache.close()
