"""A scan before the reporting policy: discovery with the configuration file's rooted excludes,
the warm path's stamps, the reading of the tree (half of a large one in the background), the
pipeline, and the suppression comments of the files walked."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from idxcheck import memo
from idxcheck.incremental import stamps
from idxcheck.model.comments import FileComments
from idxcheck.model.config import MAX_FILE_BYTES, Config
from idxcheck.model.findings import FileError, ScanResult
from idxcheck.model.outcome import Scanned
from idxcheck.model.progress import Event, Progress, Step, emit
from idxcheck.parallel import early
from idxcheck.source.discover import Candidate, DiscoveryError, discover
from idxcheck.source.pathmatch import path_matches, relative_posix

if TYPE_CHECKING:
    from idxcheck.incremental import by_code
    from idxcheck.incremental.located import Located
    from idxcheck.profiles.schema import Profile
    from idxcheck.source.files import SourceFile
    from idxcheck.source.prefilter import Prefilter
    from idxcheck.source.tree import LoadedTree

# The engine, the rules and the profile (libcst, the interpreter) are imported by the functions
# that use them: a warm scan answered by `stamps` never loads them.

# Told of the scan's steps as it advances, from the thread that called `scan`: a plain
# `progress(done, total)` or an `EventSink` (`model.progress`).
__all__ = ["Progress", "discover_files", "read_file_comments", "scanned"]


def discover_files(
    paths: Sequence[str],
    config: Config,
    listed: list[tuple[str, tuple[int, int, int, int]]] | None = None,
) -> tuple[list[Candidate], list[FileError]]:
    """The files a scan reads: the CLI's excludes (as typed) and the configuration file's
    (anchored at its folder) both apply. `listed`: see `discover`."""
    files: list[Candidate] = []
    errors: list[FileError] = []
    for item in discover(
        paths, config.exclude, config.shown_as, config.follow_links, config.link_roots, listed
    ):
        if isinstance(item, DiscoveryError):
            errors.append(FileError(item.path, item.message))
            continue
        if config.rooted_exclude:
            rel = relative_posix(item.display, config.root)
            if any(path_matches(rel, pattern) for pattern in config.rooted_exclude):
                continue
        files.append(item)
    return files, errors


def scanned(
    paths: Sequence[str], config: Config | None = None, progress: Progress | None = None
) -> Scanned:
    """The scan of `paths` before the reporting policy: from the warm path's stamps when no
    file changed, else read and analysed."""
    try:
        return _scanned(paths, config, progress)
    finally:
        early.discard()  # the entry's helper, where this scan did not take it


def _scanned(paths: Sequence[str], config: Config | None, progress: Progress | None) -> Scanned:
    config = config or Config()
    started = time.perf_counter()
    if config.cache_dir is not None:
        config = _usable_cache(config)
    # A helper reads again by their names the files it analyses: not those of a scan that
    # reads them elsewhere (`Config.shown_as`).
    helped = config.cache_dir is not None and config.jobs != 1 and config.shown_as is None
    if helped and config.focus is not None:
        # A pre-commit run: the helper (`workers.analysis_helper`) is the one the entry forked
        # (`parallel.early`), else forked now, before the walk, for the time it needs to load
        # libcst and parse the focused files' classes ahead.
        from idxcheck.parallel.workers import analysis_helper

        with analysis_helper(True, config.focus, config.cache_dir, early.take):
            found = _scan(paths, config, progress, helped)
    else:
        found = _scan(paths, config, progress, helped)
    seconds = round(time.perf_counter() - started, 3)
    result = replace(found.result, stats=replace(found.result.stats, seconds=seconds))
    return replace(found, result=result)


def _usable_cache(config: Config) -> Config:
    """`config`, without its cache where the cache's folder cannot be made (a file in its
    place, a read-only file system): the scan is only slower, and says so."""
    from idxcheck.incremental import cache

    cache.start_run()
    assert config.cache_dir is not None
    problem = cache.unusable(config.cache_dir)
    if problem is None:
        return config
    cache.warn(f"cannot use the cache in {config.cache_dir}: {problem}; scanning without it")
    return replace(config, cache_dir=None)


def _scan(paths: Sequence[str], config: Config, progress: Progress | None, helped: bool) -> Scanned:
    # Stamps are judged against the time the files were looked at, not the end of the scan: a
    # file written just before a long scan is no more settled when the scan ends.
    started = time.time()
    listed: list[tuple[str, tuple[int, int, int, int]]] | None = [] if memo.armed() else None
    candidates, errors = discover_files(paths, config, listed)
    if listed is not None:
        memo.note_walk([*listed, *((c.path, c.stamp) for c in candidates)])
    stamp_key = listing_key = None
    listing: by_code.Listing | None = None
    read: by_code.Read | None = None
    if config.cache_dir is not None:
        stamp_key = stamps.stamp_key(candidates, errors, config)
        stored = stamps.load(config, stamp_key)
        if stored is not None:
            return stored  # no file changed: answered before there is anything to show
        from idxcheck.incremental import by_code

        listing_key = by_code.listing_key(candidates, errors, config)
        listing = by_code.load_listing(config, listing_key)
        same, read = by_code.unchanged(config, listing, candidates, partial(_profile_named, config))
        if same is not None:  # only comments changed: answered without the pipeline
            found = _comments_read_again(same, config)
            if stamps.settled(candidates, started):
                stamps.store(config, stamp_key, found)
                by_code.store_again(config, listing_key, same, stamp_key)
            return found
    from idxcheck.parallel.workers import analysis_helper

    keep_listing: Callable[[Profile, LoadedTree], None] | None = None
    if listing_key is not None and stamp_key is not None and stamps.settled(candidates, started):
        # Written while the files are analysed (`_read_and_scan_one`): the listing names the
        # outcome by its key, and a listing whose outcome was not stored is a miss.
        keep_listing = partial(
            by_code.store, config, listing_key, stamp_key, candidates=candidates, before=listing
        )
    # Forked now where it is not yet (a scan of the whole tree with the cache, after the
    # stamps showed a change), it loads libcst while this process reads the tree.
    with analysis_helper(helped, (), config.cache_dir, early.take):
        result, tree, _ = _read_and_scan(candidates, errors, config, progress, read, keep_listing)
    # Every candidate's bytes were read once, by `load_file`: the files that can hold a
    # suppression comment are the parsed ones and those it noted as marked.
    texts, unmarked = _texts(tree)
    files = [c.display for c in candidates]
    comments = read_file_comments(result, config, files, texts, complete=True, unmarked=unmarked)
    reported = _reported(result, comments)
    found = Scanned(
        result, comments, tuple(files), {p: t for p, t in texts.items() if p in reported}
    )
    if stamp_key is not None and stamps.settled(candidates, started):
        stamps.store(config, stamp_key, found)
    return found


def _profile_named(config: Config, name: str) -> Profile:
    from idxcheck.app.selection import profile_for

    return profile_for(replace(config, profile=name))


def _comments_read_again(same: by_code.Unchanged, config: Config) -> Scanned:
    """The stored outcome of a scan whose changed files kept their code: their suppression
    comments read again, and their texts taken where a finding or a suppression is reported
    in them (as `_scan` keeps texts)."""
    outcome = same.outcome
    changed = {c.display for c in same.changed}
    texts, unmarked = _texts(same.read)
    fresh = read_file_comments(
        outcome.result,
        config,
        [c.display for c in same.changed],
        texts,
        complete=True,
        unmarked=unmarked,
    )
    by_path = {c.path: c for c in outcome.comments if c.path not in changed}
    by_path.update((c.path, c) for c in fresh)
    comments = tuple(by_path[path] for path in outcome.files if path in by_path)
    reported = _reported(outcome.result, comments)
    kept = {p: t for p, t in outcome.texts.items() if p not in changed and p in reported}
    kept.update((p, t) for p, t in texts.items() if p in reported)
    return Scanned(outcome.result, comments, outcome.files, kept)


def _texts(tree: LoadedTree) -> tuple[dict[str, str], frozenset[str]]:
    """The texts of the files read (as Python, or rejected but holding the suppression
    marker), and those of them known to hold no marker."""
    texts = {**tree.marked, **{source.path: source.text for source in tree.files}}
    return texts, frozenset(s.path for s in tree.files if s.holds_marker is False)


def _reported(result: ScanResult, comments: Sequence[FileComments]) -> set[str]:
    """The files a finding or a suppression may be reported in: their analysed text is kept,
    since code frames quote it, not the file as it is by the time the report is written."""
    return {f.span.path for f in result.findings} | {c.path for c in comments if c.suppressions}


def _read_and_scan(
    candidates: Sequence[Candidate],
    errors: Sequence[FileError],
    config: Config,
    progress: Progress | None,
    read: by_code.Read | None = None,
    keep_listing: Callable[[Profile, LoadedTree], None] | None = None,
) -> tuple[ScanResult, LoadedTree, Profile | None]:
    """The files that pass the prefilter read, and the tree scanned: each file with its own
    profile where the configuration names none (`app.selection`); with the profile where
    there is one (None where the files are of several). `read`: the changed files read
    already (`by_code.unchanged`), taken where they were read with the same profile.
    `keep_listing`: stores the listing by code of a scan with one profile (`by_code.store`)."""
    from idxcheck.app.selection import AUTO, DEFAULT_PROFILE, by_profile, merge_results
    from idxcheck.source.tree import LoadedTree

    if config.profile != AUTO:
        return _read_and_scan_one(candidates, errors, config, progress, read, keep_listing)
    groups = by_profile(candidates, lambda c: c.path) or {DEFAULT_PROFILE: []}
    if len(groups) == 1:
        name = next(iter(groups))
        return _read_and_scan_one(
            candidates, errors, replace(config, profile=name), progress, read, keep_listing
        )
    results: list[ScanResult] = []
    merged = LoadedTree()
    for index, (name, group) in enumerate(groups.items()):
        result, tree, _ = _read_and_scan_one(
            group,
            errors if index == 0 else (),
            replace(config, profile=name),
            progress if len(groups) == 1 else None,
            read,
        )
        results.append(result)
        merged.files.extend(tree.files)
        merged.marked.update(tree.marked)
        merged.errors.extend(tree.errors)
        merged.walked += tree.walked
    return merge_results(results), merged, None


def _read_and_scan_one(
    candidates: Sequence[Candidate],
    errors: Sequence[FileError],
    config: Config,
    progress: Progress | None,
    read: by_code.Read | None = None,
    keep_listing: Callable[[Profile, LoadedTree], None] | None = None,
) -> tuple[ScanResult, LoadedTree, Profile]:
    """The files that pass the prefilter read, and the tree scanned with one profile (which
    is returned with them); `read` and `keep_listing` as for `_read_and_scan`."""
    from idxcheck.app.run import run_tree
    from idxcheck.app.selection import profile_for
    from idxcheck.incremental.located import load_located, store_located
    from idxcheck.source.prefilter import Prefilter
    from idxcheck.source.tree import LoadedTree, load_file

    profile = profile_for(config)
    tree = LoadedTree(errors=list(errors))
    # Load file by file (the reading and prefilter of `source.tree.load_tree`), each counted.
    total = len(candidates)
    if read is not None and read.profile != profile.name:
        read = None
    prefilter = read.prefilter if read is not None else Prefilter(profile)
    taken = read.files if read is not None else {}
    rejected = stamps.load_rejected(config) if config.cache_dir is not None else {}
    reading_started = time.time()
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
    read_later = (
        _read_elsewhere(later, prefilter, config.jobs, known, config.max_file_bytes)
        if later
        else None
    )
    emit(progress, Event(Step.READING, tree.walked, total))
    for candidate in to_read:
        ahead = taken.get(candidate.display)
        if ahead is not None and ahead[0] == candidate.stamp:
            tree.walked += 1
            tree.files.append(ahead[1])
            tree.hits.add(ahead[1], prefilter)
        else:
            load_file(candidate, tree, prefilter, known, config.max_file_bytes)
        emit(progress, Event(Step.READING, tree.walked, total))
    if read_later is not None:
        files, later_errors, marked, walked = read_later()
        for source in files:
            tree.files.append(source)
            tree.hits.add(source, prefilter)
        tree.errors.extend(later_errors)
        tree.marked.update(marked)
        tree.walked += walked
    emit(progress, Event(Step.READING, total, total))
    if config.cache_dir is None:
        return run_tree(tree, config, profile, progress=progress), tree, profile
    from idxcheck.parallel.workers import meanwhile

    # Written once the tree facts have made their readings of the files, while the helper
    # analyses (else after the analysis).
    later_writes = [
        lambda: _remember_rejected(read_paths, tree, config, rejected, reading_started),
        lambda: store_located(config, tree.files, known or {}),
    ]
    if keep_listing is not None:
        later_writes.append(partial(keep_listing, profile, tree))
    with meanwhile(*later_writes):
        return run_tree(tree, config, profile, progress=progress), tree, profile


# From this many files to read (a first scan of a large tree, a scan without the cache), the
# later half is read by another process; for fewer, the process's start costs more than the
# half it reads (bench/RESULTS.md, "What each change did").
BACKGROUND_READ_FILES = 1_000


def _read_elsewhere(
    candidates: Sequence[Candidate],
    prefilter: Prefilter,
    jobs: int,
    known: Mapping[str, Located] | None = None,
    max_bytes: int = MAX_FILE_BYTES,
) -> Callable[[], tuple[list[SourceFile], list[FileError], dict[str, str], int]]:
    """`load_file` of each candidate, perhaps in another process (`workers.in_background`):
    the files read, the errors, the marked files' texts and the count walked."""
    from idxcheck.parallel.workers import in_background
    from idxcheck.source.tree import LoadedTree, load_file

    def read() -> tuple[list[SourceFile], list[FileError], dict[str, str], int]:
        part = LoadedTree()
        for candidate in candidates:
            load_file(candidate, part, prefilter, known, max_bytes)
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
    now: float,
) -> None:
    """Remember the files the prefilter rejected, by stamp, from the files this scan read
    (with their absolute paths): a file it did not read was remembered with its stamp. `now`:
    when the reading began, which the stamps must be older than."""
    kept = {source.path for source in tree.files} | set(tree.marked)
    kept |= {error.path for error in tree.errors}
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


def read_file_comments(
    result: ScanResult,
    config: Config,
    files: Sequence[str],
    texts: dict[str, str] | None = None,
    complete: bool = False,
    unmarked: frozenset[str] = frozenset(),
) -> tuple[FileComments, ...]:
    """The suppression comments of the walked files, where the policy may need them: some
    finding to suppress, or a meta rule on to report bare and unused comments.

    `texts`: file contents already in memory (the engine's candidates); other files are read
    only when they contain the suppression marker, unless `complete` says that `texts` holds
    every file that does. `unmarked`: files of `texts` known to hold no marker (their
    comments are not searched)."""
    from idxcheck.rules.catalog import known_codes
    from idxcheck.rules.meta import BARE_SUPPRESSION, UNUSED_SUPPRESSION
    from idxcheck.source.comments import read_comments

    enabled = frozenset(code for code in known_codes() if config.rule_enabled(code))
    comments: list[FileComments] = []
    if BARE_SUPPRESSION.code in enabled or UNUSED_SUPPRESSION.code in enabled or result.findings:
        for path in files:
            text = (texts or {}).get(path)
            if text is None and not complete:
                text = _read_if_marked(path, config.max_file_bytes)
            if path in unmarked:
                comments.append(FileComments(path, ()))
            elif text is not None:
                comments.append(read_comments(path, text))
    return tuple(comments)


def _read_if_marked(path: str, max_bytes: int) -> str | None:
    from idxcheck.source.comments import MARKER

    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError:
        return None  # the engine already reported it
    if len(data) > max_bytes:
        return None  # too large: an error the engine reported
    if MARKER.encode() not in data.lower():
        return None
    from idxcheck.source.files import readable_text

    return readable_text(data)
