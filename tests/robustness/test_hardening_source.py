"""Source text that CPython accepts is read as CPython reads it: its lines (only "\\n", "\\r\\n"
and "\\r" end one), its identifiers (Unicode, NFKC-normalised), its encoding (the coding
cookie), its indentation (tabs and spaces mixed consistently) and its depth (a long `elif`
chain). Each test builds a variant of a known-bad backend and checks that idxcheck finds what
it finds in the original, on the lines CPython gives, with the code frames of the text it
analysed. Reads are bounded, and the walk neither leaves the scanned folders nor enters one
twice."""

from __future__ import annotations

import ast
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from idxcheck.app import api
from idxcheck.app.api import scan
from idxcheck.app.config_file import Overrides, build_config, load_config_file
from idxcheck.cli import main
from idxcheck.model.outcome import Scan
from idxcheck.model.verdicts import Verdict
from idxcheck.profiles.schema import load_profile
from idxcheck.source import discover as discover_module
from idxcheck.source.discover import Candidate, discover
from idxcheck.source.prefilter import Prefilter
from idxcheck.source.tree import LoadedTree, load_file

from ..conftest import FIXTURES, ROOT

BUG = FIXTURES / "bugs" / "eagle_draft_extend_v2.py"
# The statement of the backend's first finding (IDX001) and the keyword of its second (IDX002).
STRIDE = "per_req = self.speculative_num_steps + 1"
GRID = "max_extend_len=self.speculative_num_steps + 1"


def original() -> str:
    return BUG.read_text(encoding="utf-8")


def write(folder: Path, text: str | bytes, name: str = "backend.py") -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


def found(outcome: Scan) -> list[tuple[int, int, str]]:
    return sorted((f.span.line, f.span.column, f.code) for f in outcome.result.findings)


def cpython_places(text: str) -> dict[str, tuple[int, int]]:
    """Where CPython puts the right-hand sides of the two findings (line, column in
    characters): the oracle the findings are checked against."""
    tree = ast.parse(text)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    places: dict[str, tuple[int, int]] = {}

    def column(node: ast.expr) -> int:
        line = lines[node.lineno - 1].encode("utf-8")
        return len(line[: node.col_offset].decode("utf-8"))

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "per_req":
            places["IDX001"] = (node.value.lineno, column(node.value))
        if isinstance(node, ast.keyword) and node.arg == "max_extend_len":
            places["IDX002"] = (node.value.lineno, column(node.value))
    return places


def expected(text: str) -> list[tuple[int, int, str]]:
    return sorted((line, col, code) for code, (line, col) in cpython_places(text).items())


def test_the_oracle_agrees_with_the_original(tmp_path: Path) -> None:
    assert found(scan([write(tmp_path, original())])) == expected(original())


# Characters `str.splitlines` breaks lines at and CPython does not.
NOT_LINE_ENDS = ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("char", NOT_LINE_ENDS, ids=[f"U+{ord(c):04X}" for c in NOT_LINE_ENDS])
def test_character_in_a_comment_inside_the_class(char: str, tmp_path: Path) -> None:
    text = original().replace(
        "qo_indptr = self.qo_indptr[: bs + 1]\n",
        f"qo_indptr = self.qo_indptr[: bs + 1]  # a{char}b\n",
        1,
    )
    assert char in text
    outcome = scan([write(tmp_path, text)])
    assert outcome.result.errors == []
    assert found(outcome) == expected(text)


@pytest.mark.parametrize("char", NOT_LINE_ENDS, ids=[f"U+{ord(c):04X}" for c in NOT_LINE_ENDS])
def test_character_above_the_class_keeps_lines_and_suppressions(char: str, tmp_path: Path) -> None:
    # A suppression on the stride's line: it matches the finding only where both count lines
    # as CPython does (else the finding is kept and the comment reported unused, IDX901).
    text = original().replace("\n@dataclass", f"\n# a{char}b\n@dataclass", 1)
    text = text.replace(f"{STRIDE}  # expect: IDX001", f"{STRIDE}  # idxcheck: ignore[IDX001] ok")
    outcome = scan([write(tmp_path, text)])
    assert outcome.result.errors == []
    grid = [e for e in expected(text) if e[2] == "IDX002"]
    assert found(outcome) == grid
    assert [(s.finding.span.line, s.finding.code) for s in outcome.suppressed] == [
        (cpython_places(text)["IDX001"][0], "IDX001")
    ]


@pytest.mark.parametrize("ending", ["\r", "\r\n"], ids=["CR", "CRLF"])
def test_carriage_return_line_ends(ending: str, tmp_path: Path) -> None:
    text = original().replace("\n", ending)
    outcome = scan([write(tmp_path, text)])
    assert outcome.result.errors == []
    assert found(outcome) == expected(text) == expected(original())


FORM_FEEDS = {
    # A page break between two methods: a blank line, not a statement at column 0.
    "line": ("\n    def _graph_metadata", "\n\f\n    def _graph_metadata"),
    "line-with-blanks": ("\n    def _graph_metadata", "\n  \f  \n    def _graph_metadata"),
    # A form feed sets CPython's column to 0: the class starts after it, the method is at 4.
    "before-class": ("\nclass DraftExtendBackend:", "\n\fclass DraftExtendBackend:"),
    "before-method": ("\n    def _graph_metadata", "\n\f    def _graph_metadata"),
}


@pytest.mark.parametrize("shape", sorted(FORM_FEEDS))
def test_form_feeds_in_indentation(shape: str, tmp_path: Path) -> None:
    old, new = FORM_FEEDS[shape]
    text = original().replace(old, new, 1)
    assert text != original()
    outcome = scan([write(tmp_path, text)])
    assert outcome.result.errors == []
    assert found(outcome) == expected(text)


# ---------------------------------------------------------------------------------------------
# Identifiers

NAMES = {
    "accented": "évil",
    "accented-inside": "Evil_éBackend",
    "fullwidth": "\uff25vil",  # a fullwidth E: CPython's name is `Evil` (NFKC)
    "cjk": "后端",
}
# A method whose string has lines at column 0: the line scan ends the class block inside it,
# so the class is found again in the whole module's tree, by its name.
COLUMN_ZERO_STRING = '    def helper(self):\n        return """\nat column 0\n"""\n\n'


@pytest.mark.parametrize("string", [False, True], ids=["plain", "column-0-string"])
@pytest.mark.parametrize("kind", sorted(NAMES))
def test_unicode_class_names(kind: str, string: bool, tmp_path: Path) -> None:
    name = NAMES[kind]
    text = original().replace("class DraftExtendBackend:", f"class {name}:", 1)
    if string:
        text = text.replace(
            "    def _graph_metadata", COLUMN_ZERO_STRING + "    def _graph_metadata", 1
        )
    outcome = scan([write(tmp_path, text)])
    assert outcome.result.errors == []
    assert found(outcome) == expected(text)
    cpython_name = ast.parse(text).body[-1]
    assert isinstance(cpython_name, ast.ClassDef)
    assert {f.function.split(".")[0] for f in outcome.result.findings} == {cpython_name.name}


STRINGS_AT_COLUMN_0 = {
    # The class's first statement: every hit line comes after the string.
    "class-docstring": (
        "class DraftExtendBackend:\n",
        'class DraftExtendBackend:\n    """A backend.\nat column 0\n"""\n\n',
    ),
    # Lines that read as a class and a function at column 0, inside a method's string.
    "headers-in-a-string": (
        "    def _graph_metadata",
        '    def helper(self):\n        return """\nclass Inside:\ndef inner():\n"""\n\n'
        "    def _graph_metadata",
    ),
    "single-quotes": (
        "class DraftExtendBackend:\n",
        "class DraftExtendBackend:\n    x = '''\nat column 0\n'''\n\n",
    ),
}


@pytest.mark.parametrize("shape", sorted(STRINGS_AT_COLUMN_0))
def test_strings_with_lines_at_column_0(shape: str, tmp_path: Path) -> None:
    old, new = STRINGS_AT_COLUMN_0[shape]
    text = original().replace(old, new, 1)
    assert text != original()
    outcome = scan([write(tmp_path, text)])
    assert outcome.result.errors == []
    assert found(outcome) == expected(text)


def test_names_are_read_as_cpython_normalises_them(tmp_path: Path) -> None:
    # `self.speculative_num_steps` with a fullwidth s is the same name to CPython: the stride
    # reads the attribute `__init__` set, and the finding stands.
    fullwidth_s = "\uff53"
    text = original().replace(
        f"{STRIDE}  #", f"per_req = self.{fullwidth_s}peculative_num_steps + 1  #", 1
    )
    assert STRIDE not in text
    outcome = scan([write(tmp_path, text)])
    assert outcome.result.errors == []
    assert found(outcome) == expected(text)


def test_unicode_method_names(tmp_path: Path) -> None:
    text = original().replace("_fill_draft_extend", "_remplir_é", 2)
    outcome = scan([write(tmp_path, text)])
    assert outcome.result.errors == []
    assert found(outcome) == expected(text)
    assert any(f.function.endswith("._remplir_é") for f in outcome.result.findings)


# ---------------------------------------------------------------------------------------------
# Indentation and depth that CPython accepts


def test_tabs_and_spaces_mixed_as_cpython_accepts(tmp_path: Path) -> None:
    # One method's body indented with a tab and four spaces under a class body of four spaces:
    # consistent to CPython (deeper at tab sizes 8 and 1), but not a string that starts with
    # the class body's, which libcst requires.
    text = original()
    start, end = text.index("    def _fill_draft_extend"), text.index("    def _graph_metadata")
    method = re.sub(r"(?m)^        ", "\t    ", text[start:end])
    text = text[:start] + method + text[end:]
    compile(text, "backend.py", "exec")
    outcome = scan([write(tmp_path, text)])
    assert outcome.result.errors == []
    assert found(outcome) == expected(text)


def elif_chain(count: int) -> str:
    """A method of one `if` and `count - 1` `elif`s, which CPython compiles."""
    branches = "".join(
        f"        elif forward_mode == {i}:\n            width = {i}\n" for i in range(1, count)
    )
    return (
        "    def chain(self, forward_mode):\n        if forward_mode == 0:\n            width = 0\n"
        f"{branches}        return width\n\n"
    )


def test_a_long_elif_chain_is_analysed(tmp_path: Path) -> None:
    text = original().replace(
        "    def _graph_metadata", elif_chain(1500) + "    def _graph_metadata", 1
    )
    compile(text, "backend.py", "exec")
    outcome = scan([write(tmp_path, text)])
    assert outcome.result.errors == []
    assert found(outcome) == expected(text)


def test_a_site_fed_by_a_long_elif_chain_is_unsupported_not_an_error(tmp_path: Path) -> None:
    # The stride is one of 1,500 values: too large a term to model, which the site says.
    branches = "".join(
        f"        elif bs == {i}:\n            extra = {i % 2}\n" for i in range(1, 1500)
    )
    chain = f"        if bs == 0:\n            extra = 0\n{branches}        else:\n            extra = 0\n"
    text = original().replace(
        f"        {STRIDE}  # expect: IDX001\n", f"{chain}        {STRIDE} + extra\n", 1
    )
    compile(text, "backend.py", "exec")
    outcome = scan([write(tmp_path, text)])
    assert outcome.result.errors == []
    assert found(outcome) == [e for e in expected(text) if e[2] == "IDX002"]
    notes = [n for n in outcome.result.notes if n.code == "IDX001"]
    assert notes and all(n.verdict == Verdict.UNSUPPORTED and n.reason for n in notes), notes


# ---------------------------------------------------------------------------------------------
# Code frames: the text analysed, decoded as it declares


def cli_text(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["scan", "--no-cache", "--color", "never", *args])
    return result.exit_code, result.output


def frame_line(output: str, code: str) -> str:
    """The quoted source line under the first finding of `code` in a text report."""
    lines = output.splitlines()
    at = next(i for i, line in enumerate(lines) if f": {code} " in line)
    return next(line for line in lines[at:] if re.match(r"^\s*\d+ \|", line))


def test_frames_of_a_latin1_file_show_its_characters(tmp_path: Path) -> None:
    text = "# -*- coding: latin-1 -*-\n" + original().replace(
        "# expect: IDX001", "# expect: IDX001 (café)", 1
    )
    path = write(tmp_path, text.encode("latin-1"))
    code, output = cli_text([path])
    assert code == 1, output
    line = frame_line(output, "IDX001")
    assert STRIDE in line and "café" in line and "\ufffd" not in line


def test_frames_come_from_the_text_analysed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file changes after it was analysed, before the report is written: the frame quotes
    # the line that was analysed, not the line now at that number.
    path = write(tmp_path, original())
    real_scan = api.scan

    def scan_then_edit(*args: object, **kwargs: object) -> Scan:
        outcome = real_scan(*args, **kwargs)  # type: ignore[arg-type]
        Path(path).write_text("# edited\n" * 3 + original(), encoding="utf-8")
        return outcome

    monkeypatch.setattr(api, "scan", scan_then_edit)
    code, output = cli_text([path])
    assert code == 1, output
    line = frame_line(output, "IDX001")
    assert line.split("|", 1)[0].strip() == str(cpython_places(original())["IDX001"][0])
    assert STRIDE in line


# ---------------------------------------------------------------------------------------------
# Bounded reads


def cli_json(args: list[str], memory: int | None = None) -> tuple[int, dict[str, Any]]:
    """The command line in a process of its own (with at most `memory` bytes of address space),
    stopped after a minute: what it reports in JSON."""

    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    proc = subprocess.run(
        [sys.executable, "-m", "idxcheck", "scan", "--no-cache", "--format", "json", *args],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return proc.returncode, json.loads(proc.stdout)


def json_findings(doc: dict[str, Any], folder: str) -> list[tuple[int, int, str]]:
    return sorted(
        (f["line"], f["column"] - 1, f["code"])
        for f in doc["findings"]
        if f["path"].startswith(folder)
    )


@pytest.mark.skipif(sys.platform != "linux", reason="sparse files and RLIMIT_AS")
def test_an_eight_gigabyte_file_is_an_error_told_before_reading(tmp_path: Path) -> None:
    backend = write(tmp_path / "tree", original())
    huge = tmp_path / "tree" / "huge.py"
    with open(huge, "wb") as handle:
        handle.truncate(8 << 30)  # sparse: no disk taken
    code, doc = cli_json([str(tmp_path / "tree")], memory=2 << 30)
    assert code == 1
    assert [(e["path"], "over the limit" in e["message"]) for e in doc["errors"]] == [
        (str(huge), True)
    ]
    assert json_findings(doc, backend) == expected(original())


def test_the_limit_is_a_setting(tmp_path: Path) -> None:
    path = write(tmp_path / "tree", original())
    settings = tmp_path / "pyproject.toml"
    settings.write_text("[tool.idxcheck]\nmax-file-bytes = 1000\n", encoding="utf-8")
    config = build_config(load_config_file(str(settings)), Overrides())
    outcome = scan([path], config)
    size = os.path.getsize(path)
    assert [e.path for e in outcome.result.errors] == [path]
    assert (
        f"file of {size:,} bytes, over the limit of 1,000 bytes" in outcome.result.errors[0].message
    )
    assert outcome.result.findings == []


def test_a_file_that_grew_since_the_walk_is_not_read_past_the_limit(tmp_path: Path) -> None:
    path = write(tmp_path, original())
    tree = LoadedTree()
    prefilter = Prefilter(load_profile("sglang"))
    # The walk saw 10 bytes; the file holds more than the limit by the time it is read.
    load_file(Candidate(path, path, (10, 0, 0, 0)), tree, prefilter, max_bytes=100)
    assert tree.files == [] and [e.path for e in tree.errors] == [path]
    assert "over the limit of 100 bytes" in tree.errors[0].message


# ---------------------------------------------------------------------------------------------
# The walk


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_links_out_of_the_tree_are_reported_not_followed(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    backend = write(tree, original())
    write(tmp_path / "outside", original())
    (tree / "root").symlink_to("/")
    (tree / "proc").symlink_to("/proc")
    (tree / "out").symlink_to("../outside")
    (tree / "out.py").symlink_to("../outside/backend.py")
    (tree / "inside").symlink_to(".")  # back into the tree: walked once, no error
    code, doc = cli_json([str(tree)])
    assert code == 1
    targets = {
        "root": "/",
        "proc": "/proc",
        "out": str((tmp_path / "outside").resolve()),
        "out.py": str((tmp_path / "outside" / "backend.py").resolve()),
    }
    assert sorted((e["path"], e["message"]) for e in doc["errors"]) == sorted(
        (
            str(tree / name),
            f"symbolic link to {target}, outside the scanned paths: not followed "
            "(`follow-links = true` in [tool.idxcheck] follows it)",
        )
        for name, target in targets.items()
    )
    assert json_findings(doc, str(tree)) == expected(original())
    assert json_findings(doc, backend) == expected(original())


def test_follow_links_follows_them(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    write(tree, original())
    write(tmp_path / "outside", original())
    (tree / "out").symlink_to("../outside")
    settings = tmp_path / "settings.toml"
    settings.write_text("follow-links = true\n", encoding="utf-8")
    config = build_config(load_config_file(str(settings)), Overrides())
    outcome = scan([str(tree)], config)
    assert outcome.result.errors == []
    linked = str(tree / "out" / "backend.py")
    assert sorted(
        (f.span.line, f.span.column, f.code)
        for f in outcome.result.findings
        if f.span.path == linked
    ) == expected(original())


def test_no_folder_is_walked_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two roots, one inside the other, and a link from the outer to the inner: each folder is
    # listed once, whichever route reaches it.
    outer = tmp_path / "outer"
    write(outer / "inner" / "deep", original())
    (outer / "again").symlink_to("inner")
    listed: list[str] = []
    real_scandir = os.scandir

    def counting(path: str) -> Any:
        listed.append(os.path.realpath(path))
        return real_scandir(path)

    monkeypatch.setattr(discover_module.os, "scandir", counting)
    found_files = list(discover([str(outer), str(outer / "inner")]))
    assert len(listed) == len(set(listed)) == 3, listed
    assert [c.path for c in found_files if isinstance(c, Candidate)] == [
        str(outer / "again" / "deep" / "backend.py")
    ]
