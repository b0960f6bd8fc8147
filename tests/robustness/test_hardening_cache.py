"""The cache is input like any other (a CI cache restored between runs): it holds data, never
code, a bad entry is a miss, and a cache that cannot be used makes a scan slower, never
stops it. Each test crafts the cache (or its folder) and compares with a scan without it."""

from __future__ import annotations

import errno
import json
import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from idxcheck.cli import entry, main
from idxcheck.incremental import cache as cache_module

FIXTURES = Path("fixtures")
PATHS = [str(FIXTURES / "bugs"), str(FIXTURES / "correct")]
PICKLED = ("blobs", "results", "parts", "trees")


def _scan(cache_dir: Path | None, *args: str, paths: list[str] = PATHS) -> tuple[int, Any, str]:
    """exit code, the JSON report without its timings, stderr."""
    env = {"IDXCHECK_CACHE_DIR": str(cache_dir)} if cache_dir is not None else {}
    options = [] if cache_dir is not None else ["--no-cache"]
    result = CliRunner(env=env).invoke(
        main, ["scan", "--format", "json", "--jobs", "1", *options, *args, *paths]
    )
    try:
        doc = json.loads(result.stdout)
    except ValueError:
        doc = None
    else:
        doc.pop("stats", None)
    return result.exit_code, doc, result.stderr


@pytest.fixture(scope="module")
def expected() -> tuple[int, Any]:
    """The scan without a cache, which every scan with one must equal."""
    code, doc, _ = _scan(None)
    assert code == 1 and doc["findings"], "the fixtures hold findings: the tests are not vacuous"
    return code, doc


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache that holds every kind of entry: results, stamps and tree facts, analyses of
    files and readings, verdicts, and syntax trees (stored the second time a text is parsed)."""
    cache_dir = tmp_path_factory.mktemp("filled") / "cache"
    assert _scan(cache_dir)[0] == 1
    _delete(cache_dir, ("results", "blobs", "parts"))
    assert _scan(cache_dir)[0] == 1
    for table in (*PICKLED, "verdicts"):
        assert _rows(cache_dir, table), f"the scans stored no {table}: the test would be vacuous"
    return cache_dir


def _poisoned(filled: Path, tmp_path: Path, tables: tuple[str, ...], value: bytes | str) -> Path:
    """A copy of the filled cache with every pickled entry of `tables` (every entry, for the
    verdicts) set to `value`; for the verdicts, without what would answer before them."""
    cache_dir = tmp_path / "cache"
    shutil.copytree(filled, cache_dir)
    with sqlite3.connect(cache_dir / "cache.sqlite3") as conn:
        for table in tables:
            where = "1" if table == "verdicts" else "substr(value, 1, 1) = x'80'"
            changed = conn.execute(f"UPDATE {table} SET value = ? WHERE {where}", (value,))
            assert changed.rowcount > 0, table
    if "verdicts" in tables:
        _delete(cache_dir, ("results", "blobs", "parts"))
    return cache_dir


def _rows(cache_dir: Path, table: str, where: str = "1") -> int:
    with sqlite3.connect(cache_dir / "cache.sqlite3") as conn:
        (count,) = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}").fetchone()
    return int(count)


def _delete(cache_dir: Path, tables: tuple[str, ...]) -> None:
    with sqlite3.connect(cache_dir / "cache.sqlite3") as conn:
        for table in tables:
            conn.execute(f"DELETE FROM {table}")


def _spy_reads(monkeypatch: pytest.MonkeyPatch, value: bytes | str) -> list[str]:
    """The tables from which the scan read `value`."""
    seen: list[str] = []
    get = cache_module.Cache._get

    def spy(self: cache_module.Cache, table: str, key: str) -> Any:
        found = get(self, table, key)
        if found == value:
            seen.append(table)
        return found

    monkeypatch.setattr(cache_module.Cache, "_get", spy)
    return seen


class _Runs:
    """Pickles as a call of `os.mkdir(marker)`: the marker shows the call was made."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.marker),))


class _Reaches:
    """Pickles as `getattr(Scan, "__init__")`: from a function of the package, `getattr`
    reaches its module's globals, and from them anything."""

    def __reduce__(self) -> tuple[Any, ...]:
        from idxcheck.model.outcome import Scan

        return (getattr, (Scan, "__init__"))


def test_a_pickled_call_in_the_cache_is_not_run(
    filled: Path, expected: tuple[int, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pickled entry made a call of `os.mkdir`: a miss each (one leads the scan to read
    the next kind), so that the scan reads and refuses them all."""
    marker = tmp_path / "ran"
    payload = pickle.dumps(_Runs(marker))
    cache_dir = _poisoned(filled, tmp_path, PICKLED, payload)
    read = _spy_reads(monkeypatch, payload)
    found = _scan(cache_dir)
    assert set(read) == set(PICKLED), "some poisoned entries were not read: the test is vacuous"
    assert not marker.exists(), "a cache entry ran code"
    assert found[:2] == expected


@pytest.mark.parametrize(
    "value",
    [
        pickle.dumps(42),
        pickle.dumps(("a", "b")),
        pickle.dumps(((("x", "y"),), "not a part")),
        pickle.dumps({"k": "v"}),
        pickle.dumps([None, None, None, None]),
        b"\x80\x05not a pickle",
        pickle.dumps(_Reaches()),
    ],
    ids=["int", "pair", "lookups", "dict", "list", "garbage", "getattr"],
)
def test_a_pickled_entry_of_another_shape_is_a_miss(
    filled: Path,
    expected: tuple[int, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    value: bytes,
) -> None:
    cache_dir = _poisoned(filled, tmp_path, PICKLED, value)
    read = _spy_reads(monkeypatch, value)
    assert _scan(cache_dir)[:2] == expected
    assert set(read) == set(PICKLED)


@pytest.mark.parametrize(
    "value",
    [
        "not json",
        "[1, 2]",
        '"PROVED"',
        '{"verdict": "NO SUCH VERDICT", "model": {}, "atoms": {}, "needs": {}, "reason": ""}',
        '{"verdict": "REFUTED", "model": {"x": "one"}, "atoms": {}, "needs": {}, "reason": ""}',
        '{"verdict": "PROVED", "model": [], "atoms": {}, "needs": {}, "reason": 0}',
        '{"reachable": "yes"}',
        '{"verdict": "PROVED"}',
    ],
)
def test_a_verdict_of_another_shape_is_a_miss(
    filled: Path, expected: tuple[int, Any], tmp_path: Path, value: str
) -> None:
    cache_dir = _poisoned(filled, tmp_path, ("verdicts",), value)
    assert _scan(cache_dir)[:2] == expected


def test_a_stored_digest_of_another_shape_is_a_miss(
    filled: Path, expected: tuple[int, Any], tmp_path: Path
) -> None:
    """The analyses of files are found through entries that name other entries (and through
    the code digests of files): bytes that are no digest there are a miss too."""
    cache_dir = _poisoned(filled, tmp_path, (), b"")
    with sqlite3.connect(cache_dir / "cache.sqlite3") as conn:
        rows = conn.execute("SELECT key, value FROM parts WHERE length(value) = 64").fetchall()
        assert rows, "no entry names another: the test would be vacuous"
        conn.executemany(
            "UPDATE parts SET value = ? WHERE key = ?", [(b"\xff" + v[1:], k) for k, v in rows]
        )
    _delete(cache_dir, ("results",))
    _delete_outcomes(cache_dir)  # the tree facts stay: with them, the names are looked up
    assert _scan(cache_dir)[:2] == expected


def _delete_outcomes(cache_dir: Path) -> None:
    """The stored outcomes of whole scans (`idxcheck.incremental.stamps`) taken out of the blobs."""
    from idxcheck.model.outcome import Scanned

    with sqlite3.connect(cache_dir / "cache.sqlite3") as conn:
        rows = conn.execute("SELECT key, value FROM blobs").fetchall()
        outcomes = [(k,) for k, v in rows if isinstance(pickle.loads(v), Scanned)]
        assert outcomes
        conn.executemany("DELETE FROM blobs WHERE key = ?", outcomes)


def test_every_entry_a_scan_stores_loads(filled: Path) -> None:
    """The loader refuses no class the cache stores: else every warm scan would miss."""
    from idxcheck.incremental import stored

    with sqlite3.connect(filled / "cache.sqlite3") as conn:
        for table in PICKLED:
            rows = conn.execute(f"SELECT value FROM {table} WHERE substr(value, 1, 1) = x'80'")
            values = [value for (value,) in rows]
            assert values and all(stored.loads(v, object) is not None for v in values), table


def test_the_loader_builds_only_the_cache_s_own_classes() -> None:
    from idxcheck.incremental import stored
    from idxcheck.model.findings import ScanResult
    from idxcheck.model.outcome import Scan
    from idxcheck.model.spans import Loc, Span
    from idxcheck.model.verdicts import Verdict

    kept = Loc.fixed(Span("a.py", 1, 2, 3, 4), "text")
    value = (
        Scan(ScanResult(), (), (), ("a.py",)),
        Verdict.REFUTED,
        kept,
        {1, 2},
        frozenset({3}),
        ...,
    )
    found = stored.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL), object)
    assert isinstance(found, tuple) and found[:2] == value[:2] and found[2].span == kept.span
    refused = [
        pickle.dumps(_Reaches()),
        pickle.dumps(os.system),
        pickle.dumps(eval),
        pickle.dumps(entry),  # a function of the package
        pickle.dumps(cache_module.Cache),  # a class of the package that is not plain data
        pickle.dumps(subprocess.Popen),
        # A name looked up through an allowed class (protocol 4 resolves dotted names).
        b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00\x8c\x0cidxcheck.api\x8c\rScan.__init__\x93.",
    ]
    for data in refused:
        assert stored.loads(data, object) is None, data


def _bad_name_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    bug = (FIXTURES / "bugs" / "eagle_draft_extend_v2.py").read_bytes()
    try:
        with open(os.fsencode(tree) + b"/bug\xfe.py", "wb") as handle:
            handle.write(bug)
        with open(os.fsencode(tree) + b"/other\xff.py", "wb") as handle:
            handle.write(b"x = 1\n")
    except (OSError, UnicodeError) as exc:
        pytest.skip(f"this file system takes no file name that is not UTF-8: {exc}")
    (tree / "plain.py").write_bytes(bug)
    old = time.time() - 60  # settled: the warm scan is answered by the stamps
    for found in os.scandir(tree):
        os.utime(found.path, (old, old))
    return tree


def test_file_names_that_are_not_utf8_scan_with_the_cache(tmp_path: Path) -> None:
    tree = _bad_name_tree(tmp_path)
    expected = _scan(None, paths=[str(tree)])
    assert expected[0] == 1 and len({f["path"] for f in expected[1]["findings"]}) == 2
    cache_dir = tmp_path / "cache"
    cold = _scan(cache_dir, paths=[str(tree)])
    assert _rows(cache_dir, "blobs") > 0, "the stamps were stored"
    warm = _scan(cache_dir, paths=[str(tree)])
    assert cold[:2] == warm[:2] == expected[:2], (cold[2], warm[2])


def _one_warning(err: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "warning" in lines[0] and "cache" in lines[0], err


@pytest.mark.parametrize("kind", ["a file", "under a file"])
def test_a_cache_folder_that_cannot_be_made_is_a_warning(
    expected: tuple[int, Any], tmp_path: Path, kind: str
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache's folder would be\n")
    cache_dir = blocker if kind == "a file" else blocker / "sub" / "cache"
    code, doc, err = _scan(cache_dir)
    assert (code, doc) == expected
    _one_warning(err)
    assert blocker.read_text() == "a file where the cache's folder would be\n"


def test_a_cache_folder_on_a_read_only_file_system_is_a_warning(
    expected: tuple[int, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "mount" / "cache"
    real_mkdir = os.mkdir

    def read_only(path: Any, *args: Any, **kwargs: Any) -> None:
        if str(path).startswith(str(tmp_path / "mount")):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", read_only)
    code, doc, err = _scan(cache_dir)
    assert (code, doc) == expected
    _one_warning(err)


def test_a_cache_locked_by_another_process_costs_little(
    expected: tuple[int, Any], tmp_path: Path
) -> None:
    """Another process holds the cache's write lock for the whole scan: the scan reads what
    it can, writes nothing, says so once, and does not wait for the lock each write."""
    cache_dir = tmp_path / "cache"
    cache_module.Cache(cache_dir)._connect()
    holder = sqlite3.connect(cache_dir / "cache.sqlite3", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO blobs (key, value, used) VALUES ('held', x'00', 0)")
    env = {**os.environ, "IDXCHECK_CACHE_DIR": str(cache_dir)}
    command = [sys.executable, "-m", "idxcheck", "scan", "--format", "json", *PATHS]
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the scan waited on the lock for over a minute")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    seconds = time.perf_counter() - started
    doc = json.loads(proc.stdout)
    doc.pop("stats")
    assert (proc.returncode, doc) == expected, proc.stderr
    _one_warning(proc.stderr)
    assert "locked" in proc.stderr
    assert seconds < 20, f"{seconds:.1f} s"


def test_a_scan_after_a_refused_cache_writes_again(tmp_path: Path) -> None:
    """What a refusal turns off lasts one scan: the next one in the same process uses the
    cache again once it can."""
    blocker = tmp_path / "cache"
    blocker.write_text("")
    assert _scan(blocker)[0] == 1
    blocker.unlink()
    assert _scan(blocker)[0] == 1
    assert _rows(blocker, "results") == 1
    shutil.rmtree(blocker)
