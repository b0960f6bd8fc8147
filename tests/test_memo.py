"""The answer memo (`idxcheck.memo`): a plain scan run again over an unchanged tree is answered
before the command line is parsed, with the same report (its time apart) and exit code; any
change of what the scan looked at, or of how it was asked, runs the scan.

Each test runs the command as a user does (`python -m idxcheck`), in a copy of a fixture whose
stamps have settled. Whether a run was answered is told from the modules it imported
(`-X importtime`): an answered run never imports `idxcheck.cli`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from idxcheck import memo

ROOT = Path(__file__).resolve().parent.parent
BUGGY = ROOT / "fixtures" / "bugs" / "grid_stride.py"
CLEAN = ROOT / "fixtures" / "correct"


@pytest.fixture(scope="module")
def settled_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tree with a finding, whose files and folders are older than the memo's settling time
    (a change time cannot be set back: the fixture waits for it once)."""
    base = tmp_path_factory.mktemp("memo-tree")
    (base / "pkg").mkdir()
    shutil.copy(BUGGY, base / "pkg" / "backend.py")
    (base / "pkg" / "notes.txt").write_text("not Python\n")
    time.sleep(memo.SETTLE_SECONDS + 0.2)
    return base


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, bool]:
    """Exit code, standard output, and whether the run was answered from the memo."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "idxcheck", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env or dict(os.environ),
        timeout=600,
    )
    answered = "idxcheck.cli" not in proc.stderr
    return proc.returncode, proc.stdout, answered


def without_time(text: str) -> str:
    text = re.sub(r"in \d+\.\d\ds\n", "in <time>\n", text)
    return re.sub(r'"seconds": [0-9.e-]+', '"seconds": <time>', text)


def test_an_unchanged_tree_is_answered_with_the_same_report_and_exit_code(
    settled_tree: Path,
) -> None:
    first = run(settled_tree, "scan", "pkg")
    second = run(settled_tree, "scan", "pkg")
    assert first[0] == 1 and "IDX" in first[1]
    assert not first[2] and second[2]
    assert second[0] == first[0]
    assert without_time(second[1]) == without_time(first[1])
    assert second[1] != without_time(second[1])  # the time is there, written by the answer


def test_json_is_answered_with_its_time_filled_in(settled_tree: Path) -> None:
    first = run(settled_tree, "scan", "pkg", "--format", "json")
    second = run(settled_tree, "scan", "pkg", "--format", "json")
    assert second[2]
    a, b = json.loads(first[1]), json.loads(second[1])
    assert isinstance(b["stats"]["seconds"], float)
    assert b["stats"]["seconds"] != memo.SECONDS_SENTINEL
    a["stats"].pop("seconds")
    b["stats"].pop("seconds")
    assert a == b


def test_an_edited_file_is_scanned_again(settled_tree: Path, tmp_path: Path) -> None:
    shutil.copytree(settled_tree / "pkg", tmp_path / "pkg")
    time.sleep(memo.SETTLE_SECONDS + 0.2)
    assert not run(tmp_path, "scan", "pkg")[2]
    assert run(tmp_path, "scan", "pkg")[2]
    backend = tmp_path / "pkg" / "backend.py"
    backend.write_text(backend.read_text() + "\n# an edit\n")
    code, _, answered = run(tmp_path, "scan", "pkg")
    assert not answered and code == 1


def test_a_file_added_or_a_configuration_made_is_scanned_again(
    settled_tree: Path, tmp_path: Path
) -> None:
    shutil.copytree(settled_tree / "pkg", tmp_path / "pkg")
    time.sleep(memo.SETTLE_SECONDS + 0.2)
    run(tmp_path, "scan", "pkg")
    assert run(tmp_path, "scan", "pkg")[2]
    (tmp_path / "pkg" / "helper.py").write_text("X = 1\n")
    assert not run(tmp_path, "scan", "pkg")[2]
    # A configuration file where the scan looks for one (it ignores the rule of the finding).
    time.sleep(memo.SETTLE_SECONDS + 0.2)
    code, _, _ = run(tmp_path, "scan", "pkg")
    assert code == 1 and run(tmp_path, "scan", "pkg")[2]
    (tmp_path / "pyproject.toml").write_text('[tool.idxcheck]\nignore = ["IDX006"]\n')
    code, out, answered = run(tmp_path, "scan", "pkg")
    assert not answered and code == 0, out


def test_another_command_line_or_environment_is_not_answered(settled_tree: Path) -> None:
    run(settled_tree, "scan", "pkg")
    assert run(settled_tree, "scan", "pkg")[2]
    assert not run(settled_tree, "scan", "pkg", "--quiet")[2]
    env = dict(os.environ, NO_COLOR="1")
    assert not run(settled_tree, "scan", "pkg", env=env)[2]
    assert not run(settled_tree, "scan", "./pkg")[2]


@pytest.mark.parametrize(
    "extra",
    [
        ("--no-cache",),
        ("--format", "json=out.json"),
        ("--format", "sarif"),
        ("--write-baseline", "base.json"),
    ],
)
def test_runs_with_another_effect_than_their_report_store_nothing(
    settled_tree: Path, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    args = [a.replace("out.json", str(tmp_path / "out.json")) for a in extra]
    args = [a.replace("base.json", str(tmp_path / "base.json")) for a in args]
    run(settled_tree, "scan", "pkg", *args)
    assert not run(settled_tree, "scan", "pkg", *args)[2]


def test_a_fresh_tree_stores_nothing_until_its_stamps_settle(tmp_path: Path) -> None:
    shutil.copytree(CLEAN, tmp_path / "pkg")
    run(tmp_path, "scan", "pkg")
    assert not run(tmp_path, "scan", "pkg")[2]


def test_a_damaged_answer_is_no_answer(settled_tree: Path) -> None:
    run(settled_tree, "scan", "pkg")
    assert run(settled_tree, "scan", "pkg")[2]
    folder = Path(os.environ["IDXCHECK_CACHE_DIR"]) / "answers"
    for stored in folder.glob("*.answer"):
        stored.write_bytes(stored.read_bytes()[:100])
    code, out, answered = run(settled_tree, "scan", "pkg")
    assert not answered and code == 1 and "IDX" in out


def test_cache_clear_deletes_the_answers(settled_tree: Path) -> None:
    run(settled_tree, "scan", "pkg")
    assert run(settled_tree, "scan", "pkg")[2]
    subprocess.run([sys.executable, "-m", "idxcheck", "cache", "clear"], check=True)
    assert not run(settled_tree, "scan", "pkg")[2]


def test_fill_writes_the_time_as_each_format_does() -> None:
    parts = memo.split(f"in {memo.SECONDS_SENTINEL:.2f}s")
    assert memo.fill(parts, "text", 0.1234) == "in 0.12s"
    parts = memo.split(json.dumps({"seconds": memo.SECONDS_SENTINEL}))
    assert json.loads(memo.fill(parts, "json", 0.1234)) == {"seconds": 0.123}
    assert memo.fill(["no time"], "none", 1.0) == "no time"


def test_the_answer_imports_nothing_of_the_command_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import idxcheck.entry, idxcheck.memo"],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert {"idxcheck.entry", "idxcheck.memo"} <= loaded
    assert not loaded & {"typing", "click", "idxcheck.cli", "json", "pickle", "sqlite3"}
