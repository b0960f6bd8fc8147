"""The engine's result for paths or an in-memory text, without the reporting policy."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from idxcheck.app.selection import AUTO, DEFAULT_PROFILE, by_profile, merge_results, profile_for
from idxcheck.check.pipeline import scan_tree
from idxcheck.incremental.store import DiskStore
from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult
from idxcheck.model.progress import Progress
from idxcheck.parallel.executor import WorkerExecutor
from idxcheck.profiles.schema import Profile
from idxcheck.rules import REGISTRY, Rule
from idxcheck.source.discover import DiscoveryError, discover
from idxcheck.source.files import SourceFile
from idxcheck.source.prefilter import Prefilter
from idxcheck.source.tree import LoadedTree, load_tree


def run_tree(
    tree: LoadedTree,
    config: Config,
    profile: Profile,
    rules: tuple[type[Rule], ...] = REGISTRY,
    progress: Progress | None = None,
) -> ScanResult:
    """The pipeline on a loaded tree, handed the store of `config.cache_dir` (if any) and the
    worker pool of `config.jobs`; `progress` is told of the steps (`model.progress`)."""
    store = DiskStore.for_config(config)
    executor = WorkerExecutor(config.jobs, progress)
    return scan_tree(tree, config, profile, store, executor, rules, progress)


def scan(
    paths: Sequence[str],
    config: Config | None = None,
    profile: Profile | None = None,
    rules: tuple[type[Rule], ...] = REGISTRY,
) -> ScanResult:
    """The engine's result for `paths`; `profile` and `rules` default to the configuration's
    profile and the registry (a test may hand its own)."""
    config = config or Config()
    started = time.perf_counter()
    if profile is None and config.profile == AUTO:
        # Each file with the profile of the package it is in (`app.selection`).
        found = list(
            discover(paths, config.exclude, config.shown_as, config.follow_links, config.link_roots)
        )
        groups = {
            name: [item.path for item in items]
            for name, items in by_profile(
                [c for c in found if not isinstance(c, DiscoveryError)], lambda c: c.path
            ).items()
        }
        # Paths that could not be walked are reported by the first group's walk.
        unwalked = [item.path for item in found if isinstance(item, DiscoveryError)]
        if unwalked:
            first = next(iter(groups), DEFAULT_PROFILE)
            groups[first] = [*groups.get(first, []), *unwalked]
        results = []
        for name, group in (groups or {DEFAULT_PROFILE: []}).items():
            # The workers load the profile the configuration names.
            named = replace(config, profile=name)
            chosen = profile_for(named)
            results.append(run_tree(load_tree(group, named, chosen), named, chosen, rules))
        result = merge_results(results)
        seconds = round(time.perf_counter() - started, 3)
        return replace(result, stats=replace(result.stats, seconds=seconds))
    profile = profile or profile_for(config)
    tree = load_tree(paths, config, profile)
    result = run_tree(tree, config, profile, rules)
    seconds = round(time.perf_counter() - started, 3)
    return replace(result, stats=replace(result.stats, seconds=seconds))


def scan_source(text: str, path: str = "<string>", config: Config | None = None) -> ScanResult:
    """Scan one in-memory file (tests, VALID/INVALID cases)."""
    config = config or Config()
    profile = profile_for(config)
    tree = LoadedTree(walked=1)
    source = SourceFile(path, text)
    lines = Prefilter(profile).hit_lines(text)
    if lines:
        tree.files.append(source)
        tree.hits[path] = lines
    return run_tree(tree, config, profile)
