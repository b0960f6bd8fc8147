"""The HTML report's matrix as a 1,280 px and a 1,920 px screen show it, laid out by headless
Chromium (`tests/browser.py` measures the boxes): every column that holds a finding is in view,
or in view once scrolled sideways with the sticky backend column beside it, not over it; no
cell's content spills out of its cell, cells of a row and rows do not overlap, and the text
around the table stays clear of it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from idxcheck.cli import main
from idxcheck.model.findings import ScanResult, SiteNote, make_finding
from idxcheck.model.kinds import Severity
from idxcheck.model.spans import Span
from idxcheck.model.verdicts import Verdict
from idxcheck.profiles.schema import load_profile
from idxcheck.report import html
from idxcheck.report.context import Report

from .browser import BrowserMissing, matrix_layout
from .conftest import ROOT
from .realtree import sglang_tree

SCREENS = [(1280, 800), (1920, 1080)]
EPS = 0.5  # CSS pixels of rounding between boxes that touch
SGLANG_MODES = (*load_profile("sglang").mode_members, "any mode")
DEEP = "python/sglang/srt/hardware_backend/some_vendor/attention/backends/generated"


def synthetic_report(modes: tuple[str, ...], rows: int = 14) -> Report:
    """A matrix as wide as a real scan's can be: every mode checked somewhere, deep paths,
    long names with nowhere to break, verdicts of every kind, and findings in the first, a
    middle and the last column, one cell holding many of them."""
    notes, findings = [], []
    verdicts = (Verdict.PROVED, Verdict.UNSUPPORTED, Verdict.UNKNOWN, Verdict.REFUTED)
    for r in range(rows):
        folder = DEEP if r % 2 else f"python/sglang/srt/layers/attention{'/linear' * (r % 3)}"
        path = f"{folder}/{'very_long_backend_file_name_' * (1 + r % 2)}{r}.py"
        owner = ("AVeryLongBackendClassNameWithoutAnyBreak" if r % 3 == 0 else "Backend") + str(r)
        for m, mode in enumerate(modes):
            if (r + m) % 3 == 0 or m in (0, len(modes) - 1):
                span = Span(path, 10 + m, 4, 10 + m, 20)
                verdict = verdicts[(r + m) % 3]  # REFUTED only where a finding is
                notes.append(SiteNote("IDX001", span, f"{owner}.f", mode, verdict, "because"))
        for mode in (modes[0], modes[len(modes) // 2], modes[-1]):
            if r % 4 != 1:
                continue
            for k in range(7 if mode == modes[-1] else 1):
                span = Span(path, 100 + k, 4, 100 + k, 20)
                notes.append(SiteNote("IDX001", span, f"{owner}.f", mode, Verdict.REFUTED, ""))
                findings.append(
                    make_finding(
                        code="IDX001",
                        name="qo-indptr-stride-mismatch",
                        severity=Severity.ERROR,
                        span=span,
                        message="stride differs",
                        identity=(path, mode, str(k)),
                        function=f"{owner}.f",
                        mode=mode,
                    )
                )
    return Report(ScanResult(findings=findings, outcomes=notes), mode_order=modes)


def finding_columns(layout: dict[str, Any]) -> set[int]:
    """Indexes (in the header row) of the columns holding a finding's cell."""
    out = set()
    for row in layout["rows"][1:]:
        if row["cells"][0]["scope"] != "row":
            continue  # a folder's header row
        for i, cell in enumerate(row["cells"]):
            if cell["links"]:
                out.add(i)
    return out


def assert_columns_in_view(layout: dict[str, Any]) -> list[int]:
    """Each column with a finding is in view at scroll 0, or once scrolled to it beside the
    sticky column; returns those that needed the scroll."""
    width = layout["viewport"][0]
    scrolled = []
    columns = finding_columns(layout)
    assert columns, "the page holds no finding in its matrix"
    for i in sorted(columns):
        column = layout["columns"][i]
        left, _, right, _ = column["head"]
        if column["scrollX"] == 0:
            assert 0 <= left and right <= width + EPS, column
            continue
        scrolled.append(i)
        sticky = column["sticky"]
        # The backend column stays in view beside it, not over it.
        assert sticky[0] >= -EPS and right <= width + EPS and left >= sticky[2] - EPS, (
            f"column {column['text']!r} at {left}..{right} once scrolled by "
            f"{column['scrollX']}px, sticky column at {sticky[0]}..{sticky[2]}, window {width}"
        )
    return scrolled


def assert_nothing_overlaps(layout: dict[str, Any]) -> None:
    previous_bottom = layout["table"][1]
    for row in layout["rows"]:
        top, bottom = row["box"][1], row["box"][3]
        assert top >= previous_bottom - EPS, row["cells"][0]["text"]
        previous_bottom = bottom
        previous_right = layout["table"][0]
        for cell in row["cells"]:
            left, ctop, right, cbottom = cell["box"]
            assert left >= previous_right - EPS, f"{cell['text']!r} overlaps the cell before it"
            previous_right = right
            content = cell["content"]
            if content is None:
                continue
            assert (
                content[0] >= left - EPS
                and content[2] <= right + EPS
                and content[1] >= ctop - EPS
                and content[3] <= cbottom + EPS
            ), f"{cell['text']!r} spills out of its cell: {content} outside {cell['box']}"
    table = layout["table"]
    for other in layout["around"]:
        box = other["box"]
        assert box[3] <= table[1] + EPS or box[1] >= table[3] - EPS, f"{other['name']} overlaps"


def layout_of(page: Path, width: int, height: int) -> dict[str, Any]:
    try:
        layout = matrix_layout(page, width, height)
    except BrowserMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    assert layout["viewport"][0] == width
    return layout


@pytest.fixture(scope="module")
def wide_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = tmp_path_factory.mktemp("layout") / "wide.html"
    page.write_text(html.render(synthetic_report(SGLANG_MODES)), encoding="utf-8")
    return page


@pytest.mark.parametrize(("width", "height"), SCREENS)
def test_every_mode_of_the_profile_fits_the_screen(
    wide_page: Path, width: int, height: int
) -> None:
    layout = layout_of(wide_page, width, height)
    assert [c["text"] for c in layout["columns"][1:]] == list(SGLANG_MODES)
    assert layout["pageWidth"] <= width  # the whole matrix, without scrolling sideways
    assert assert_columns_in_view(layout) == []
    assert_nothing_overlaps(layout)


@pytest.mark.parametrize(("width", "height"), SCREENS)
def test_more_modes_than_fit_scroll_under_the_sticky_backend_column(
    tmp_path: Path, width: int, height: int
) -> None:
    modes = tuple(f"SOME_LONG_FORWARD_MODE_{i}" for i in range(26))
    page = tmp_path / "wider.html"
    page.write_text(html.render(synthetic_report(modes)), encoding="utf-8")
    layout = layout_of(page, width, height)
    assert layout["pageWidth"] > width  # so the sideways scroll is what is tested
    assert assert_columns_in_view(layout)  # the last column is reached by scrolling
    assert_nothing_overlaps(layout)


@pytest.fixture(scope="module")
def fixture_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = tmp_path_factory.mktemp("layout") / "report.html"
    paths = ["fixtures/bugs", "fixtures/correct", "fixtures/runtime"]
    result = CliRunner().invoke(main, ["scan", *paths, "--format", f"html={page}"])
    assert result.exit_code == 1, result.output
    return page


@pytest.mark.parametrize(("width", "height"), SCREENS)
def test_the_fixture_scan_fits(fixture_page: Path, width: int, height: int) -> None:
    layout = layout_of(fixture_page, width, height)
    assert layout["pageWidth"] <= width
    assert assert_columns_in_view(layout) == []
    assert_nothing_overlaps(layout)


def test_row_headers_name_the_file_below_the_common_folder() -> None:
    common, shown = html.row_groups(
        [
            "python/sglang/srt/layers/attention/triton_backend.py",
            "python/sglang/srt/layers/attention/linear/short_conv.py",
            "python/sglang/srt/models/lfm2.py",
        ]
    )
    assert common == "python/sglang/srt"
    assert shown == {
        "python/sglang/srt/layers/attention/triton_backend.py": (
            "layers/attention",
            "triton_backend.py",
        ),
        "python/sglang/srt/layers/attention/linear/short_conv.py": (
            "layers/attention/linear",
            "short_conv.py",
        ),
        "python/sglang/srt/models/lfm2.py": ("models", "lfm2.py"),
    }
    assert html.row_groups(["a.py", "/abs/b.py"])[0] == ""  # nothing in common
    assert html.row_groups(["x/a.py"]) == ("x", {"x/a.py": ("", "a.py")})


@pytest.mark.slow
@pytest.mark.network
def test_a_whole_tree_scan_of_sglang_fits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SGLang 0.5.23's whole package: ten forward-mode columns and thirty backends."""
    package = sglang_tree("0.5.23")
    page = tmp_path / "sglang.html"
    monkeypatch.chdir(package.parent)  # paths as a user in the checkout sees them
    result = CliRunner().invoke(main, ["scan", package.name, "--format", f"html={page}"])
    assert result.exit_code == 1, result.output
    for width, height in SCREENS:
        layout = layout_of(page, width, height)
        assert len(layout["columns"]) >= 10
        assert layout["pageWidth"] <= width
        assert assert_columns_in_view(layout) == []
        assert_nothing_overlaps(layout)


def test_the_docs_screenshot_is_the_scripts_at_1280_px() -> None:
    """The picture docs/reports.md shows is the one docs/report_screenshot.py writes (of the
    release it names), 1,280 px wide, small enough for the repository, and the only one."""
    docs = ROOT / "docs"
    shown = re.findall(r"\]\((report-sglang-[^)]+\.png)\)", (docs / "reports.md").read_text())
    script = (docs / "report_screenshot.py").read_text(encoding="utf-8")
    [version] = re.findall(r'^VERSION = "([^"]+)"$', script, flags=re.MULTILINE)
    assert shown == [f"report-sglang-{version}.png"]
    assert sorted(p.name for p in docs.glob("report-sglang-*.png")) == shown
    data = (docs / shown[0]).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(data[16:20], "big") == 1280
    assert len(data) < 300 * 1024
