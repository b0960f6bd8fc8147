"""What reading a candidate file finds in its bytes, kept by their digest from one scan with
the cache to the next: that the file is read as Python (the prefilter's and the tree facts'
words), its top-level blocks and where they lie, and whether it holds the suppression marker
(`engine.load_file`). A pre-commit run reads every candidate file of the tree again; digesting
them is cheaper than testing the words, locating the blocks and looking for the marker again
(bench/RESULTS.md, "What each change did")."""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from idxcheck.incremental.cache import read_blob, tool_versions, write_blob
from idxcheck.incremental.stored import loads
from idxcheck.model.config import Config
from idxcheck.model.stable import digest
from idxcheck.source.files import Block, Offsets, SourceFile


@dataclass(frozen=True)
class Located:
    """A file read as Python, as it was read: the digest of its bytes, its blocks, their
    offsets, whether it holds the marker (None: not told from its bytes) and the readings
    of its text (`source.reading`) made by then."""

    digest: str
    blocks: tuple[Block, ...]
    offsets: Mapping[Block, Offsets]
    holds_marker: bool | None
    readings: Mapping[str, object]

    def source(self, path: str, text: str, encoding: str) -> SourceFile:
        """The file, from its text decoded from the same bytes."""
        found = SourceFile(path, text, encoding, (list(self.blocks), dict(self.offsets)))
        found.holds_marker = self.holds_marker
        found.data_digest = self.digest
        found.readings = dict(self.readings)
        return found


def located_key(config: Config) -> str:
    # The prefilter's words and the functions of the readings come from the profile and the
    # engine, both in the code fingerprint.
    return digest("located", tool_versions("any"), config.profile)


def load_located(config: Config) -> dict[str, Located]:
    """The files read as Python by the last scan with this cache (by displayed path)."""
    assert config.cache_dir is not None
    stored = read_blob(config.cache_dir, located_key(config))
    if stored is None:
        return {}
    # None: written by another layout of these classes (or not at all): read the files anew
    found: dict[str, Located] | None = loads(stored, dict[str, Located])
    return found if found is not None else {}


def store_located(
    config: Config, files: Iterable[SourceFile], before: Mapping[str, Located]
) -> None:
    """Keep what this scan found in the files it read as Python (those whose digest it took),
    where that differs from what it was handed (`before`): another file, or a reading made
    for the first time."""
    assert config.cache_dir is not None
    files = list(files)
    now = {
        source.path: Located(
            source.data_digest,
            tuple(source.blocks),
            source.offsets,
            source.holds_marker,
            dict(source.readings),
        )
        for source in files
        if source.data_digest is not None
    }
    same = {p: v.digest for p, v in now.items()} == {p: v.digest for p, v in before.items()}
    if same and not any(s.new_readings for s in files if s.data_digest is not None):
        return
    write_blob(config.cache_dir, located_key(config), pickle.dumps(now, pickle.HIGHEST_PROTOCOL))
