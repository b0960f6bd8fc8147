"""Reports of a hostile tree: file names with bytes that are not UTF-8, newlines that write
GitHub workflow commands, terminal escape sequences, backticks and HTML, in names, source
comments and path conditions. Every report is written, and each escapes what comes from the
tree for its own format: the text report has no control character and no line opening with a
log command, the GitHub commands stay one per line with escaped properties, the Markdown
summary renders (as GitHub renders it) no HTML or link of the tree, the JUnit XML is
well-formed, the HTML page has no element of the tree, SARIF is valid against the schema with
its formats checked and its URIs give back the exact bytes of each name, and JSON is valid
Unicode that keeps them too."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html import unescape as html_unescape
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, unquote_to_bytes

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from hypothesis import given
from hypothesis import strategies as st

from idxcheck.app.api import scan
from idxcheck.model.config import Config
from idxcheck.model.findings import FileError, Finding, Related, ScanResult, SiteNote
from idxcheck.model.spans import Span
from idxcheck.model.verdicts import Verdict
from idxcheck.report import escape, github, html, json_format, junit, markdown, sarif, text
from idxcheck.report.context import Report

from ..conftest import FIXTURES
from ..sarif_check import assert_valid_sarif
from .conftest import FUZZ

BUG = FIXTURES / "bugs" / "eagle_draft_extend_v2.py"
# A source comment with control characters, an escape sequence, a backtick and HTML (it gives
# an IDX901 finding whose message quotes it), and a path condition with the same in a string.
SOURCE = (
    BUG.read_text(encoding="utf-8")
    .replace(
        "# expect: IDX001",
        "# idxcheck: ignore[X\x01\x1b[2J`<img/src=x/onerror=alert(1)>`] \x1b]0;pwn\x07 \u202e",
    )
    .replace(
        "if forward_mode.is_draft_extend(include_v2=True):",
        'if forward_mode.is_draft_extend(include_v2=True) and self.tag != "\x1b[2J`<img '
        'src=x onerror=alert(1)>`\x01":',
    )
)
# Each file name (bytes) and how the reports that escape for display show it.
NAMES = {
    b"bad\xff.py": "bad\\xff.py",
    b"x\n::error file=README.md,line=1::pwned\n::stop-commands::tok\n.py": (
        "x\\n::error file=README.md,line=1::pwned\\n::stop-commands::tok\\n.py"
    ),
    b"::warning title=x::injected.py": "::warning title=x::injected.py",
    b"##[error]legacy.py": "##[error]legacy.py",
    b"\x1b]0;pwn\x07\x1b[2Jesc.py": "\\x1b]0;pwn\\x07\\x1b[2Jesc.py",
    b"t`<img src=x onerror=alert(1)>`[l](javascript:alert(1)).py": (
        "t`<img src=x onerror=alert(1)>`[l](javascript:alert(1)).py"
    ),
    "a b%41 #?\u202e.py".encode(): "a b%41 #?\\u202e.py",
}
# Where a name opens a line of the text report, a log command's `::` or `##` is escaped.
AT_LINE_START = {
    "::warning title=x::injected.py": "\\x3a:warning title=x::injected.py",
    "##[error]legacy.py": "\\x23#[error]legacy.py",
}
FORMATS = ("json", "sarif", "github", "markdown", "junit", "html")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """One CLI run over the hostile tree: text on stdout (strict UTF-8), the others in files."""
    base = tmp_path_factory.mktemp("hostile")
    tree = base / "tree"
    tree.mkdir()
    for name in NAMES:
        with open(os.path.join(os.fsencode(tree), name), "w", encoding="utf-8") as handle:
            handle.write(SOURCE)
    out = base / "out"
    args = [sys.executable, "-m", "idxcheck", "scan", ".", "--no-cache", "--format", "text"]
    for name in FORMATS:
        args += ["--format", f"{name}={out / ('report.' + name)}"]
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}  # strict: a surrogate cannot pass
    proc = subprocess.run(args, cwd=tree, env=env, capture_output=True, timeout=120, check=False)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 1, stderr
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
    reports = {"text": proc.stdout}
    for name in FORMATS:
        reports[name] = (out / f"report.{name}").read_bytes()
    return reports


# ---------------------------------------------------------------------------------------------
# what each format must hold, whatever the tree


def _controls(text: str, allowed: str = "\n") -> list[str]:
    return [
        c
        for c in text
        if (
            (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or 0xD800 <= ord(c) <= 0xDFFF)
            and c not in allowed
        )
        or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
    ]


def no_log_command(out: str) -> None:
    # GitHub Actions runs a log line opening with `::` or `##[` (after blanks) as a command,
    # Azure Pipelines one opening with `##vso[`; any report may be printed in a CI log.
    for line in out.splitlines():
        assert not re.match(r"\s*(::|##(vso)?\[)", line, re.IGNORECASE), line


def check_text(out: str) -> None:
    out.encode("utf-8")  # no lone surrogate
    assert not _controls(out), _controls(out)
    no_log_command(out)


COMMAND = re.compile(r"::(error|warning|notice) ([^:\n]*)::([^\n]*)")
PROPERTIES = {"file", "line", "endLine", "col", "endColumn", "title"}


def check_github(out: str, lines: int) -> list[dict[str, str]]:
    out.encode("utf-8")
    assert not _controls(out), _controls(out)
    found = out.splitlines()
    assert len(found) == lines, found
    commands = []
    for line in found:
        match = COMMAND.fullmatch(line)
        assert match, line
        props = {}
        for item in match.group(2).split(","):
            key, sep, value = item.partition("=")
            assert sep and key in PROPERTIES and key not in props, line
            props[key] = unquote(value)  # %25 %0D %0A %3A %2C
        commands.append(props)
    return commands


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.data: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.data.append(data)


def parsed(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    tags.close()
    return tags


MARKDOWN_TAGS = {"h2", "h3", "p", "table", "thead", "tbody", "tr", "th", "td", "a", "code"}
MARKDOWN_TAGS |= {"pre", "ul", "li", "strong", "br"}
# Emphasis of the tree's `*`, `_` and `~` is typography, neither markup nor a link: allowed.
MARKDOWN_TAGS |= {"em", "del"}


def check_markdown(out: str) -> Tags:
    out.encode("utf-8")
    no_log_command(out)
    # As GitHub renders a job summary (cmark-gfm), before its HTML sanitiser: so that nothing
    # of the tree relies on the sanitiser to stay text.
    page = cmarkgfm.github_flavored_markdown_to_html(out, options=Options.CMARK_OPT_UNSAFE)
    tags = parsed(page)
    for tag, attrs in tags.tags:
        assert tag in MARKDOWN_TAGS, (tag, attrs)
        if tag == "a":  # only the report's own anchors and links to them
            assert set(attrs) in ({"id"}, {"href"}), attrs
            target = attrs.get("id") or (attrs.get("href") or "").removeprefix("#")
            assert re.fullmatch(r"finding-\d+", target), attrs
        elif tag in ("code", "pre"):
            assert set(attrs) <= {"class", "lang"}, attrs
        else:
            assert set(attrs) <= {"align"}, (tag, attrs)
    assert not _controls("".join(tags.data)), _controls("".join(tags.data))
    return tags


def check_junit(data: bytes) -> ET.Element:
    no_log_command(data.decode("utf-8"))
    return ET.fromstring(data)  # expat: a character XML 1.0 forbids is not well-formed


HTML_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "p"}
HTML_TAGS |= {"section", "table", "thead", "tbody", "tr", "th", "td", "a", "ul", "li", "span"}
HTML_TAGS |= {"article", "code", "pre", "mark", "dl", "dt", "dd", "details", "summary", "b"}
HTML_TAGS |= {"br", "footer", "colgroup", "col", "wbr"}


def check_html(out: str) -> Tags:
    out.encode("utf-8")
    assert not _controls(out), _controls(out)
    no_log_command(out)
    tags = parsed(out)
    for tag, attrs in tags.tags:
        assert tag in HTML_TAGS, (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert not any((value or "").lstrip().startswith("javascript") for value in attrs.values())
    return tags


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def check_json(out: str) -> Any:
    no_log_command(out)
    doc = json.loads(out)
    for value in _strings(doc):
        value.encode("utf-8")  # valid Unicode: no lone surrogate, however it was escaped
    return doc


def check_sarif(out: str) -> Any:
    doc = check_json(out)
    assert_valid_sarif(doc)  # with its `uri`/`uri-reference` formats checked
    return doc


# ---------------------------------------------------------------------------------------------
# the hostile tree, through the command line


def test_text_report_shows_names_escaped_and_writes_no_command(written: dict[str, bytes]) -> None:
    out = written["text"].decode("utf-8")  # strict
    check_text(out)
    for shown in NAMES.values():
        shown = AT_LINE_START.get(shown, shown)
        assert re.search(rf"^{re.escape(shown)}:\d+:\d+: IDX", out, re.MULTILINE), shown
    # the comment's escape sequence and direction override are shown in the code frame
    assert "\\x1b]0;pwn\\x07 \\u202e" in out


def test_github_commands_stay_one_per_finding(written: dict[str, bytes]) -> None:
    out = written["github"].decode("utf-8")
    doc = json.loads(written["json"])
    commands = check_github(out, len(doc["findings"]) + len(doc["errors"]) + 1)
    assert {c["file"] for c in commands if "file" in c} == set(NAMES.values())


def test_markdown_summary_renders_no_html_or_link_of_the_tree(written: dict[str, bytes]) -> None:
    tags = check_markdown(written["markdown"].decode("utf-8"))
    text_shown = "".join(tags.data)
    for shown in ("bad\\xff.py", "t`<img src=x onerror=alert(1)>`[l](javascript:alert(1)).py"):
        assert shown in text_shown, shown
    assert '`<img src=x onerror=alert(1)>`\\x01"' in text_shown  # the path condition, whole


def test_junit_is_well_formed_and_names_each_file(written: dict[str, bytes]) -> None:
    root = check_junit(written["junit"])
    assert {case.get("file") for case in root.iter("testcase")} >= set(NAMES.values())
    messages = [f.get("message", "") for f in root.iter("failure")]
    assert any("X\\x01\\x1b[2J`<IMG/SRC=X/ONERROR=ALERT(1)>`" in m for m in messages), messages


def test_html_page_holds_no_element_of_the_tree(written: dict[str, bytes]) -> None:
    tags = check_html(written["html"].decode("utf-8"))
    assert "t`<img src=x onerror=alert(1)>`[l](javascript:alert(1)).py" in "".join(tags.data)


def test_sarif_uris_are_valid_and_give_back_each_name(written: dict[str, bytes]) -> None:
    doc = check_sarif(written["sarif"].decode("utf-8"))
    uris = {
        location["physicalLocation"]["artifactLocation"]["uri"]
        for result in doc["runs"][0]["results"]
        for location in result["locations"]
    }
    assert {unquote_to_bytes(u) for u in uris} == set(NAMES)


def test_json_is_valid_unicode_and_keeps_each_name(written: dict[str, bytes]) -> None:
    doc = check_json(written["json"].decode("utf-8"))
    names = set()
    for finding in doc["findings"]:
        if "path_uri" in finding:  # a name that is not UTF-8: shown escaped, bytes kept
            names.add(unquote_to_bytes(finding["path_uri"]))
            assert finding["path"] == "bad\\xff.py"
        else:
            names.add(finding["path"].encode("utf-8"))
    assert names == set(NAMES)


# ---------------------------------------------------------------------------------------------
# any text in any field the tree fills, rendered in every format

ATOMS = (
    "::",
    "::error file=a.py,line=1::x",
    "\n",
    "\r",
    "`",
    "``",
    "<img src=x onerror=alert(1)>",
    "[l](javascript:alert(1))",
    "![i](x)",
    "https://evil.example/x",
    "www.evil.example",
    "<https://evil.example>",
    "&amp;",
    "&#x41;",
    "|",
    "\\",
    "\x1b]0;t\x07",
    "\x1b[2J",
    "\x01",
    "\x00",
    "\x85",
    "\udcff",
    "\ud800",
    "\u202e",
    "\u2028",
    "\ufffe",
    "##[error]",
    "##vso[task.setvariable variable=x]y",
    "%",
    ",",
    ":",
    " ",
    "#",
    "- ",
    "1. ",
    "> ",
    "---",
    "~~~",
    "<!--",
    "]]>",
    '"',
    "'",
)
TREE_TEXT = st.lists(
    st.one_of(st.sampled_from(ATOMS), st.text(st.characters(exclude_categories=()), max_size=4)),
    max_size=8,
).map("".join)


@pytest.fixture(scope="module")
def base() -> ScanResult:
    return scan([str(BUG)], Config()).result


def hostile_report(base: ScanResult, texts: list[str]) -> Report:
    """`base` with every field the scanned tree can fill set to one of `texts`."""
    path, function, message, code_text, condition, related, reason = texts
    finding = base.findings[0]

    def span(of: Span) -> Span:
        return dataclasses.replace(of, path=path)

    hostile: Finding = dataclasses.replace(
        finding,
        span=span(finding.span),
        function=function,
        mode=code_text,
        message=message,
        counterexample_text=code_text,
        needs_text=code_text,
        conditions=((condition, True), (condition, False)),
        related=(
            Related("binding", related, span(finding.span)),
            Related("profile", related, None, path),
            Related("entry", related),
        ),
        explain=(related, condition),
        confirmation={"status": reason, "reason": reason},
    )
    notes = [dataclasses.replace(n, span=span(n.span), reason=reason) for n in base.notes]
    notes.append(
        SiteNote("IDX001", span(finding.span), function, code_text, Verdict.UNKNOWN, reason)
    )
    result = ScanResult(
        findings=[hostile],
        notes=notes,
        outcomes=[
            dataclasses.replace(o, span=span(o.span), function=function, reason=reason)
            for o in base.outcomes
        ],
        errors=[FileError(path, reason)],
        stats=base.stats,
        mode_model_source=reason,
        mode_order=base.mode_order,
    )
    return Report(result=result, exit_code=1, strict=True, mode_order=base.mode_order)


# The text report's own colours (`text.Style`): all the escape sequences it may hold.
STYLE = re.compile(r"\x1b\[(?:0|1|2|1;31|1;32|1;33|1;34)m")


@FUZZ
@given(st.lists(TREE_TEXT, min_size=7, max_size=7))
def test_every_format_escapes_any_tree_text(base: ScanResult, texts: list[str]) -> None:
    report = hostile_report(base, texts)
    check_text(text.render(report, explain=True))
    check_text(STYLE.sub("", text.render(report, explain=True, color=True)))
    check_github(github.render(report), 4)  # the finding, the error, the UNKNOWN, the notice
    check_markdown(markdown.render(report))
    check_junit(junit.render(report).encode("utf-8"))
    check_html(html.render(report))
    check_json(json_format.render(report))
    check_sarif(sarif.render(report))


@FUZZ
@given(TREE_TEXT, st.booleans())
def test_a_markdown_code_span_shows_exactly_its_text(value: str, table: bool) -> None:
    span = escape.md_code(value, table=table)
    source = f"| h |\n|---|\n| {span} |\n" if table else span
    page = cmarkgfm.github_flavored_markdown_to_html(source, options=Options.CMARK_OPT_UNSAFE)
    tags = parsed(page)
    assert [
        tag for tag, _ in tags.tags if tag not in ("table", "thead", "tbody", "tr", "th", "td", "p")
    ] == ["code"], page
    shown = re.search(r"<code>(.*)</code>", page, re.DOTALL)
    # (CommonMark has no empty code span: an empty text shows as one blank)
    assert shown and html_unescape(shown.group(1)) == (escape.display(value) or " ")
