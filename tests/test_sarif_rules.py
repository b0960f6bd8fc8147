"""SARIF rule metadata: `help.markdown` is the rule's doc, `help.text` the same text with no
markdown (what a viewer that shows no markdown prints), and `helpUri` the rule's generated page
(docs/rules/CODE.md) under the docs address: $IDXCHECK_DOCS_URL, else the repository named in
the installed metadata's Project-URL, else none."""

from __future__ import annotations

import html.parser
import inspect
import re
from pathlib import Path

import cmarkgfm
import pytest
from click.testing import CliRunner

from idxcheck.app.docs_url import DOCS_URL_ENV, DocsUrlError, docs_url
from idxcheck.cli import main
from idxcheck.model.findings import ScanResult
from idxcheck.report import sarif
from idxcheck.report.context import Report
from idxcheck.rules.catalog import catalogue

from .conftest import ROOT
from .sarif_check import assert_valid_sarif, assert_valid_sarif_file

BASE = "https://git.example.org/team/idxcheck/docs"


class _Text(html.parser.HTMLParser):
    """The text a reader sees in rendered HTML, links followed by their address, as the
    plain text writes them."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self.parts.append(f" ({self.hrefs.pop()})")

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def rendered_text(markdown: str) -> str:
    parser = _Text()
    parser.feed(cmarkgfm.github_flavored_markdown_to_html(markdown))
    return " ".join("".join(parser.parts).split())


def rules_of(report: Report) -> dict[str, dict[str, object]]:
    doc = sarif.to_dict(report)
    assert_valid_sarif(doc)
    return {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}


def test_help_text_reads_as_github_renders_the_markdown() -> None:
    rules = rules_of(Report(ScanResult()))
    assert sorted(rules) == sorted(info.code for info in catalogue())
    for info in catalogue():
        help_ = rules[info.code]["help"]
        assert isinstance(help_, dict)
        markdown, text = help_["markdown"], help_["text"]
        # The markdown is the rule's doc, as its page in docs/rules/ carries it.
        page = (ROOT / "docs" / "rules" / f"{info.code}.md").read_text(encoding="utf-8")
        assert markdown == inspect.cleandoc(info.doc) and markdown in page
        # The plain text holds the words a reader of the rendered markdown sees, no more.
        assert " ".join(text.split()) == rendered_text(markdown), info.code
        # ... and no markup outside code blocks (a code span's text is kept literally).
        prose = [ln for ln in text.splitlines() if not ln.startswith("    ")]
        assert not [ln for ln in prose if "**" in ln or "`" in ln or "](" in ln], info.code


def test_descriptions_carry_markdown_only_where_they_have_any() -> None:
    rules = rules_of(Report(ScanResult()))
    bare = rules["IDX900"]["shortDescription"]  # its summary quotes the comment as code
    assert bare == {
        "text": "# idxcheck: ignore without a rule code",
        "markdown": "`# idxcheck: ignore` without a rule code",
    }
    assert set(rules["IDX001"]["shortDescription"]) == {"text"}  # type: ignore[arg-type]


def test_help_uri_is_each_rules_page_under_the_docs_address() -> None:
    rules = rules_of(Report(ScanResult(), docs_url=BASE))
    for info in catalogue():
        uri = rules[info.code]["helpUri"]
        assert uri == f"{BASE}/rules/{info.code}.md"
        # The address maps onto a page this checkout generates.
        assert isinstance(uri, str)
        assert (ROOT / "docs" / uri.removeprefix(BASE + "/")).is_file()
    # No address known: no link at all rather than a guessed one.
    assert not any("helpUri" in r for r in rules_of(Report(ScanResult())).values())


GITHUB = "Repository, https://github.com/someone/idxcheck"


@pytest.mark.parametrize(
    ("environ", "urls", "expected"),
    [
        ({}, [], ""),
        ({}, [GITHUB], "https://github.com/someone/idxcheck/blob/HEAD/docs"),
        ({}, ["source-code, https://github.com/a/b.git/"], "https://github.com/a/b/blob/HEAD/docs"),
        (
            {},
            ["Source, https://gitlab.com/g/sub/idx"],
            "https://gitlab.com/g/sub/idx/-/blob/HEAD/docs",
        ),
        ({}, ["Homepage, https://github.com/a/b"], ""),  # a home page is not the repository
        ({}, ["Repository, https://git.example.org/a/b"], ""),  # a forge we know no pages of
        ({}, ["Repository, https://github.com/a"], ""),  # an owner, not a repository
        ({DOCS_URL_ENV: BASE + "/"}, [GITHUB], BASE),  # the environment wins
        ({DOCS_URL_ENV: "  "}, [GITHUB], "https://github.com/someone/idxcheck/blob/HEAD/docs"),
    ],
)
def test_docs_address(environ: dict[str, str], urls: list[str], expected: str) -> None:
    assert docs_url(environ, urls) == expected


@pytest.mark.parametrize("value", ["docs/", "ftp://host/docs", "https://", "https://a b/docs"])
def test_a_docs_address_that_is_no_absolute_http_url_is_refused(value: str) -> None:
    with pytest.raises(DocsUrlError, match=DOCS_URL_ENV):
        docs_url({DOCS_URL_ENV: value}, [])


def test_the_cli_links_rule_pages_and_refuses_a_bad_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.sarif"
    monkeypatch.setenv(DOCS_URL_ENV, BASE)
    args = ["scan", "fixtures/bugs/eagle_draft_extend_v2.py", "--format", f"sarif={target}"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    doc = assert_valid_sarif_file(target)
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    assert [r["helpUri"] for r in rules] == [f"{BASE}/rules/{r['id']}.md" for r in rules]
    # A bad address is a usage error before the scan, and writes no report.
    target.unlink()
    monkeypatch.setenv(DOCS_URL_ENV, "docs/rules")
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert f"{DOCS_URL_ENV}='docs/rules' is not an absolute" in result.stderr
    assert not target.exists()


def test_plain_text_keeps_code_literal_and_writes_links_out() -> None:
    markdown = (
        "Use **`a_b`** and\n`x * y` (see [the page](https://example.org/p)), not \\*this\\*.\n\n"
        "    code **stays** `as is`\n"
    )
    assert sarif.plain_text(markdown) == (
        "Use a_b and\nx * y (see the page (https://example.org/p)), not *this*.\n\n"
        "    code **stays** `as is`\n"
    )
    assert re.sub(r"\s+", " ", sarif.plain_text(markdown)).strip() == rendered_text(markdown)
