"""What reading a candidate finds in its bytes is kept by their digest (`idxcheck.incremental.located`):
a later scan with the cache takes it for the same bytes, and reads changed bytes anew."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from idxcheck.app.api import scan
from idxcheck.incremental import located
from idxcheck.model.config import Config
from idxcheck.profiles.schema import load_profile
from idxcheck.report.json_format import to_dict
from idxcheck.source.discover import Candidate
from idxcheck.source.files import data_digest
from idxcheck.source.prefilter import Prefilter
from idxcheck.source.tree import LoadedTree, load_file

FIXTURE = Path("fixtures/bugs/eagle_draft_extend_v2.py")


def _candidate(path: Path) -> Candidate:
    info = path.stat()
    stamp = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    return Candidate(str(path), str(path), stamp)


def _read(path: Path, known: dict[str, located.Located] | None) -> LoadedTree:
    tree = LoadedTree()
    load_file(_candidate(path), tree, Prefilter(load_profile("sglang")), known)
    return tree


def test_a_file_read_before_is_taken_as_found_and_changed_bytes_are_read_anew(
    tmp_path: Path,
) -> None:
    path = tmp_path / "backend.py"
    path.write_text(FIXTURE.read_text() + "# suppressed: idxcheck: ignore[IDX001]\n")
    fresh = _read(path, {})
    (source,) = fresh.files
    assert source.data_digest == data_digest(path.read_bytes())
    assert _read(path, None).files[0].data_digest is None  # no cache: no digest taken
    entry = located.Located(
        source.data_digest, tuple(source.blocks), source.offsets, source.holds_marker, {}
    )
    # A different answer for the same bytes would be taken: the entry is what is used.
    marked = replace(entry, holds_marker=not source.holds_marker)
    (taken,) = _read(path, {str(path): marked}).files
    assert taken.holds_marker is (not source.holds_marker)
    assert taken.blocks == source.blocks and taken.offsets == source.offsets
    assert taken.text == source.text and taken.data_digest == source.data_digest
    path.write_text(path.read_text().replace("class ", "class Renamed", 1))
    (again,) = _read(path, {str(path): marked}).files
    assert again.holds_marker is source.holds_marker  # read anew
    assert [b.name for b in again.blocks] != [b.name for b in source.blocks]


def _settled_copy(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("eagle_draft_extend_v2.py", "grid_stride.py", "indptr_length.py"):
        (tree / name).write_text((FIXTURE.parent / name).read_text())
    old = time.time() - 60
    for path in tree.iterdir():
        os.utime(path, (old, old))
    return tree


def test_a_scan_that_takes_what_the_last_one_found_reports_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _settled_copy(tmp_path)
    config = replace(Config(), cache_dir=str(tmp_path / "cache"))

    def report() -> str:
        doc = to_dict(scan([str(tree)], config).result)
        doc["stats"].pop("seconds")
        return json.dumps(doc, sort_keys=True)

    first = report()
    stored = located.load_located(config)
    assert sorted(Path(p).name for p in stored) == sorted(p.name for p in tree.iterdir())
    assert all("registry" in entry.readings for entry in stored.values())
    taken: list[str] = []
    original = located.Located.source

    def source(self: located.Located, path: str, text: str, encoding: str):  # type: ignore[no-untyped-def]
        taken.append(Path(path).name)
        return original(self, path, text, encoding)

    monkeypatch.setattr(located.Located, "source", source)
    # Another modification time: the stamps miss, the bytes are the same.
    newer = time.time() - 30
    for path in tree.iterdir():
        os.utime(path, (newer, newer))
    assert report() == first
    assert sorted(taken) == sorted(p.name for p in tree.iterdir())
    assert report() == first  # and again, from the stamps
    no_cache = to_dict(scan([str(tree)], replace(config, cache_dir=None)).result)
    no_cache["stats"].pop("seconds")
    assert json.dumps(no_cache, sort_keys=True) == first


def test_the_readings_of_a_text_are_kept_with_it_and_taken_for_the_same_bytes(
    tmp_path: Path,
) -> None:
    from idxcheck.facts.constraints import read_registry

    sglang = load_profile("sglang")

    path = tmp_path / "backend.py"
    path.write_text(FIXTURE.read_text())
    (source,) = _read(path, {}).files
    assert read_registry([source], sglang) == {} and source.new_readings
    entry = located.Located(
        source.data_digest,
        tuple(source.blocks),
        source.offsets,
        source.holds_marker,
        {"registry": (("made_up", ("MadeUpBackend",)),)},
    )
    # The reading kept is the one used (a made-up one shows it), and nothing is new.
    (taken,) = _read(path, {str(path): entry}).files
    assert read_registry([taken], sglang) == {"made_up": {"MadeUpBackend"}}
    assert not taken.new_readings
    config = replace(Config(), cache_dir=str(tmp_path / "cache"))
    located.store_located(config, [taken], {str(path): entry})
    assert located.load_located(config) == {}  # the same bytes and readings: nothing written
    read_registry([source], sglang)
    assert source.new_readings
    located.store_located(config, [source], {str(path): entry})
    assert located.load_located(config)[str(path)].readings == {"registry": ()}
