"""What the pipeline is handed instead of calling it: where results are stored between scans
(`Store`, implemented by `idxcheck.incremental.store`); how work is run is `Executor` of
`idxcheck.check.pipeline`, implemented by `idxcheck.parallel.executor`. The analysis imports
neither implementation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from idxcheck.facts.kernels import Launcher
from idxcheck.facts.ports import FileMemo
from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult
from idxcheck.profiles.schema import Profile
from idxcheck.source.tree import LoadedTree


class VerdictStore(Protocol):
    """Solver verdicts by the digest of their question."""

    def verdict_key(self, *parts: str) -> str: ...

    def get_verdict(self, key: str) -> dict[str, Any] | None: ...

    def put_verdict(self, key: str, value: dict[str, Any]) -> None: ...


class Store(VerdictStore, Protocol):
    """Everything a scan keeps from one run to the next, with the keys it is kept under."""

    def tree_key(self, tree: LoadedTree, config: Config, profile: Profile) -> str:
        """What a whole scan's result depends on."""
        ...

    def tree_keys(self, tree: LoadedTree, config: Config, profile: Profile) -> tuple[str, str]:
        """What the tree facts depend on, and what every reading of a file depends on besides
        the file (`idxcheck.incremental.keys.tree_keys`)."""
        ...

    def context_key(self, inputs: str, facts_value: str, launchers: Mapping[str, Launcher]) -> str:
        """What every file's analysis depends on beyond the file and the classes it looks up."""
        ...

    def result(self, key: str) -> ScanResult | None: ...

    def put_result(self, key: str, result: ScanResult) -> None: ...

    def value(self, key: str, shape: object) -> Any:
        """A value stored whole (the tree facts) of the shape `shape` (a type hint), or None."""
        ...

    def put_value(self, key: str, value: object) -> None: ...

    def reading(self, key: str, shape: object) -> Any:
        """A reading stored with the file analyses (the mode model) of the shape `shape`, or
        None."""
        ...

    def put_reading(self, key: str, value: object) -> None: ...

    def readings(self, kind: str, inputs: str, shape: object) -> FileMemo:
        """One kind of per-file reading of the shape `shape`, under what every reading of the
        kind depends on."""
        ...

    def prune(self) -> None: ...

    def close(self) -> None:
        """Closed before work is forked; it reopens on next use."""
        ...
