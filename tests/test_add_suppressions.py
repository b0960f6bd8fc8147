"""`idxcheck scan --add-suppressions`: a coded comment for each finding reported, after which the
same scan is clean; the file's bytes otherwise unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from idxcheck.cli import main

from .conftest import ROOT

BUG = (ROOT / "fixtures/bugs/eagle_draft_extend_v2.py").read_text()
STRIDE = "        per_req = self.speculative_num_steps + 1  # expect: IDX001"
GRID = "                max_extend_len=self.speculative_num_steps + 1,  # expect: IDX002"


def scan(*args: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    result = CliRunner().invoke(
        main, ["scan", "--isolated", "--no-cache", "--format", "json", *args]
    )
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout), result.stderr


def add(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        main, ["scan", "--isolated", "--no-cache", "--add-suppressions", *args]
    )
    return result.exit_code, result.stderr


def test_the_comments_make_the_same_scan_clean(tmp_path: Path) -> None:
    path = tmp_path / "backend.py"
    path.write_text(BUG.replace(STRIDE, STRIDE.split("  #")[0]).replace(GRID, GRID.split("  #")[0]))
    before = path.read_text()
    code, _, _ = scan(str(path))
    assert code == 1
    code, err = add(str(path))
    assert code == 0
    assert "suppressed 2 findings with comments in 1 file" in err
    after = path.read_text()
    changed = [
        (old, new)
        for old, new in zip(before.splitlines(), after.splitlines(), strict=True)
        if old != new
    ]
    assert changed == [
        (STRIDE.split("  #")[0], STRIDE.split("  #")[0] + "  # idxcheck: ignore[IDX001]"),
        (GRID.split("  #")[0], GRID.split("  #")[0] + "  # idxcheck: ignore[IDX002]"),
    ]
    code, doc, _ = scan(str(path))
    assert (code, doc["findings"], len(doc["suppressed"])) == (0, [], 2)
    # Nothing left to suppress: nothing written.
    assert add(str(path)) == (0, "idxcheck: suppressed 0 findings with comments in 0 files\n")
    assert add(str(path), "--quiet") == (0, "")
    assert path.read_text() == after


def test_codes_join_a_comment_already_on_the_line_and_line_ends_are_kept(tmp_path: Path) -> None:
    # The stride line has a comment suppressing another code; the file has CRLF line ends.
    text = BUG.replace(STRIDE, STRIDE.split("  #")[0] + "  # idxcheck: ignore[IDX003] why")
    path = tmp_path / "backend.py"
    path.write_bytes(text.replace("\n", "\r\n").encode())
    assert add(str(path))[0] == 0
    data = path.read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert (STRIDE.split("  #")[0] + "  # idxcheck: ignore[IDX003, IDX001] why").encode() in data
    code, doc, _ = scan(str(path))
    # The IDX003 code suppresses nothing: reported as unused (a warning), the rest is clean.
    assert [(f["code"], f["severity"]) for f in doc["findings"]] == [("IDX901", "warning")]
    assert code == 0


def test_a_line_continued_by_a_backslash_gets_the_comment_at_its_statement(
    tmp_path: Path,
) -> None:
    # The grid scalar's line ends with a backslash, where no comment can go: it goes on the
    # statement's first line, which matches the finding too.
    wrapped = GRID.split(" + 1,")[0] + " \\\n                + 1,"
    text = BUG.replace(GRID, wrapped).replace(STRIDE, STRIDE.split("  #")[0])
    path = tmp_path / "backend.py"
    path.write_text(text)
    code, before, _ = scan(str(path))
    assert "IDX002" in {f["code"] for f in before["findings"]}
    assert add(str(path))[0] == 0
    lines = path.read_text().splitlines()
    grid_line = next(f["line"] for f in before["findings"] if f["code"] == "IDX002")
    assert lines[grid_line - 1] == wrapped.splitlines()[0]  # untouched
    assert any(line.endswith("(  # idxcheck: ignore[IDX002]") for line in lines)
    code, doc, _ = scan(str(path))
    assert (code, doc["findings"]) == (0, [])


def test_a_file_that_cannot_be_rewritten_is_left_alone_and_said(tmp_path: Path) -> None:
    path = tmp_path / "backend.py"
    text = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + BUG
    path.write_bytes(text.encode("latin-1"))
    before = path.read_bytes()
    code, err = add(str(path))
    assert code == 1
    assert "IDX001 not suppressed: the file is not UTF-8" in err
    assert path.read_bytes() == before
