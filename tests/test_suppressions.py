"""`# idxcheck: ignore[CODE] reason`, bare and unused comments, as a user writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck.cli import main
from idxcheck.source.comments import read_comments

BUG = Path("fixtures/bugs/eagle_draft_extend_v2.py").read_text()
STRIDE = "        per_req = self.speculative_num_steps + 1  # expect: IDX001"
GRID = "                max_extend_len=self.speculative_num_steps + 1,  # expect: IDX002"
GRID_STATEMENT = "            return ExtendMetadata("
HEAD = "from dataclasses import dataclass"
# The line a comment added after HEAD has (the findings below it move down by one).
AFTER_HEAD = BUG.splitlines().index(HEAD) + 2


def scan_json(path: Path, *extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = CliRunner().invoke(main, ["scan", str(path), "--format", "json", *extra])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def variant(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    text = BUG
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "backend.py"
    path.write_text(text)
    return path


def codes(doc: dict) -> list[tuple[str, int]]:  # type: ignore[type-arg]
    return [(f["code"], f["line"]) for f in doc["findings"]]


def test_on_the_flagged_line_and_at_the_statement_start(tmp_path: Path) -> None:
    _, before = scan_json(variant(tmp_path))
    assert codes(before) == [("IDX001", 29), ("IDX002", 39)]
    path = variant(
        tmp_path,
        (STRIDE, STRIDE + "  # idxcheck: ignore[IDX001] topk is 1 here"),
        (GRID_STATEMENT, GRID_STATEMENT + "  # idxcheck: ignore[IDX002, IDX001] same"),
    )
    code, doc = scan_json(path)
    # IDX001 in the second comment suppresses nothing on that statement: reported as unused.
    assert codes(doc) == [("IDX901", 38)]
    assert "no IDX001 finding here" in doc["findings"][0]["message"]
    # An unused comment hides no bug: a warning that fails the run only under --strict.
    assert doc["findings"][0]["severity"] == "warning"
    assert code == 0
    assert scan_json(path, "--strict")[0] == 1
    assert [(s["code"], s["comment_line"], s["reason"]) for s in doc["suppressed"]] == [
        ("IDX001", 29, "topk is 1 here"),
        ("IDX002", 38, "same"),
    ]


def test_a_clean_suppression_is_exit_0(tmp_path: Path) -> None:
    path = variant(
        tmp_path,
        (STRIDE, STRIDE + "  # idxcheck: ignore[IDX001] reviewed"),
        (GRID, GRID + "  # idxcheck: ignore[IDX002] reviewed"),
    )
    code, doc = scan_json(path)
    assert (code, doc["findings"]) == (0, [])


def test_a_bare_comment_suppresses_nothing_and_is_reported(tmp_path: Path) -> None:
    code, doc = scan_json(variant(tmp_path, (STRIDE, STRIDE + "  # idxcheck: ignore")))
    assert code == 1
    assert codes(doc) == [("IDX001", 29), ("IDX900", 29), ("IDX002", 39)]
    _, doc = scan_json(variant(tmp_path, (STRIDE, STRIDE + "  # idxcheck: ignore[]")))
    assert ("IDX900", 29) in codes(doc)


def test_unknown_codes_and_disabled_rules(tmp_path: Path) -> None:
    path = variant(tmp_path, (STRIDE, STRIDE + "  # idxcheck: ignore[IDX001,IDX077] typo"))
    _, doc = scan_json(path)
    assert codes(doc) == [("IDX901", 29), ("IDX002", 39)]
    assert "IDX077 is not an idxcheck rule code" in doc["findings"][0]["message"]
    # IDX001 is off: its comment cannot match, and is not called unused.
    path = variant(tmp_path, (GRID, GRID + "  # idxcheck: ignore[IDX001] only the stride"))
    _, doc = scan_json(path, "--select", "IDX002", "--select", "IDX901")
    assert codes(doc) == [("IDX002", 39)]
    _, doc = scan_json(path, "--ignore", "IDX901")
    assert codes(doc) == [("IDX001", 29), ("IDX002", 39)]


def test_file_level_comments_suppress_their_codes_in_the_whole_file(tmp_path: Path) -> None:
    head = HEAD
    path = variant(tmp_path, (head, head + "\n# idxcheck: ignore-file[IDX002] grid reviewed"))
    code, doc = scan_json(path)
    # The comment adds a line: the stride finding moves to 30, the grid one is suppressed.
    assert (code, codes(doc)) == (1, [("IDX001", 30)])
    assert [(s["code"], s["comment_line"], s["reason"]) for s in doc["suppressed"]] == [
        ("IDX002", AFTER_HEAD, "grid reviewed")
    ]
    # Both codes, and a bare comment that opts the whole file out: clean.
    for comment in ("# idxcheck: ignore-file[IDX001, IDX002]", "# IDXCHECK: ignore-file"):
        path = variant(tmp_path, (head, head + "\n" + comment))
        code, doc = scan_json(path)
        assert (code, codes(doc), len(doc["suppressed"])) == (0, [], 2), comment


def test_file_level_comments_that_suppress_nothing_are_unused(tmp_path: Path) -> None:
    head = HEAD
    fixed = tmp_path / "fixed"
    fixed.mkdir()
    clean = Path("fixtures/correct/eagle_full_fix.py").read_text()
    assert head in clean
    for comment, message in (
        ("# idxcheck: ignore-file[IDX002]", "no IDX002 finding in this file"),
        ("# idxcheck: ignore-file", "no finding in this file"),
    ):
        path = fixed / "backend.py"
        path.write_text(clean.replace(head, head + "\n" + comment))
        code, doc = scan_json(path)
        assert codes(doc) == [("IDX901", clean.splitlines().index(head) + 2)], comment
        assert message in doc["findings"][0]["message"]
        assert code == 0


def test_file_level_comments_silence_the_line_comments_findings(tmp_path: Path) -> None:
    head = HEAD
    path = variant(
        tmp_path,
        (head, head + "\n# idxcheck: ignore-file[IDX900, IDX002]"),
        (STRIDE, STRIDE + "  # idxcheck: ignore"),
    )
    code, doc = scan_json(path)
    assert (code, codes(doc)) == (1, [("IDX001", 30)])
    assert sorted(s["code"] for s in doc["suppressed"]) == ["IDX002", "IDX900"]


def test_a_file_level_comment_is_not_a_line_comment() -> None:
    comments = read_comments("f.py", "x = 1  # idxcheck: ignore-file[IDX001] why\n")
    (found,) = comments.suppressions
    assert (found.file_level, found.codes, found.reason) == (True, ("IDX001",), "why")
    assert found.matches("IDX001") and not found.matches("IDX002")
    (bare,) = read_comments("g.py", "# idxcheck: ignore-file\n").suppressions
    assert bare.file_level and bare.matches("IDX002")
    (line,) = read_comments("h.py", "y = 2  # idxcheck: ignore\n").suppressions
    assert not line.file_level and not line.matches("IDX001")
    assert read_comments("i.py", "# idxcheck: ignore-files\n").suppressions == ()


def test_comments_are_tokens_not_text() -> None:
    text = 'x = "# idxcheck: ignore[IDX001]"\ny = 1  # idxcheck: ignore[IDX002] why\n'
    comments = read_comments("f.py", text)
    assert [(s.line, s.codes, s.reason) for s in comments.suppressions] == [(2, ("IDX002",), "why")]
    assert read_comments("g.py", "z = 1\n").suppressions == ()


def test_suppressed_findings_are_in_sarif_as_in_source_suppressions(tmp_path: Path) -> None:
    path = variant(tmp_path, (STRIDE, STRIDE + "  # idxcheck: ignore[IDX001] reviewed"))
    target = tmp_path / "out.sarif"
    CliRunner().invoke(main, ["scan", str(path), "--format", f"sarif={target}"])
    results = json.loads(target.read_text())["runs"][0]["results"]
    suppressed = [r for r in results if r.get("suppressions")]
    assert [r["ruleId"] for r in suppressed] == ["IDX001"]
    assert suppressed[0]["suppressions"][0] == {
        "kind": "inSource",
        "justification": "reviewed",
        "location": suppressed[0]["suppressions"][0]["location"],
    }
    assert [r["ruleId"] for r in results if not r.get("suppressions")] == ["IDX002"]


def test_meta_rules_are_documented() -> None:
    for code in ("IDX900", "IDX901"):
        result = CliRunner().invoke(main, ["rule", code])
        assert result.exit_code == 0
        assert "**Fix.**" in result.output


def test_comments_in_files_without_sites_are_read_from_the_scan_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file that cannot hold a site (rejected by the prefilter, or undecodable) is still read
    # for suppression comments, from the bytes the scan already read: never a second time.
    import idxcheck.app.scanning

    def read_again(path: str) -> None:
        raise AssertionError(f"{path} read a second time")

    monkeypatch.setattr(idxcheck.app.scanning, "_read_if_marked", read_again)
    (tmp_path / "plain.py").write_text("x = 1  # IDXCHECK: ignore\n")
    (tmp_path / "latin1.py").write_bytes(b"y = '\xe9'  # idxcheck: ignore\n")
    (tmp_path / "quiet.py").write_text("z = 3\n")
    _, doc = scan_json(tmp_path)
    assert sorted(codes(doc)) == [("IDX900", 1), ("IDX900", 1)]
    assert sorted(Path(f["path"]).name for f in doc["findings"]) == ["latin1.py", "plain.py"]


@pytest.mark.parametrize(
    "text",
    [
        "x = 1\n",
        "x = 1  # idxcheck: ignore[IDX001]\n",
        "x = 1  # IdxCheck: ignore\n",
        "s = 'é'  # IDXCHECK: ignore\n",
        "s = 'é'  # idxchec\u212a: ignore\n",  # the Kelvin sign lowers to `k`
        "s = '\u212a'  # idxcheck ignore\n",
        "s = '\u0130dxcheck:'\n",  # `İ` lowers to `i` and a combining dot
        "s = 'İ'  # idxcheck:\n",
    ],
)
def test_the_marker_read_from_the_bytes_is_the_marker_in_the_lowered_text(text: str) -> None:
    from idxcheck.source.comments import MARKER
    from idxcheck.source.prefilter import holds_marker

    assert holds_marker(text.encode(), text) == (MARKER in text.lower())


def test_a_marker_with_a_kelvin_sign_still_suppresses(tmp_path: Path) -> None:
    # The bytes hold no ASCII marker; the comment is one (`re.IGNORECASE` reads `K` as `k`).
    path = variant(tmp_path, (STRIDE, STRIDE + "  # idxchec\u212a: ignore[IDX001] é"))
    _, doc = scan_json(path)
    assert codes(doc) == [("IDX002", 39)]
    assert [s["code"] for s in doc["suppressed"]] == ["IDX001"]
