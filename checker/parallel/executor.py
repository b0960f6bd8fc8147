"""The pipeline's `Executor` (`idxcheck.check.pipeline`): the worker pool and background reads of
`idxcheck.parallel.workers`, with the scan's `--jobs`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from idxcheck.check.part import FilePart, TreeFacts
from idxcheck.check.ports import Store
from idxcheck.incremental.cache import Cache
from idxcheck.incremental.store import DiskStore
from idxcheck.model.progress import Progress
from idxcheck.parallel import workers
from idxcheck.source.files import SourceFile

T = TypeVar("T")


class WorkerExecutor:
    def __init__(self, jobs: int, progress: Progress | None = None) -> None:
        self.jobs = jobs
        self.progress = progress  # told of the analysis as each file and obligation is done

    def analyse(
        self,
        sources: Sequence[SourceFile],
        facts: TreeFacts,
        store: Store | None,
        loaded: Sequence[SourceFile],
    ) -> list[FilePart]:
        return workers.analyse_parts(sources, facts, _cache(store), loaded, self.progress)

    def in_background(self, compute: Callable[[], T], store: Store | None) -> Callable[[], T]:
        return workers.in_background(compute, self.jobs, _cache(store))


def _cache(store: Store | None) -> Cache | None:
    if store is None:
        return None
    assert isinstance(store, DiskStore), "the workers keep their parts in the disk cache"
    return store.cache
