"""The warm path: a whole scan's outcome found by the `stat` stamps of the files it walks.

A scan whose files all keep their size, modification time, change time and inode (and whose
configuration, walk errors and tool and solver versions are the same) has the outcome it had:
the stored outcome is returned without reading a file, importing the extractor or loading the
profile. This is what ruff's cache compares too; the change time (which no tool can set back)
also catches a file rewritten with its old modification time restored.

A file modified within `SETTLE_SECONDS` of a scan could be modified again within the same clock
tick without its stamp changing, so such a scan stores nothing here; the next scan reads the
files and is answered by the result cache keyed by their contents (`engine.tree_key`).

The same stamps remember the files the prefilter rejected, so that a scan that does read the
tree (a file changed) does not read again the thousands of files that cannot hold a site."""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence

from idxcheck.incremental.cache import read_blob, tool_versions, write_blob
from idxcheck.incremental.stored import loads
from idxcheck.model.config import Config
from idxcheck.model.findings import FileError
from idxcheck.model.outcome import Scanned
from idxcheck.model.stable import digest
from idxcheck.source.discover import Candidate

SETTLE_SECONDS = 2.0
# Files remembered as rejected by the prefilter, over every tree scanned with this cache.
MAX_REJECTED = 200_000


def stamp_key(candidates: Sequence[Candidate], errors: Sequence[FileError], config: Config) -> str:
    parts = ["stamps", tool_versions(solver_stamp()), config.key_settings()]
    parts.extend(f"{e.path}\0{e.message}" for e in errors)
    parts.extend(f"{c.display}\0{c.path}\0{c.stamp}" for c in candidates)
    return digest(*parts)


def solver_stamp() -> str:
    """The installed z3 by the stamp of its package file: reading its version from the
    distribution's metadata is a large share of a warm scan (bench/RESULTS.md, "Measurements
    that stood in code comments"), and any reinstall rewrites the file."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("z3")
    if spec is None or spec.origin is None:
        return "none"
    try:
        info = os.stat(spec.origin)
    except OSError:
        return "none"
    return f"{spec.origin}:{info.st_size}:{info.st_mtime_ns}:{info.st_ino}"


def settled(candidates: Sequence[Candidate], now: float) -> bool:
    """Whether every file's stamp is old enough to stand for its contents."""
    limit = int((now - SETTLE_SECONDS) * 1e9)
    return all(c.stamp[1] < limit and c.stamp[2] < limit for c in candidates)


def settled_one(candidate: Candidate, now: float) -> bool:
    return settled((candidate,), now)


def rejected_key(config: Config) -> str:
    # The prefilter's words come from the profile and the engine, both in the code fingerprint.
    return digest("rejected", tool_versions("any"), config.profile)


def load_rejected(config: Config) -> dict[str, tuple[int, int, int, int]]:
    """Files the prefilter rejected in earlier scans (absolute path -> stamp): a file whose
    stamp is unchanged is not read again. Files with a suppression comment are never in it."""
    assert config.cache_dir is not None
    stored = read_blob(config.cache_dir, rejected_key(config))
    if stored is None:
        return {}
    try:
        found = json.loads(stored)
        return {path: (s[0], s[1], s[2], s[3]) for path, s in found.items()}
    except (ValueError, TypeError, IndexError, AttributeError):
        return {}


def store_rejected(config: Config, rejected: dict[str, tuple[int, int, int, int]]) -> None:
    assert config.cache_dir is not None
    write_blob(
        config.cache_dir, rejected_key(config), json.dumps(rejected, sort_keys=True).encode()
    )


def load(config: Config, key: str) -> Scanned | None:
    assert config.cache_dir is not None
    stored = read_blob(config.cache_dir, key)
    if stored is None:
        return None
    found: Scanned | None = loads(stored, Scanned)  # None: another layout of these classes, or bad
    return found


def store(config: Config, key: str, outcome: Scanned) -> None:
    """Pickled: a warm scan decodes the outcome of a whole tree faster than from JSON
    (bench/RESULTS.md, "What each change did"), and the cache is the user's own folder."""
    assert config.cache_dir is not None
    write_blob(config.cache_dir, key, pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL))
