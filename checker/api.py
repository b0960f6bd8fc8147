"""The library API: what the CLI runs, usable from Python.

    from idxcheck.api import scan
    from idxcheck.config import Config

    outcome = scan(["python/sglang"], Config())
    for finding in outcome.result.findings: ...

`scan` wraps the engine (`idxcheck.engine`): discovery with the configuration file's rooted
excludes, a progress callback, then the reporting policy: `per-file-ignores` and suppression
comments (`idxcheck.suppressions`), whose bare and unused comments become findings of their own.
Baselines and `--diff-base` are in `idxcheck.baseline`."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from idxcheck import stamps
from idxcheck.config import Config
from idxcheck.discover import Candidate, DiscoveryError, discover
from idxcheck.findings import FileError, Finding, ScanResult
from idxcheck.pathmatch import path_matches, relative_posix

if TYPE_CHECKING:
    from idxcheck import suppressions
    from idxcheck.engine import LoadedTree, Prefilter
    from idxcheck.extract.source import SourceFile
    from idxcheck.located import Located

# The engine, the rules and the profile (libcst, the interpreter) are imported by the functions
# that use them: a warm scan answered by `stamps` never loads them.

# progress(done, total): called as the scan advances, from the thread that called `scan`.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Suppressed:
    finding: Finding
    comment: suppressions.Suppression


@dataclass(frozen=True)
class Scan:
    """A scan with the reporting policy applied.

    `result.findings` are the findings to report (suppression meta findings included);
    `suppressed` and `ignored` (by `per-file-ignores`) are what the policy took out."""

    result: ScanResult
    suppressed: tuple[Suppressed, ...]
    ignored: tuple[Finding, ...]
    files: tuple[str, ...]  # every file walked, as displayed


def discover_files(paths: Sequence[str], config: Config) -> tuple[list[Candidate], list[FileError]]:
    """The files a scan reads: the CLI's excludes (as typed) and the configuration file's
    (anchored at its folder) both apply."""
    files: list[Candidate] = []
    errors: list[FileError] = []
    for item in discover(paths, config.exclude, config.shown_as):
        if isinstance(item, DiscoveryError):
            errors.append(FileError(item.path, item.message))
            continue
        if config.rooted_exclude:
            rel = relative_posix(item.display, config.root)
            if any(path_matches(rel, pattern) for pattern in config.rooted_exclude):
                continue
        files.append(item)
    return files, errors


def scan(
    paths: Sequence[str], config: Config | None = None, progress: Progress | None = None
) -> Scan:
    config = config or Config()
    started = time.perf_counter()
    if config.cache_dir is not None:
        config = _usable_cache(config)
    # A helper reads again by their names the files it analyses: not those of a scan that
    # reads them elsewhere (`Config.shown_as`).
    helped = config.cache_dir is not None and config.jobs != 1 and config.shown_as is None
    if helped and config.focus is not None:
        # A pre-commit run: the helper (`workers.analysis_helper`) is forked before the walk,
        # for the time it needs to load libcst and parse the focused files' classes ahead.
        from idxcheck.workers import analysis_helper

        with analysis_helper(True, config.focus, config.cache_dir):
            return _scan(paths, config, progress, started, helped)
    return _scan(paths, config, progress, started, helped)


def _usable_cache(config: Config) -> Config:
    """`config`, without its cache where the cache's folder cannot be made (a file in its
    place, a read-only file system): the scan is only slower, and says so."""
    from idxcheck import cache

    cache.start_run()
    assert config.cache_dir is not None
    problem = cache.unusable(config.cache_dir)
    if problem is None:
        return config
    cache.warn(f"cannot use the cache in {config.cache_dir}: {problem}; scanning without it")
    return replace(config, cache_dir=None)


def _scan(
    paths: Sequence[str],
    config: Config,
    progress: Progress | None,
    started: float,
    helped: bool,
) -> Scan:
    candidates, errors = discover_files(paths, config)
    stamp_key = None
    if config.cache_dir is not None:
        stamp_key = stamps.stamp_key(candidates, errors, config)
        stored = stamps.load(config, stamp_key)
        if stored is not None:
            if progress is not None:
                progress(1, 1)
            stored.result.stats.seconds = round(time.perf_counter() - started, 3)
            return stored
    from idxcheck.workers import analysis_helper

    # Forked now where it is not yet (a scan of the whole tree with the cache, after the
    # stamps showed a change), it loads libcst while this process reads the tree.
    with analysis_helper(helped, (), config.cache_dir):
        result, tree = _read_and_scan(candidates, errors, config, progress)
    if progress is not None:
        progress(len(candidates) + 1, len(candidates) + 1)
    # Every candidate's bytes were read once, by `load_file`: the files that can hold a
    # suppression comment are the parsed ones and those it noted as marked.
    texts = {**tree.marked, **{source.path: source.text for source in tree.files}}
    unmarked = frozenset(s.path for s in tree.files if s.holds_marker is False)
    outcome = apply_policy(
        result, config, [c.display for c in candidates], texts, complete=True, unmarked=unmarked
    )
    if stamp_key is not None and stamps.settled(candidates, time.time()):
        stamps.store(config, stamp_key, outcome)
    outcome.result.stats.seconds = round(time.perf_counter() - started, 3)
    return outcome


def _read_and_scan(
    candidates: Sequence[Candidate],
    errors: Sequence[FileError],
    config: Config,
    progress: Progress | None,
) -> tuple[ScanResult, LoadedTree]:
    """The files that pass the prefilter read, and the tree scanned."""
    from idxcheck.engine import LoadedTree, Prefilter, load_file, scan_tree
    from idxcheck.located import load_located, store_located
    from idxcheck.profile import load_profile

    profile = load_profile(
        config.profile, {"domain": list(config.domain), "widths": dict(config.widths)}
    )
    tree = LoadedTree(errors=list(errors))
    # Load file by file (the reading and prefilter of `engine.load_tree`) and count the
    # analysis of the whole tree as the last step.
    total = len(candidates) + 1
    prefilter = Prefilter(profile)
    rejected = stamps.load_rejected(config) if config.cache_dir is not None else {}
    known = load_located(config) if config.cache_dir is not None else None
    absolute = _absolute_paths(candidates)
    # Files rejected before and unchanged since are not read again.
    read_paths = [
        (c, path)
        for c, path in zip(candidates, absolute, strict=True)
        if rejected.get(path) != c.stamp
    ]
    to_read = [c for c, _ in read_paths]
    tree.walked += len(candidates) - len(to_read)
    # The later half of a large tree is read in another process meanwhile.
    later: list[Candidate] = []
    if len(to_read) >= BACKGROUND_READ_FILES:
        to_read, later = to_read[: len(to_read) // 2], to_read[len(to_read) // 2 :]
    read_later = _read_elsewhere(later, prefilter, config.jobs, known) if later else None
    for candidate in to_read:
        load_file(candidate, tree, prefilter, known)
        if progress is not None:
            progress(tree.walked, total)
    if read_later is not None:
        files, later_errors, marked, walked = read_later()
        for source in files:
            tree.files.append(source)
            tree.hits.add(source, prefilter)
        tree.errors.extend(later_errors)
        tree.marked.update(marked)
        tree.walked += walked
    if progress is not None:
        progress(len(candidates), total)
    if config.cache_dir is None:
        return scan_tree(tree, config, profile), tree
    from idxcheck.workers import meanwhile

    # Written once the tree facts have made their readings of the files, while the helper
    # analyses (else after the analysis).
    with meanwhile(
        lambda: _remember_rejected(read_paths, tree, config, rejected),
        lambda: store_located(config, tree.files, known or {}),
    ):
        return scan_tree(tree, config, profile), tree


# From this many files to read (a first scan of a large tree, a scan without the cache), the
# later half is read by another process: on SGLang 0.5.23's 4,719 files the parent's reading
# took 0.70 s alone and 0.37 s with the fork and the pickling of the files that pass.
BACKGROUND_READ_FILES = 1_000


def _read_elsewhere(
    candidates: Sequence[Candidate],
    prefilter: Prefilter,
    jobs: int,
    known: Mapping[str, Located] | None = None,
) -> Callable[[], tuple[list[SourceFile], list[FileError], dict[str, str], int]]:
    """`load_file` of each candidate, perhaps in another process (`workers.in_background`):
    the files read, the errors, the marked files' texts and the count walked."""
    from idxcheck.engine import LoadedTree, load_file
    from idxcheck.workers import in_background

    def read() -> tuple[list[SourceFile], list[FileError], dict[str, str], int]:
        part = LoadedTree()
        for candidate in candidates:
            load_file(candidate, part, prefilter, known)
        return part.files, part.errors, part.marked, part.walked

    return in_background(read, jobs)


def _absolute_paths(candidates: Sequence[Candidate]) -> list[str]:
    """Each candidate's path from the root, the key of the rejected-files memory: its displayed
    path (normalised by the walk) joined to the working folder, without the `getcwd` and
    normalisation that `os.path.abspath` repeats for each of thousands of files."""
    cwd = os.getcwd()
    return [
        c.display if os.path.isabs(c.display) else os.path.join(cwd, c.display) for c in candidates
    ]


def _remember_rejected(
    read: Sequence[tuple[Candidate, str]],
    tree: LoadedTree,
    config: Config,
    before: dict[str, tuple[int, int, int, int]],
) -> None:
    """Remember the files the prefilter rejected, by stamp, from the files this scan read
    (with their absolute paths): a file it did not read was remembered with its stamp."""
    kept = {source.path for source in tree.files} | set(tree.marked)
    kept |= {error.path for error in tree.errors}
    now = time.time()
    remembered = dict(before)
    for c, path in read:
        if c.display not in kept and stamps.settled_one(c, now):
            remembered[path] = c.stamp
        else:
            remembered.pop(path, None)
    if len(remembered) > stamps.MAX_REJECTED:
        remembered = {p: s for p, s in remembered.items() if p not in before}
    if remembered != before:
        stamps.store_rejected(config, remembered)


def apply_policy(
    result: ScanResult,
    config: Config,
    files: Sequence[str],
    texts: dict[str, str] | None = None,
    complete: bool = False,
    unmarked: frozenset[str] = frozenset(),
) -> Scan:
    """Suppression comments, then `per-file-ignores`, on an engine result.

    `texts`: file contents already in memory (the engine's candidates); other files are read
    only when they contain the suppression marker, unless `complete` says that `texts` holds
    every file that does. `unmarked`: files of `texts` known to hold no marker (their
    comments are not searched)."""
    from idxcheck import suppressions
    from idxcheck.catalog import known_codes

    codes = known_codes()
    enabled = frozenset(code for code in codes if config.rule_enabled(code))
    comments = []
    if (
        suppressions.BARE_SUPPRESSION.code in enabled
        or suppressions.UNUSED_SUPPRESSION.code in enabled
        or result.findings
    ):
        for path in files:
            text = (texts or {}).get(path)
            if text is None and not complete:
                text = _read_if_marked(path)
            if path in unmarked:
                comments.append(suppressions.FileComments(path, ()))
            elif text is not None:
                comments.append(suppressions.read_comments(path, text))
    applied = suppressions.apply(result.findings, comments, enabled=enabled, known=codes)
    suppressed = [Suppressed(finding, comment) for finding, comment in applied.suppressed]
    kept: list[Finding] = []
    ignored: list[Finding] = []
    for finding in (*applied.kept, *applied.meta):
        (ignored if _ignored_for_file(finding, config) else kept).append(finding)
    kept.sort(key=lambda f: (f.span.path, f.span.line, f.span.column, f.code, f.mode))
    result.findings = kept
    return Scan(result, tuple(suppressed), tuple(ignored), tuple(files))


def _ignored_for_file(finding: Finding, config: Config) -> bool:
    if not config.per_file_ignores:
        return False
    rel = relative_posix(finding.span.path, config.root)
    return any(
        finding.code in codes and path_matches(rel, glob) for glob, codes in config.per_file_ignores
    )


def _read_if_marked(path: str) -> str | None:
    from idxcheck import suppressions

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None  # the engine already reported it
    if suppressions.MARKER.encode() not in data.lower():
        return None
    return data.decode("utf-8", errors="replace")
