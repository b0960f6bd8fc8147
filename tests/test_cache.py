"""The on-disk cache: a warm scan gives the cold scan's result, and any change that could alter a
verdict (a file's text, the configuration, the tool's or the solver's version) misses."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck.app.run import scan
from idxcheck.cli import main
from idxcheck.incremental import cache as cache_module
from idxcheck.model.config import Config
from idxcheck.report.json_format import to_dict

FIXTURES = Path("fixtures")


def _json(paths: list[str], cache_dir: Path | None, **overrides: object) -> dict[str, object]:
    config = Config(cache_dir=str(cache_dir) if cache_dir else None, **overrides)  # type: ignore[arg-type]
    doc = to_dict(scan(paths, config))
    doc.pop("stats", None)  # seconds differ run to run
    return doc


def _rows(cache_dir: Path, table: str) -> int:
    with sqlite3.connect(cache_dir / "cache.sqlite3") as conn:
        (count,) = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
    return int(count)


def test_warm_scan_equals_cold_scan_and_uncached_scan(tmp_path: Path) -> None:
    paths = [str(FIXTURES / "bugs"), str(FIXTURES / "correct")]
    uncached = _json(paths, None)
    cold = _json(paths, tmp_path)
    assert _rows(tmp_path, "results") == 1
    assert _rows(tmp_path, "verdicts") > 0
    warm = _json(paths, tmp_path)
    assert uncached == cold == warm
    assert uncached["findings"], "the fixtures hold findings: the comparison is not vacuous"


def test_changed_file_misses_the_result_but_reuses_verdicts(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "bugs", tree)
    cache_dir = tmp_path / "cache"
    before = _json([str(tree)], cache_dir)
    verdicts = _rows(cache_dir, "verdicts")
    # Moving every site down one line changes no obligation: new result, no new verdict.
    target = tree / "eagle_draft_extend_v2.py"
    target.write_text("# moved\n" + target.read_text())
    after = _json([str(tree)], cache_dir)
    assert _rows(cache_dir, "results") == 2
    assert _rows(cache_dir, "verdicts") == verdicts
    moved = [f for f in after["findings"] if f["path"].endswith("eagle_draft_extend_v2.py")]  # type: ignore[index,union-attr]
    original = [f for f in before["findings"] if f["path"].endswith("eagle_draft_extend_v2.py")]  # type: ignore[index,union-attr]
    assert moved and [f["line"] for f in moved] == [f["line"] + 1 for f in original]


def test_fixed_file_is_not_served_a_stale_finding(tmp_path: Path) -> None:
    target = tmp_path / "backend.py"
    target.write_text((FIXTURES / "bugs" / "eagle_draft_extend_v2.py").read_text())
    cache_dir = tmp_path / "cache"
    before = _json([str(target)], cache_dir)["findings"]
    assert before
    fixed = target.read_text().replace(
        "self.speculative_num_steps + 1", "self.speculative_num_draft_tokens"
    )
    assert fixed != target.read_text(), "the fixture's stride moved: update this test"
    target.write_text(fixed)
    after = _json([str(target)], cache_dir)["findings"]
    assert after == _json([str(target)], None)["findings"]
    assert after != before


def test_configuration_and_versions_are_part_of_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [str(FIXTURES / "bugs" / "eagle_draft_extend_v2.py")]
    _json(paths, tmp_path)
    _json(paths, tmp_path, domain=("topk == 1",))
    assert _rows(tmp_path, "results") == 2
    monkeypatch.setattr(cache_module, "__version__", "999.0")
    _json(paths, tmp_path)
    assert _rows(tmp_path, "results") == 3
    monkeypatch.setattr(cache_module, "_FINGERPRINT", ["edited-checker"])
    _json(paths, tmp_path)
    assert _rows(tmp_path, "results") == 4


def test_corrupt_cache_is_only_slower(tmp_path: Path) -> None:
    paths = [str(FIXTURES / "bugs")]
    (tmp_path / "cache.sqlite3").write_bytes(b"this is not a database" * 100)
    assert _json(paths, tmp_path) == _json(paths, None)


def test_cli_cache_commands_and_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IDXCHECK_CACHE_DIR", str(tmp_path))
    runner = CliRunner()
    assert runner.invoke(main, ["cache", "dir"]).output.strip() == str(tmp_path)
    runner.invoke(main, ["scan", "--no-cache", "fixtures/bugs"])
    assert not (tmp_path / "cache.sqlite3").exists()
    first = runner.invoke(main, ["scan", "--format", "json", "fixtures/bugs"])
    assert (tmp_path / "cache.sqlite3").exists()
    second = runner.invoke(main, ["scan", "--format", "json", "fixtures/bugs"])
    assert first.exit_code == second.exit_code == 1
    strip = lambda text: {k: v for k, v in json.loads(text).items() if k != "stats"}  # noqa: E731
    assert strip(first.output) == strip(second.output)
    cleared = runner.invoke(main, ["cache", "clear"])
    assert cleared.exit_code == 0 and "removed" in cleared.output
    assert not (tmp_path / "cache.sqlite3").exists()


def _spy_lookups(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, bool]]:
    """(file of the obligation being decided, verdict key, hit) for every disk lookup."""
    from idxcheck.check import checker as engine
    from idxcheck.check.obligations import Obligation

    seen: list[tuple[str, str, bool]] = []
    current: list[str] = []
    get_verdict = cache_module.Cache.get_verdict
    decide = engine.Checker.decide

    def spy_get(self: cache_module.Cache, key: str) -> dict[str, object] | None:
        value = get_verdict(self, key)
        seen.append((current[-1] if current else "", key, value is not None))
        return value

    def spy_decide(
        self: engine.Checker, obligation: Obligation, *, kernel_aware: bool = True
    ) -> engine.Outcome:
        current.append(Path(obligation.binding.loc.span.path).name)
        try:
            return decide(self, obligation, kernel_aware=kernel_aware)
        finally:
            current.pop()

    monkeypatch.setattr(cache_module.Cache, "get_verdict", spy_get)
    monkeypatch.setattr(engine.Checker, "decide", spy_decide)
    return seen


def test_changed_expression_misses_only_verdicts_that_use_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "bugs", tree)
    cache_dir = tmp_path / "cache"
    seen = _spy_lookups(monkeypatch)
    _json([str(tree)], cache_dir)
    assert seen and not any(hit for _, _, hit in seen), "a cold cache answers nothing"
    seen.clear()
    target = tree / "eagle_draft_extend_v2.py"
    # Only the grid scalar changes; the stride's obligations keep their formulas.
    edited = target.read_text().replace(
        "max_extend_len=self.speculative_num_steps + 1",
        "max_extend_len=self.speculative_num_steps + 3",
    )
    assert edited != target.read_text(), "the fixture's grid moved: update this test"
    target.write_text(edited)
    # The verdicts themselves: without the stored analyses of single files
    # (`tests/test_parts.py`), every file's obligations are looked up again.
    with sqlite3.connect(cache_dir / "cache.sqlite3") as conn:
        conn.execute("DELETE FROM parts")
    _json([str(tree)], cache_dir)
    misses = {(name, key) for name, key, hit in seen if not hit}
    hits_elsewhere = {name for name, _, hit in seen if hit and name != target.name}
    assert misses, "the edited grid must be decided again"
    assert {name for name, _ in misses} == {target.name}
    assert any(hit for name, _, hit in seen if name == target.name), (
        "obligations of the edited file that do not use the grid keep their verdicts"
    )
    assert len(hits_elsewhere) >= 5, "the other files' verdicts are reused"


def test_new_tool_version_misses_every_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [str(FIXTURES / "bugs")]
    seen = _spy_lookups(monkeypatch)
    _json(paths, tmp_path)
    looked_up = len(seen)
    seen.clear()
    monkeypatch.setattr(cache_module, "_FINGERPRINT", ["edited-checker"])
    _json(paths, tmp_path)
    assert len(seen) == looked_up and not any(hit for _, _, hit in seen)
    seen.clear()
    monkeypatch.setattr(cache_module, "__version__", "999.0")
    _json(paths, tmp_path)
    assert len(seen) == looked_up and not any(hit for _, _, hit in seen)


def test_reading_marks_use_at_most_once_an_hour(tmp_path: Path) -> None:
    cache = cache_module.Cache(tmp_path)
    cache.put_blob("k", b"x" * 1000)
    cache.close()

    def used() -> float:
        with sqlite3.connect(tmp_path / "cache.sqlite3") as conn:
            return float(conn.execute("SELECT used FROM blobs WHERE key = 'k'").fetchone()[0])

    stored = used()
    assert cache.get_blob("k") == b"x" * 1000
    assert used() == stored, "a fresh mark is not rewritten (the row would be rewritten whole)"
    with sqlite3.connect(tmp_path / "cache.sqlite3") as conn:
        conn.execute("UPDATE blobs SET used = 0 WHERE key = 'k'")
    assert cache.get_blob("k") == b"x" * 1000
    assert used() > 0, "an old mark is renewed, so the entry is not the first pruned"
    cache.close()


def test_pruning_finds_the_least_recently_used_by_an_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = cache_module.Cache(tmp_path / "cache")
    monkeypatch.setattr(cache_module, "MAX_PARTS", 2)
    for n in range(4):
        store.put_part(f"k{n}", b"x" * 10_000)
    store.get_part("k0")  # marked as used now only after an hour: k0 stays the oldest
    store.prune()
    conn = sqlite3.connect(store.path)
    assert sorted(k for (k,) in conn.execute("SELECT key FROM parts")) == ["k2", "k3"]
    plan = " ".join(
        str(row)
        for row in conn.execute("EXPLAIN QUERY PLAN SELECT key FROM parts ORDER BY used LIMIT 1")
    )
    assert "parts_used" in plan, plan
    conn.close()
    store.close()


def test_syntax_trees_are_kept_within_a_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = cache_module.Cache(tmp_path / "cache")
    monkeypatch.setattr(cache_module, "MAX_PARSE_BYTES", 25_000)
    for n, key in enumerate(["mark", "tree0", "tree1", "tree2", "tree3"]):
        monkeypatch.setattr(cache_module.time, "time", lambda n=n: 1e9 + n)
        store.put_parses([(key, b"" if key == "mark" else b"x" * 10_000)])
    store.prune()
    conn = sqlite3.connect(store.path)
    kept = sorted(k for (k,) in conn.execute("SELECT key FROM trees"))
    plan = " ".join(
        str(row) for row in conn.execute("EXPLAIN QUERY PLAN SELECT TOTAL(size) FROM trees")
    )
    conn.close()
    store.close()
    # The two most recently used trees fit; everything older goes, an empty mark too.
    assert kept == ["tree2", "tree3"]
    assert "COVERING INDEX trees_used" in plan, plan  # summed without reading the trees
