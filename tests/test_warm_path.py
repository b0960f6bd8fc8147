"""The warm path (`idxcheck.incremental.stamps`): an unchanged tree is answered from the `stat` stamps of its
files without loading the extractor, and any change of a file's bytes, size, times or the
configuration is seen."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from idxcheck.app.api import discover_files, scan
from idxcheck.incremental import stamps
from idxcheck.model.config import Config
from idxcheck.profiles.schema import load_profile
from idxcheck.report.json_format import to_dict

FIXTURES = Path("fixtures")


def _doc(tree: Path, cache_dir: Path | None, **overrides: object) -> dict[str, object]:
    config = Config(cache_dir=str(cache_dir) if cache_dir else None, **overrides)  # type: ignore[arg-type]
    outcome = scan([str(tree)], config)
    doc = to_dict(outcome.result)
    doc.pop("stats")
    doc["suppressed"] = [s.finding.fingerprint for s in outcome.suppressed]
    doc["outcomes"] = [
        (n.code, n.span.line, n.mode, n.verdict.name) for n in outcome.result.outcomes
    ]
    return doc


def _results(cache_dir: Path) -> int:
    with sqlite3.connect(cache_dir / "cache.sqlite3") as conn:
        (count,) = conn.execute("SELECT COUNT(*) FROM results").fetchone()
    return int(count)


def _stamped(tree: Path, cache_dir: Path) -> bool:
    """Whether the outcome of scanning `tree` as it is now is stored by stamps."""
    config = Config(cache_dir=str(cache_dir))
    candidates, errors = discover_files([str(tree)], config)
    return stamps.load(config, stamps.stamp_key(candidates, errors, config)) is not None


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "bugs", root)
    (root / "quiet.py").write_text("x = 1  # idxcheck: ignore[IDX001] nothing here\n")
    return root


@pytest.fixture
def settle_now(monkeypatch: pytest.MonkeyPatch) -> None:
    # Files written by the test are as old as the test; the settling delay would keep their
    # stamps out of the cache for two seconds.
    monkeypatch.setattr(stamps, "SETTLE_SECONDS", 0.0)


def test_stamps_answer_with_the_outcome_of_the_full_scan(
    tree: Path, tmp_path: Path, settle_now: None
) -> None:
    cache_dir = tmp_path / "cache"
    uncached = _doc(tree, None)
    cold = _doc(tree, cache_dir)
    assert _results(cache_dir) == 1  # by contents (engine)
    assert _stamped(tree, cache_dir)  # and the whole outcome by stamps
    warm = _doc(tree, cache_dir)
    assert uncached == cold == warm
    assert uncached["findings"] and uncached["outcomes"], "not a vacuous comparison"


def test_a_fresh_file_is_not_trusted_by_its_stamp(tree: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    _doc(tree, cache_dir)
    # Written less than SETTLE_SECONDS ago: a second write in the same clock tick would keep
    # the stamp, so only the result keyed by contents is stored.
    assert _results(cache_dir) == 1
    assert not _stamped(tree, cache_dir)


def test_same_size_rewrite_with_old_mtime_is_seen(
    tree: Path, tmp_path: Path, settle_now: None
) -> None:
    cache_dir = tmp_path / "cache"
    target = tree / "eagle_draft_extend_v2.py"
    before = _doc(tree, cache_dir)
    info = target.stat()
    text = target.read_text()
    edited = text.replace("self.speculative_num_steps + 1", "self.speculative_num_steps + 2")
    assert edited != text and len(edited) == len(text), "the fixture's stride moved"
    target.write_text(edited)
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))  # only the change time moves
    after = _doc(tree, cache_dir)
    assert after == _doc(tree, None)
    assert after != before


def test_configuration_is_part_of_the_stamp_key(
    tree: Path, tmp_path: Path, settle_now: None
) -> None:
    cache_dir = tmp_path / "cache"
    everything = _doc(tree, cache_dir)
    only_grids = _doc(tree, cache_dir, select=frozenset({"IDX002"}))
    assert only_grids == _doc(tree, None, select=frozenset({"IDX002"}))
    assert only_grids != everything
    assert _doc(tree, cache_dir) == everything


def test_a_new_or_removed_file_is_seen(tree: Path, tmp_path: Path, settle_now: None) -> None:
    cache_dir = tmp_path / "cache"
    _doc(tree, cache_dir)
    shutil.copy(tree / "eagle_draft_extend_v2.py", tree / "copy_of_backend.py")
    grown = _doc(tree, cache_dir)
    assert grown == _doc(tree, None)
    (tree / "copy_of_backend.py").unlink()
    assert _doc(tree, cache_dir) == _doc(tree, None)


def test_warm_cli_run_loads_neither_libcst_nor_z3_nor_the_rules(
    tree: Path, tmp_path: Path, settle_now: None
) -> None:
    env = dict(os.environ, IDXCHECK_CACHE_DIR=str(tmp_path / "cache"))
    first = subprocess.run(
        [sys.executable, "-m", "idxcheck", "scan", "--format", "json", str(tree)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert first.returncode == 1, first.stderr
    # The first run was too close to the files' writing to store their stamps; this one, in
    # this process with the settling delay at zero, stores them in the same cache.
    # (With the CLI's default profile choice, `auto`: the stamps are keyed by the configuration.)
    _doc(tree, tmp_path / "cache", profile="auto")
    probe = (
        "import sys\n"
        "from idxcheck.cli import main\n"
        "try:\n"
        f"    main(['scan', '--format', 'json', {str(tree)!r}])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "heavy = ('libcst', 'z3', 'idxcheck.check.pipeline', 'idxcheck.rules.registry',\n"
        "         'idxcheck.interp.values', 'tempfile')\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "print(code, loaded, file=sys.stderr)\n"
    )
    second = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False
    )
    assert second.stderr.strip() == "1 []", second.stderr
    strip = lambda text: {k: v for k, v in json.loads(text).items() if k != "stats"}  # noqa: E731
    assert strip(first.stdout) == strip(second.stdout)


def test_report_mode_order_comes_with_the_stored_result(
    tree: Path, tmp_path: Path, settle_now: None
) -> None:
    cache_dir = tmp_path / "cache"
    _doc(tree, cache_dir)
    warm = scan([str(tree)], Config(cache_dir=str(cache_dir)))
    assert warm.result.mode_order == load_profile("sglang").mode_members
