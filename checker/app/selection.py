"""Which profile scans which file when the configuration names none (`profile = "auto"`).

A file inside a package folder a profile claims (its `PACKAGES`: a folder of that name holding
`__init__.py`, as vLLM's source tree and its releases have `vllm/`) is that profile's; every
other file is SGLang's, the default profile, whose tree states its own `ForwardMode`. A scan of
a tree holding both runs each profile on its own files and puts the results together. `--profile` or `[tool.idxcheck] profile` picks one profile
for every file; so do a `domain` or `widths`, which are written in one profile's symbols
(SGLang's, unless a profile is named)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult, Stats
from idxcheck.profiles.schema import Profile, load_profile, package_profiles

AUTO = "auto"
DEFAULT_PROFILE = "sglang"


@functools.cache
def _package_profiles() -> dict[str, str]:
    """Package folder name -> the profile of the files under it (the profiles' `PACKAGES`)."""
    return package_profiles()


T = TypeVar("T")


def profile_of_file(path: str, cache: dict[str, str] | None = None) -> str:
    """The profile of the file at `path`: that of the nearest enclosing package folder the
    table names, else the default. `cache`: folder -> profile, by the folders as given as
    well as absolute, so that the files of one folder cost one `abspath` (a walk of thousands
    of files: bench/RESULTS.md, "Verdict keys kept on the nodes")."""
    given = os.path.dirname(path)
    if cache is not None and given in cache:
        return cache[given]
    folder = os.path.dirname(os.path.abspath(path))
    seen: list[str] = [given]
    found = DEFAULT_PROFILE
    while True:
        if cache is not None and folder in cache:
            found = cache[folder]
            break
        seen.append(folder)
        name = os.path.basename(folder)
        packages = _package_profiles()
        if name in packages and os.path.isfile(os.path.join(folder, "__init__.py")):
            found = packages[name]
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    if cache is not None:
        for folder in seen:
            cache[folder] = found
    return found


def profile_of_path(path: str) -> str:
    """The profile of a path given to a scan: a folder's own name counts, so that scanning a
    `vllm` package folder itself is vLLM's."""
    target = Path(path)
    if target.is_dir():
        return profile_of_file(str(target / "__init__.py"))
    return profile_of_file(path)


def by_profile(items: Sequence[T], path_of: Callable[[T], str]) -> dict[str, list[T]]:
    """`items` grouped by the profile of each one's path, in the order of first appearance."""
    cache: dict[str, str] = {}
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(profile_of_file(path_of(item), cache), []).append(item)
    return groups


def merge_results(results: Sequence[ScanResult]) -> ScanResult:
    """The results of one scan's profiles, each on its own files, as one result."""
    if len(results) == 1:
        return results[0]
    stats = Stats(
        **{
            name: sum(getattr(r.stats, name) for r in results)
            for name in (
                "files",
                "parsed",
                "sites",
                "obligations",
                "proved",
                "refuted",
                "unknown",
                "unsupported",
                "unreachable",
            )
        },
        seconds=round(sum(r.stats.seconds for r in results), 3),
    )
    modes = tuple(dict.fromkeys(m for r in results for m in r.mode_order))
    return replace(
        results[0],
        findings=sorted(
            (f for r in results for f in r.findings),
            key=lambda f: (f.span.path, f.span.line, f.span.column, f.code, f.mode),
        ),
        notes=sorted(
            (n for r in results for n in r.notes),
            key=lambda n: (n.span.path, n.span.line, n.span.column, n.code, n.mode),
        ),
        outcomes=sorted(
            (n for r in results for n in r.outcomes),
            key=lambda n: (n.span.path, n.span.line, n.span.column, n.code, n.mode, n.verdict),
        ),
        errors=sorted((e for r in results for e in r.errors), key=lambda e: (e.path, e.message)),
        stats=stats,
        mode_model_source="; ".join(r.mode_model_source for r in results if r.mode_model_source),
        mode_order=modes,
    )


def profile_for(config: Config, name: str | None = None) -> Profile:
    """The profile a scan with `config` uses (`name`, where the configuration leaves it to
    the files; else the default), with the configuration's domain and widths."""
    chosen = config.profile if config.profile != AUTO else (name or DEFAULT_PROFILE)
    return load_profile(chosen, {"domain": list(config.domain), "widths": dict(config.widths)})
