"""Class trees kept in the cache (`idxcheck.incremental.parse_store`): marked at a text's first parse,
stored at its second, taken at its third, and a scan that takes them reports the same."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from idxcheck.app.run import scan
from idxcheck.incremental import parse_store
from idxcheck.incremental.cache import Cache
from idxcheck.model.config import Config
from idxcheck.report.json_format import to_dict
from idxcheck.source import files as source_module
from idxcheck.source.files import SourceFile

FIXTURE = Path("fixtures/bugs/eagle_draft_extend_v2.py")


def _class_block(source: SourceFile):  # type: ignore[no-untyped-def]
    return next(b for b in source.blocks if b.kind == "class")


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts libcst parses from now on (a class's, or its chunks')."""
    parsed: list[str] = []
    original = source_module.parse_module

    def parse_module(text: str):  # type: ignore[no-untyped-def]
        parsed.append(text)
        return original(text)

    monkeypatch.setattr(source_module, "parse_module", parse_module)
    return parsed


def test_a_text_is_marked_then_stored_then_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = Cache(tmp_path / "cache")
    text = FIXTURE.read_text()
    parsed = _count_parses(monkeypatch)
    trees = []
    counts = []
    for _ in range(3):
        source = SourceFile(str(FIXTURE), text)
        with parse_store.parses_from(cache):
            trees.append(source.parse_block(_class_block(source)))
        counts.append(len(parsed))
    # Parsed (by chunks) at the first and second scans, taken from the store at the third.
    assert 0 < counts[0] < counts[1] == counts[2]
    store = parse_store.ParseStore(cache)
    block_text = source.parse_text(_class_block(source))
    assert store.get(block_text) is not None
    code = SourceFile(str(FIXTURE), text).code_for
    assert code(trees[2]) == code(trees[0])
    assert source_module.parse_store is None  # set only within
    # A stored tree that does not unpickle is parsed again.
    cache.put_parses([(store._key(store._prefix, block_text), b"not a pickle")])
    assert store.get(block_text) is None
    again = SourceFile(str(FIXTURE), text)
    with parse_store.parses_from(cache):
        assert code(again.parse_block(_class_block(again))) == code(trees[0])
    cache.close()


def test_a_scan_that_takes_stored_trees_reports_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [str(FIXTURE.parent)]
    taken: list[str] = []
    original = parse_store.ParseStore.get

    def get(self: parse_store.ParseStore, text: str):  # type: ignore[no-untyped-def]
        found = original(self, text)
        if found is not None:
            taken.append(text)
        return found

    monkeypatch.setattr(parse_store.ParseStore, "get", get)

    def report(rlimit: int, cache: bool) -> str:
        config = replace(Config(), jobs=1, rlimit=rlimit)
        if cache:
            config = replace(config, cache_dir=str(tmp_path / "cache"))
        doc = to_dict(scan(paths, config))
        doc["stats"].pop("seconds")  # type: ignore[attr-defined]
        return json.dumps(doc, sort_keys=True)

    # Each solver budget keys its own analyses: each scan parses every class again.
    report(1_000_001, True)
    report(1_000_002, True)
    assert not taken
    third = report(1_000_003, True)
    assert taken, "the third scan takes the trees the second stored"
    assert third == report(1_000_003, False)


def test_a_parse_made_ahead_goes_through_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan's helper parses ahead the classes around an edited one, unchanged texts: it
    takes their trees from the store and notes its parses there as any parse does."""
    cache = Cache(tmp_path / "cache")
    text = FIXTURE.read_text()
    parsed = _count_parses(monkeypatch)
    source = SourceFile(str(FIXTURE), text)
    block_text = source.parse_text(_class_block(source))
    counts = []
    try:
        for _ in range(3):
            with parse_store.parses_from(cache):
                source_module.parse_ahead(block_text)
            assert source_module._parsed_ahead.pop(block_text)[1] is not None
            counts.append(len(parsed))
        assert 0 < counts[0] < counts[1] == counts[2]  # marked, stored, then taken
        assert parse_store.ParseStore(cache).get(block_text) is not None
    finally:
        source_module._parsed_ahead.clear()
        cache.close()


def test_trees_pickle_to_the_bytes_pickle_gives() -> None:
    """The store's pickling of libcst trees (field names kept per class) writes what
    `pickle.dumps` writes: every file of the fixtures, parsed whole, with CPython's tree."""
    import pickle

    checked = 0
    for path in sorted(Path("fixtures").rglob("*.py")):
        try:
            trees = source_module._parse_text(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, source_module.SourceError):
            continue  # the fixtures of bad input
        if trees[1] is None:
            continue
        assert parse_store._dumps(trees) == pickle.dumps(trees, pickle.HIGHEST_PROTOCOL), path
        assert pickle.loads(parse_store._dumps(trees))[1].deep_equals(trees[1])
        checked += 1
    assert checked > 20
