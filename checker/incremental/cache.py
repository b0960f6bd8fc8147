"""The on-disk cache: solver verdicts by obligation, each file's analysis (`idxcheck.incremental.parts`),
and whole scan results by tree.

- A verdict is keyed by a hash of the obligation's normalised formulas (provenance stripped, so
  a moved line keeps its key) plus the tool version, the solver version and the resource limit:
  a changed expression or a new release of either misses, nothing else does.
- A scan result is keyed by the contents of every file the scan reads (after the prefilter), the
  configuration and the same versions: a warm scan of an unchanged tree reads the files, hashes
  them and returns the stored result.

Stored in SQLite (WAL mode), so concurrent runs (pre-commit in parallel terminals, two CI jobs
on one runner) neither corrupt nor block each other for long; bounded in size (least recently
used entries are dropped past the limit)."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from idxcheck import __version__, memo
from idxcheck.model.stable import digest

MAX_VERDICTS = 200_000
MAX_RESULTS = 64
MAX_BLOBS = 16
# A file's analysis pickles to kilobytes: this many hold many whole-tree scans' worth in tens
# of megabytes (bench/RESULTS.md, "Measurements that stood in code comments").
MAX_PARTS = 5_000
# A class's syntax trees pickled are many times its text (bench/RESULTS.md, "Measurements that
# stood in code comments"). They are kept by the bytes stored, so that both the whole
# classes' trees and their chunks' (`idxcheck.source.chunks`) fit for a whole release; the
# count bounds the marks of texts parsed once, which are empty.
MAX_PARSE_BYTES = 160_000_000
MAX_PARSES = 50_000
USED_RESOLUTION = 3600.0  # seconds: how finely "least recently used" is told apart
SCHEMA = 1


def default_cache_dir() -> Path:
    """$IDXCHECK_CACHE_DIR, else $XDG_CACHE_HOME/idxcheck, else ~/.cache/idxcheck (one
    definition, which the answer memo reads before anything else is imported)."""
    return Path(memo.cache_root())


_FINGERPRINT: list[str] = []


def code_fingerprint() -> str:
    """The checker's own code, by file name, size and modification time: an editable install
    whose rules or extractor change (same version number) must not reuse old verdicts. Found
    without importing the rules, so that a warm scan never loads the extractor."""
    if not _FINGERPRINT:
        import importlib.util

        entries: list[str] = []
        for name in ("idxcheck", "idxcheck.rules"):
            spec = importlib.util.find_spec(name)
            for location in (spec.submodule_search_locations or []) if spec else []:
                root = Path(location)
                for path in sorted(root.rglob("*.py")):
                    try:
                        info = path.stat()
                    except OSError:
                        continue
                    entries.append(f"{path.relative_to(root)}:{info.st_size}:{info.st_mtime_ns}")
        _FINGERPRINT.append(digest(*entries)[:16])
    return _FINGERPRINT[0]


def tool_versions(solver: str) -> str:
    """What every cache key carries: idxcheck's version and code, the solver, the layout."""
    return f"idxcheck {__version__} ({code_fingerprint()}); z3 {solver}; schema {SCHEMA}"


def solver_version() -> str:
    """The installed z3's version, read from the name of its distribution's metadata folder
    next to the package (z3 is not imported; `importlib.metadata` would search every path
    entry, a noticeable share of a pre-commit run: bench/RESULTS.md, "Measurements that stood
    in code comments"), else from `importlib.metadata`."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("z3")
        if spec is not None and spec.origin is not None:
            site = os.path.dirname(os.path.dirname(spec.origin))
            found = [
                entry.name[len("z3_solver-") : -len(".dist-info")]
                for entry in os.scandir(site)
                if entry.name.startswith("z3_solver-") and entry.name.endswith(".dist-info")
            ]
            if len(found) == 1:
                return found[0]
        from importlib.metadata import version

        return version("z3-solver")
    except Exception:
        return "unknown"


# How long a statement waits for another process's write to end. Concurrent scans write for
# milliseconds at a time; a process that holds the lock longer makes this run give up the
# cache's writes (or, for a read, the cache) with a warning, rather than wait at every write.
LOCK_WAIT_SECONDS = 2.0


class _Run:
    """What this process found of the cache folders it used in the current scan (`start_run`):
    the folders it uses no more and those it writes no more to, each with the reason; and
    the warnings this process said. A forked worker says none: its parent meets the same
    folder."""

    def __init__(self) -> None:
        self.off: dict[str, str] = {}
        self.no_writes: dict[str, str] = {}
        self.warned: set[str] = set()
        self.quiet = False


_RUN = _Run()


def start_run() -> None:
    """A new scan: the cache folders are tried again (a warning said is not said again: the
    scan of a `--diff-base` ref follows the work tree's in the same process)."""
    _RUN.off.clear()
    _RUN.no_writes.clear()


def _quiet_child() -> None:
    _RUN.quiet = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_quiet_child)


def warn(message: str) -> None:
    """One line on stderr, once a scan, from the scan's own process."""
    if _RUN.quiet or message in _RUN.warned:
        return
    _RUN.warned.add(message)
    try:
        memo.note_stderr()
        sys.stderr.write(f"idxcheck: warning: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # a closed stream: the scan goes on


def unusable(directory: str) -> str | None:
    """Why the cache cannot live in `directory` (it cannot be made: a file is there or above
    it, a read-only file system), or None. Costs a `mkdir` on the path of every scan."""
    try:
        os.makedirs(directory, exist_ok=True)
    except FileExistsError:
        return "a file is in its place"
    except NotADirectoryError:
        return "a file is in its path"
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _locked(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11 and later
    if code is not None:
        return code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED
    return "locked" in str(exc) or "busy" in str(exc)


class Cache:
    """The cache in one folder. Every failure to use it is a miss (a read) or a write left
    out: a scan with a cache it cannot use is only slower. The first failure of a scan turns
    the cache (or its writes) off for the rest of that scan in this process, with a warning,
    so that a locked or broken cache costs one wait, not one a statement."""

    def __init__(self, directory: Path, solver_version: str = "") -> None:
        self.directory = directory
        self.solver_version = solver_version
        self._conn: sqlite3.Connection | None = None
        self._name = str(directory)

    @property
    def path(self) -> Path:
        return self.directory / "cache.sqlite3"

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            off = _RUN.off.get(self._name)
            if off is not None:
                raise sqlite3.OperationalError(off)
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=LOCK_WAIT_SECONDS, isolation_level=None)
            except (OSError, sqlite3.Error) as exc:
                self._failed(exc, reading=True)
                raise sqlite3.OperationalError(str(exc)) from None
            try:
                _create(conn)
            except sqlite3.Error as exc:
                conn.close()
                self._failed(exc, reading=True)
                raise
            self._conn = conn
        return self._conn

    def _failed(self, exc: OSError | sqlite3.Error, reading: bool) -> None:
        """A statement (or the connection) failed: the cache off (a read) or its writes off
        for the rest of the scan, and said once."""
        if self._name in _RUN.off:
            return
        locked = isinstance(exc, sqlite3.Error) and _locked(exc)
        reason = (
            "locked by another process"
            if locked
            else (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
        )
        if reading:
            _RUN.off[self._name] = reason
            hint = "" if locked else " (`idxcheck cache clear` starts it anew)"
            warn(f"cannot use the cache in {self._name}: {reason}; scanning without it{hint}")
        elif self._name not in _RUN.no_writes:
            _RUN.no_writes[self._name] = reason
            warn(f"cannot write to the cache in {self._name}: {reason}; this scan stores nothing")

    def _writes(self) -> bool:
        return self._name not in _RUN.no_writes and self._name not in _RUN.off

    def versions(self) -> str:
        return tool_versions(self.solver_version)

    # -- verdicts ---------------------------------------------------------------------------

    def verdict_key(self, *parts: str) -> str:
        return digest(self.versions(), *parts)

    def get_verdict(self, key: str) -> dict[str, Any] | None:
        try:
            row = (
                self._connect()
                .execute("SELECT value FROM verdicts WHERE key = ?", (key,))
                .fetchone()
            )
        except sqlite3.Error as exc:
            self._failed(exc, reading=True)
            return None
        if row is None:
            return None
        try:
            found = json.loads(row[0])
        except (ValueError, TypeError):  # not JSON (or not text): a miss
            return None
        return found if isinstance(found, dict) else None

    def put_verdict(self, key: str, value: dict[str, Any]) -> None:
        # Keys in their order: a warm run must print dicts (counterexample, replay) exactly
        # as the cold run did.
        self._write(
            "INSERT OR REPLACE INTO verdicts (key, value, used) VALUES (?, ?, ?)",
            (key, json.dumps(value), time.time()),
        )

    # -- whole results ----------------------------------------------------------------------

    def get_result(self, key: str) -> bytes | None:
        stored = self._get("results", key)
        return bytes(stored) if isinstance(stored, bytes) else None

    def put_result(self, key: str, value: bytes) -> None:
        self._put_bytes("results", key, value)

    # -- pickled objects (tree facts) ---------------------------------------------------------

    def get_blob(self, key: str) -> bytes | None:
        stored = self._get("blobs", key)
        return bytes(stored) if isinstance(stored, bytes) else None

    def put_blob(self, key: str, value: bytes) -> None:
        self._put_bytes("blobs", key, value)

    # -- pickled analyses of single files (`idxcheck.incremental.parts`) ----------------------------------

    def get_part(self, key: str) -> bytes | None:
        stored = self._get("parts", key)
        return bytes(stored) if isinstance(stored, bytes) else None

    def put_part(self, key: str, value: bytes) -> None:
        self._put_bytes("parts", key, value)

    # -- pickled syntax trees of class texts (`idxcheck.incremental.parse_store`) ----------------------

    def get_parse(self, key: str) -> bytes | None:
        stored = self._get("trees", key)
        return bytes(stored) if isinstance(stored, bytes) else None

    def put_parses(self, items: list[tuple[str, bytes]]) -> None:
        """Several entries in one transaction."""
        if not self._writes():
            return
        now = time.time()
        try:
            conn = self._connect()
            conn.execute("BEGIN")
            try:
                conn.executemany(
                    "INSERT OR REPLACE INTO trees (key, size, used, value) VALUES (?, ?, ?, ?)",
                    [(key, len(value), now, value) for key, value in items],
                )
                conn.execute("COMMIT")
            except sqlite3.Error:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            self._failed(exc, reading=False)

    def _put_bytes(self, table: str, key: str, value: bytes) -> None:
        self._write(
            f"INSERT OR REPLACE INTO {table} (key, value, used) VALUES (?, ?, ?)",
            (key, value, time.time()),
        )

    def _write(self, statement: str, params: tuple[object, ...]) -> None:
        if not self._writes():
            return
        try:
            self._connect().execute(statement, params)
        except sqlite3.Error as exc:
            self._failed(exc, reading=False)  # a cache that cannot be written is only slower

    def _get(self, table: str, key: str) -> Any:
        """A stored value, marked as used for the size bound. The mark is rewritten at most
        once an hour: SQLite rewrites the whole row, and rewriting a large stored outcome on
        every warm scan fills the write-ahead log until a checkpoint stalls one."""
        try:
            conn = self._connect()
            row = conn.execute(f"SELECT value, used FROM {table} WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._failed(exc, reading=True)
            return None
        if row is None:
            return None
        used = row[1]
        if not isinstance(used, (int, float)) or time.time() - used > USED_RESOLUTION:
            self._write(f"UPDATE {table} SET used = ? WHERE key = ?", (time.time(), key))
        return row[0]

    def prune(self) -> None:
        if not self._writes():
            return
        try:
            conn = self._connect()
            for table, limit in (
                ("verdicts", MAX_VERDICTS),
                ("results", MAX_RESULTS),
                ("blobs", MAX_BLOBS),
                ("parts", MAX_PARTS),
                ("trees", MAX_PARSES),
            ):
                (count,) = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
                if count > limit:
                    conn.execute(
                        f"DELETE FROM {table} WHERE key IN (SELECT key FROM {table} ORDER BY used LIMIT ?)",
                        (count - limit,),
                    )
            self._prune_parse_bytes(conn)
            # Where syntax trees were kept before their sizes were: its trees are not read.
            conn.execute("DROP TABLE IF EXISTS parses")
        except sqlite3.Error as exc:
            self._failed(exc, reading=False)

    def _prune_parse_bytes(self, conn: sqlite3.Connection) -> None:
        """The least recently used syntax trees removed until the rest fit MAX_PARSE_BYTES."""
        (size,) = conn.execute("SELECT TOTAL(size) FROM trees").fetchone()
        if size <= MAX_PARSE_BYTES:
            return
        rows = conn.execute("SELECT key, size FROM trees ORDER BY used DESC").fetchall()
        kept = 0
        removed: list[tuple[str]] = []
        for key, length in rows:
            kept += length if isinstance(length, int) else 0
            if kept > MAX_PARSE_BYTES:
                removed.append((key,))
        conn.executemany("DELETE FROM trees WHERE key = ?", removed)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _create(conn: sqlite3.Connection) -> None:
    """The cache's tables, where they are not yet."""
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, value TEXT, used REAL)"
    )
    conn.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value TEXT, used REAL)")
    conn.execute("CREATE TABLE IF NOT EXISTS blobs (key TEXT PRIMARY KEY, value BLOB, used REAL)")
    conn.execute("CREATE TABLE IF NOT EXISTS parts (key TEXT PRIMARY KEY, value BLOB, used REAL)")
    # Sizes kept beside the trees, and indexed with `used`: `prune` sums them from the index
    # alone (summing the lengths of the stored values reads every row).
    conn.execute(
        "CREATE TABLE IF NOT EXISTS trees (key TEXT PRIMARY KEY, size INTEGER, used REAL, value BLOB)"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS trees_used ON trees (used, size)")
    # `prune` finds the least recently used entries by these: without them SQLite reads every
    # row of the table for its `used`, past the value stored before it (whole results of a
    # release are megabytes each; bench/RESULTS.md, "Measurements that stood in code comments").
    for table in ("verdicts", "results", "blobs", "parts"):
        conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_used ON {table} (used)")


def read_blob(directory: str, key: str) -> bytes | None:
    """One stored blob, through a connection of its own that is closed again (a scan forks
    after reading it, and a connection must not cross a fork)."""
    cache = Cache(Path(directory))
    try:
        return cache.get_blob(key)
    finally:
        cache.close()


def write_blob(directory: str, key: str, value: bytes) -> None:
    """Store one blob, through a connection of its own that is closed again."""
    cache = Cache(Path(directory))
    try:
        cache.put_blob(key, value)
    finally:
        cache.close()


def clear(directory: Path) -> bool:
    """Delete the cache's database and the answer memo's answers (`idxcheck.memo`)."""
    path = directory / "cache.sqlite3"
    removed = False
    for suffix in ("", "-wal", "-shm"):
        candidate = Path(str(path) + suffix)
        if candidate.exists():
            candidate.unlink()
            removed = True
    answers = directory / memo.ANSWERS_FOLDER
    if answers.is_dir():
        for stored in answers.iterdir():
            if stored.is_file():  # the memo writes only files there; anything else is kept
                stored.unlink()
                removed = True
        try:
            answers.rmdir()
        except OSError:  # something not ours was left in it
            pass
    return removed
