"""The analysis helper the command's entry forks before it parses the command line
(`idxcheck.parallel.early`): forked only for a scan that may use one, and the report of a scan
that uses it is the report without the cache. How the scan takes it, and stops it where it does
not, is checked with the other helpers in `test_workers.py`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from idxcheck.parallel import early

FIXTURES = Path("fixtures")


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["scan", "python/sglang"], True),
        (["scan", "--changed-only", "a.py"], True),
        (["scan", "-j", "2", "tree"], True),
        (["scan", "--no-cache", "tree"], False),
        (["scan", "-j", "1", "tree"], False),
        (["scan", "--jobs", "1", "tree"], False),
        (["scan", "-j1", "tree"], False),
        (["scan", "--jobs=1", "tree"], False),
        (["confirm", "tree"], False),
        (["rules"], False),
        ([], False),
    ],
)
def test_a_helper_is_forked_only_for_a_scan_that_may_use_it(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], wanted: bool
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert early.wanted(argv) is wanted
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert early.wanted(argv) is False  # one CPU: nothing to load beside the scan


def _command(*args: str, cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, IDXCHECK_CACHE_DIR=str(cache))
    return subprocess.run(
        [sys.executable, "-m", "idxcheck", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(done.stdout)
    doc["stats"].pop("seconds")  # differs from run to run
    return doc


def test_a_pre_commit_run_through_the_entry_reports_as_a_scan_without_the_cache(
    tmp_path: Path,
) -> None:
    """The command as a hook runs it: the first run fills the cache, an edit of the focused
    file is analysed by the entry's helper, and each report is the one `--no-cache` gives."""
    project = tmp_path / "project"
    # Without the fixture that holds a graph runner: reading a runner for the tree facts loads
    # libcst in the scan's process, which then analyses itself and stops the helper.
    skip = shutil.ignore_patterns("worker_dependent.py")
    shutil.copytree(FIXTURES / "bugs", project / "bugs", ignore=skip)
    (project / "pyproject.toml").write_text("[tool.idxcheck]\n")
    focused = Path("bugs") / "eagle_draft_extend_v2.py"
    cache = tmp_path / "cache"
    hook = ("scan", "--changed-only", "--format", "json", str(focused))
    first = _command(*hook, cwd=project, cache=cache)
    assert first.returncode == 1, first.stderr
    text = (project / focused).read_text()
    (project / focused).write_text(text + "\n\nX = 1\n")  # code, not a comment
    cached = _command(*hook, cwd=project, cache=cache)
    fresh = _command(*hook, "--no-cache", cwd=project, cache=cache)
    assert cached.returncode == fresh.returncode == 1, cached.stderr + fresh.stderr
    assert _report(cached) == _report(fresh)
    assert any(f["code"] == "IDX001" for f in _report(cached)["findings"]), "not vacuous"
