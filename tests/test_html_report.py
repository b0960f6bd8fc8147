"""The HTML report as a browser sees it: headless Chromium loads the page (`--dump-dom`), and the
backend x forward-mode matrix in the resulting DOM matches the scan's verdicts."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck.app.api import scan
from idxcheck.cli import main
from idxcheck.model.verdicts import Verdict
from idxcheck.rules.catalog import catalogue

from .browser import BrowserMissing, dump_dom, screenshot

PATHS = ["fixtures/bugs", "fixtures/correct", "fixtures/runtime"]
WORST = ["proved", "unsupported", "unknown", "latent", "refuted"]


class MatrixReader(HTMLParser):
    """The matrix table and the ids and links of a page, from the browser's DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.modes: list[str] = []
        self.rows: dict[str, dict[str, str]] = {}
        self.ids: set[str] = set()
        self.links: list[str] = []
        self._in_matrix = False
        self._section = ""
        self._capturing = False
        self._text: list[str] = []
        self._row = ""
        self._cells: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href", "").startswith("#"):
            self.links.append(a["href"][1:])
        if tag == "table" and a.get("id") == "matrix":
            self._in_matrix = True
        if not self._in_matrix:
            return
        if tag in ("thead", "tbody"):
            self._section = tag
        elif tag == "tr":
            self._row, self._cells = "", []
        elif tag in ("th", "td"):
            self._capturing, self._text = True, []
            if tag == "td":
                self._cells.append(a.get("data-verdict", ""))
            elif a.get("scope") == "row":  # the header shows it shortened: the full name
                self._row = a.get("data-row", "")

    def handle_data(self, data: str) -> None:
        if self._capturing:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if not self._in_matrix:
            return
        if tag == "th":
            text = "".join(self._text).strip()
            if self._section == "thead" and text != "backend":
                self.modes.append(text)
        if tag in ("th", "td"):
            self._capturing = False
        elif tag == "tr" and self._section == "tbody" and self._row:  # not a folder's header
            self.rows[self._row] = dict(zip(self.modes, self._cells, strict=True))
        elif tag == "table":
            self._in_matrix = False


def expected_matrix() -> dict[str, dict[str, str]]:
    """Independently of the reporter: the worst category per (path:Class, mode)."""
    result = scan(PATHS).result
    severity = {r.code: r.severity for r in catalogue()}
    out: dict[str, dict[str, str]] = {}
    for note in result.outcomes:
        if note.verdict == Verdict.REFUTED:
            category = "refuted" if severity[note.code] == "error" else "latent"
        elif note.verdict in (Verdict.UNKNOWN, Verdict.UNSUPPORTED):
            category = note.verdict.name.lower()
        else:
            category = "proved"
        row = out.setdefault(f"{note.span.path}:{note.function.split('.')[0]}", {})
        if WORST.index(category) >= WORST.index(row.get(note.mode, "proved")):
            row[note.mode] = category
    return out


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("html") / "report.html"
    result = CliRunner().invoke(main, ["scan", *PATHS, "--format", f"html={target}"])
    assert result.exit_code == 1, result.output
    return target


def browser_dom(page: Path) -> str:
    try:
        return dump_dom(page)
    except BrowserMissing as exc:
        pytest.fail(str(exc), pytrace=False)


def test_the_browser_renders_the_matrix_of_the_scan(page: Path) -> None:
    reader = MatrixReader()
    reader.feed(browser_dom(page))
    expected = expected_matrix()
    assert set(reader.rows) == set(expected)
    for row, cells in reader.rows.items():
        got = {mode: verdict for mode, verdict in cells.items() if verdict != "none"}
        assert got == expected[row], row
    # The motivating bug and its fix, side by side.
    assert (
        reader.rows["fixtures/bugs/eagle_draft_extend_v2.py:DraftExtendBackend"]["DRAFT_EXTEND_V2"]
        == "refuted"
    )
    assert (
        reader.rows["fixtures/correct/eagle_full_fix.py:FixedBackend"]["DRAFT_EXTEND_V2"]
        == "proved"
    )
    # Every link of the page lands on an element of the page, and each finding is linked.
    assert reader.links and set(reader.links) <= reader.ids
    doc = json.loads(CliRunner().invoke(main, ["scan", *PATHS, "--format", "json"]).stdout)
    assert {f"f-{i}" for i in range(1, len(doc["findings"]) + 1)} <= set(reader.links)


def test_a_screenshot_shows_colour(page: Path, tmp_path: Path) -> None:
    try:
        shot = screenshot(page, tmp_path / "report.png", 1200, 800)
    except BrowserMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1200, 800)
