"""The files of a scan that pass the prefilter, read once, with their hit lines."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from idxcheck.model.config import MAX_FILE_BYTES, Config
from idxcheck.model.findings import FileError
from idxcheck.profiles.schema import Profile
from idxcheck.source.discover import Candidate, DiscoveryError, discover
from idxcheck.source.files import (
    Block,
    SourceError,
    SourceFile,
    data_digest,
    decode_source,
    readable_text,
    too_large,
)
from idxcheck.source.prefilter import MARKER_BYTES, Prefilter, feeds_batch_modes, holds_marker


class KnownFile(Protocol):
    """What the last scan with the cache found in a file it read as Python
    (`idxcheck.incremental.located.Located`)."""

    @property
    def digest(self) -> str: ...

    def source(self, path: str, text: str, encoding: str) -> SourceFile: ...


class HitLines:
    """The line numbers of each read file's prefilter hits (path -> sorted numbers), found
    when first asked for: only the files whose classes are analysed need them."""

    def __init__(self) -> None:
        self._lines: dict[str, list[int]] = {}
        self._pending: dict[str, tuple[SourceFile, Prefilter]] = {}

    def add(self, source: SourceFile, prefilter: Prefilter) -> None:
        self._pending[source.path] = (source, prefilter)

    def __setitem__(self, path: str, lines: list[int]) -> None:
        self._lines[path] = lines

    def blocks_that_may_hit(self, source: SourceFile) -> list[Block]:
        """The blocks of `source` that hold hit lines where those are known, else those whose
        text holds a prefilter word, comments included (a superset): what an analysis of the
        file reads, told without finding its hit lines (finding them is costly for a whole
        tree in one process, and the workers share it when each finds its own: bench/RESULTS.md,
        "Measurements that stood in code comments")."""
        lines = self._lines.get(source.path)
        if lines is not None:
            return source.blocks_containing(lines)
        pending = self._pending.get(source.path)
        if pending is None:
            return []
        prefilter = pending[1]
        return [b for b in source.blocks if prefilter.matches_text(source.block_text(b))]

    def get(self, path: str, default: list[int]) -> list[int]:
        found = self._lines.get(path)
        if found is None:
            pending = self._pending.pop(path, None)
            if pending is None:
                return default
            source, prefilter = pending
            found = prefilter.code_hit_lines(source.code_text())
            self._lines[path] = found
        return found


@dataclass
class LoadedTree:
    files: list[SourceFile] = field(default_factory=list)
    hits: HitLines = field(default_factory=HitLines)
    # Files the prefilter rejected that hold a suppression marker (display path -> text): the
    # suppression pass needs their comments, and the bytes are in hand only here.
    marked: dict[str, str] = field(default_factory=dict)
    errors: list[FileError] = field(default_factory=list)
    walked: int = 0


def load_tree(paths: Sequence[str], config: Config, profile: Profile) -> LoadedTree:
    tree = LoadedTree()
    prefilter = Prefilter(profile)
    for item in discover(
        paths, config.exclude, config.shown_as, config.follow_links, config.link_roots
    ):
        if isinstance(item, DiscoveryError):
            tree.errors.append(FileError(item.path, item.message))
            continue
        load_file(item, tree, prefilter, max_bytes=config.max_file_bytes)
    return tree


def load_file(
    item: Candidate,
    tree: LoadedTree,
    prefilter: Prefilter,
    known: Mapping[str, KnownFile] | None = None,
    max_bytes: int = MAX_FILE_BYTES,
) -> None:
    """Read one discovered file into the tree when it passes the prefilter. With `known`
    (what the last scan with the cache found in the files it read as Python, `located`), a
    file whose bytes are the same is taken as found then, and the digest of the bytes of a
    file read as Python is kept on it. A file of more than `max_bytes` is an error, told by
    the walk's size before it is read and by a read that stops one byte past the limit."""
    tree.walked += 1
    if item.stamp[0] > max_bytes:
        tree.errors.append(FileError(item.display, too_large(item.stamp[0], max_bytes)))
        return
    try:
        with open(item.path, "rb") as handle:
            data = handle.read(max_bytes + 1)
            if len(data) > max_bytes:  # grown since the walk
                size = max(os.fstat(handle.fileno()).st_size, len(data))
                tree.errors.append(FileError(item.display, too_large(size, max_bytes)))
                return
    except OSError as exc:
        tree.errors.append(FileError(item.display, f"cannot read: {exc.strerror or exc}"))
        return
    found = known.get(item.display) if known is not None else None
    if found is not None:
        data_key = data_digest(data)
        if data_key == found.digest:
            try:
                text, encoding = decode_source(data)
            except SourceError:
                pass  # it decoded before: read it as any other file, which reports the error
            else:
                source = found.source(item.display, text, encoding)
                tree.files.append(source)
                tree.hits.add(source, prefilter)
                return
    facts_only = any(all(word in data for word in words) for words in prefilter.fact_words)
    matched = facts_only or prefilter.matches(data)
    batch_words = prefilter.batch_words
    batches = not matched and bool(batch_words) and all(word in data for word in batch_words)
    if matched or batches:
        try:
            text_file = SourceFile.from_bytes(item.display, data)
        except SourceError as exc:
            if matched:
                tree.errors.append(FileError(item.display, str(exc)))
        else:
            # The hit lines themselves are found when the file's classes are analysed. The
            # words are ASCII: in UTF-8 they occur in the text where they occur in the bytes.
            utf8 = text_file.encoding in ("utf-8", "utf-8-sig")
            if (
                facts_only
                or (matched and (utf8 or prefilter.matches_text(text_file.text)))
                or (batches and feeds_batch_modes(text_file, prefilter.profile))
            ):
                if utf8:
                    text_file.holds_marker = holds_marker(data, text_file.text)
                if known is not None:
                    text_file.data_digest = data_digest(data)
                tree.files.append(text_file)
                tree.hits.add(text_file, prefilter)
                return
    if MARKER_BYTES in data.lower():
        tree.marked[item.display] = readable_text(data)
