"""The warm path by code: a scan whose changed files differ from the last stored scan's only
in their comments takes that scan's outcome.

The stamps' warm path (`incremental.stamps`) answers a scan in which no file changed. A
pre-commit run after an edit of a comment, or a checkout that rewrote files with the same
contents, changes stamps but not what the scan decides: each file's analysis reads its code
without comments (`SourceFile.code_digest`), and what a file gives the tree's keys beside its
code is its `keys.file_contribution`. So beside each outcome the stamps store, a listing is
kept of every file walked: its stamp, whether the prefilter read it as Python or rejected it,
and for a file read as Python its code digest and its contribution. A later scan of the same
paths and settings, whose every changed file is read as it was with the same code digest and
contribution (or rejected again), has the stored outcome, but for the suppression comments and
the texts of the changed files, which the caller reads again (`app.scanning`).

Anything else is a miss, and the scan goes the usual way: a file added, removed or now
unreadable, a walk or read error, more than MAX_CHANGED changed files, a file the prefilter now
takes otherwise, a changed code digest or contribution."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from idxcheck.facts.constraints import read_registry
from idxcheck.incremental import stamps
from idxcheck.incremental.cache import read_blob, tool_versions, write_blob
from idxcheck.incremental.keys import file_contribution
from idxcheck.incremental.stored import loads
from idxcheck.model.config import Config
from idxcheck.model.findings import FileError
from idxcheck.model.outcome import Scanned
from idxcheck.model.stable import digest
from idxcheck.profiles.schema import Profile
from idxcheck.source.discover import Candidate
from idxcheck.source.files import SourceFile
from idxcheck.source.prefilter import Prefilter
from idxcheck.source.tree import LoadedTree, load_file

# Past this many changed files the usual scan, which reads them with its cached readings, is
# as quick: the answer here reads and strips each of them.
MAX_CHANGED = 32

READ = "read"  # read as Python
REJECTED = "rejected"


@dataclass(frozen=True)
class Listed:
    """One walked file as the stored scan found it: its stamp, how the prefilter took it
    (READ or REJECTED) and, for a file read as Python, its code digest and its
    contribution to the tree's keys."""

    stamp: tuple[int, int, int, int]
    kind: str
    code: str = ""


@dataclass(frozen=True)
class Listing:
    """The files of a stored scan, by displayed path, with the key of its outcome among the
    stamps' (`stamps.load`), the profile it ran with and the backends the tree registered."""

    outcome_key: str
    profile: str
    registry: tuple[str, ...]
    files: dict[str, Listed]


@dataclass(frozen=True)
class Read:
    """What `unchanged` read of the changed files, for the scan that goes on where it answers
    nothing: the profile it read them with, that profile's prefilter, and each file read as
    Python by its displayed path, with the stamp it was read at (rejected files are read
    again). A file read here is read as the scan reads it (`load_file`, its digest kept) and
    holds the readings its contribution made: the scan takes it instead of reading it again."""

    profile: str
    prefilter: Prefilter
    files: dict[str, tuple[tuple[int, int, int, int], SourceFile]]


@dataclass(frozen=True)
class Unchanged:
    """A scan answered here: the stored outcome, and the changed files read again (their
    suppression comments and texts are the caller's to refresh)."""

    outcome: Scanned
    changed: tuple[Candidate, ...]
    read: LoadedTree
    listing: Listing


def listing_key(
    candidates: Sequence[Candidate], errors: Sequence[FileError], config: Config
) -> str:
    """The listing's key: the walk's files (by name, not stamp) and errors, the settings and
    the versions."""
    parts = ["by-code", tool_versions(stamps.solver_stamp()), config.key_settings()]
    parts.extend(f"{e.path}\0{e.message}" for e in errors)
    parts.extend(f"{c.display}\0{c.path}" for c in candidates)
    return digest(*parts)


def _code(source_code: str, contribution: str) -> str:
    return digest(source_code, contribution)


def store(
    config: Config,
    key: str,
    outcome_key: str,
    profile: Profile,
    tree: LoadedTree,
    candidates: Sequence[Candidate],
    before: Listing | None = None,
) -> None:
    """Keep the listing of a scan whose outcome the stamps stored under `outcome_key`. A scan
    with a walk or read error lists nothing: such a file is not compared here.

    `before`, the listing stored under `key` by an earlier scan (`load_listing`), lends its
    entry to each file read as Python then and now whose stamp has not changed, where the
    scan ran with the same profile and the tree registers the same backends: a listing is
    stored only where every stamp was settled, so the file has the text it had, and its code
    and contribution are what that scan found. Stripping the comments of every read file for
    its code digest is most of a pre-commit run's storing otherwise (bench/RESULTS.md, "The
    listing by code after an edit")."""
    assert config.cache_dir is not None
    if tree.errors:
        return
    names = set(read_registry(tree.files, profile))
    registry = tuple(sorted(names))
    kept = (
        before.files
        if before is not None and before.profile == profile.name and before.registry == registry
        else {}
    )
    sources = {s.path: s for s in tree.files}
    files: dict[str, Listed] = {}
    for c in candidates:
        source = sources.get(c.display)
        if source is None:
            files[c.display] = Listed(c.stamp, REJECTED)
            continue
        listed = kept.get(c.display)
        if listed is not None and listed.stamp == c.stamp and listed.kind == READ:
            files[c.display] = listed
        else:
            code = _code(source.code_digest(), file_contribution(source, profile, names))
            files[c.display] = Listed(c.stamp, READ, code)
    _write(config, key, Listing(outcome_key, profile.name, registry, files))


def load_listing(config: Config, key: str) -> Listing | None:
    """The listing stored under `key` (`listing_key`), if any."""
    assert config.cache_dir is not None
    stored = read_blob(config.cache_dir, key)
    return loads(stored, Listing) if stored is not None else None


def unchanged(
    config: Config,
    listing: Listing | None,
    candidates: Sequence[Candidate],
    profile_named: Callable[[str], Profile],
) -> tuple[Unchanged | None, Read | None]:
    """The stored outcome of the last scan `listing` lists (`load_listing`), where every file
    whose stamp changed since is read the same way and has the same code and contribution;
    else None. `profile_named` loads the profile the listed scan ran with (the key's files
    decide it). Beside it, what was read of the changed files (`Read`), where any was."""
    assert config.cache_dir is not None
    if listing is None:
        return None, None
    changed: list[Candidate] = []
    for c in candidates:
        listed = listing.files.get(c.display)
        if listed is None:
            return None, None
        if listed.stamp != c.stamp:
            changed.append(c)
            if len(changed) > MAX_CHANGED:
                return None, None
    profile = profile_named(listing.profile)
    prefilter = Prefilter(profile)
    read = LoadedTree()
    found = Read(profile.name, prefilter, {})
    names = set(listing.registry)
    for c in changed:
        before = listing.files[c.display]
        count = len(read.files)
        # `known` given (empty): the digest of the bytes is kept, as the scan's reading does.
        load_file(c, read, prefilter, {}, config.max_file_bytes)
        if read.errors:
            return None, found
        if len(read.files) > count:
            source = read.files[-1]
            found.files[c.display] = (c.stamp, source)
            code = _code(source.code_digest(), file_contribution(source, profile, names))
            if before.kind != READ or before.code != code:
                return None, found
        elif before.kind == READ:
            return None, found  # rejected now: the tree's keys lose it
        # A rejected file may gain or lose the marker: its comments are read again.
    outcome = stamps.load(config, listing.outcome_key)
    if outcome is None:
        return None, found
    return Unchanged(outcome, tuple(changed), read, listing), None


def store_again(config: Config, key: str, found: Unchanged, outcome_key: str) -> None:
    """Keep the listing of a scan answered here, whose outcome the stamps stored again under
    `outcome_key`: the files as listed, with the stamps they have now."""
    assert config.cache_dir is not None
    files = dict(found.listing.files)
    for c in found.changed:
        files[c.display] = replace(files[c.display], stamp=c.stamp)
    _write(config, key, replace(found.listing, outcome_key=outcome_key, files=files))


def _write(config: Config, key: str, listing: Listing) -> None:
    assert config.cache_dir is not None
    write_blob(config.cache_dir, key, pickle.dumps(listing, protocol=pickle.HIGHEST_PROTOCOL))
