"""Bad input: each item of the corpus (fixtures/bad/ and tests/robustness/corpus.py) gives a
clear per-file error or a correct result, and scanning it next to fixtures/bugs leaves the
findings on fixtures/bugs exactly as they are without it. The command line exits 1 on per-file
errors and prints no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from idxcheck.app.run import scan, scan_source
from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult

from ..conftest import FIXTURES, ROOT
from . import corpus

BAD = FIXTURES / "bad"
BUGS = "fixtures/bugs"


def key(result: ScanResult) -> set[tuple[str, int, int, str, str, str]]:
    return {
        (f.span.path, f.span.line, f.span.column, f.code, f.mode, f.message)
        for f in result.findings
    }


def errors(result: ScanResult) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in result.errors]


@pytest.fixture(scope="module")
def reference() -> ScanResult:
    return scan([BUGS])


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("bad")
    yield folder
    for path in folder.rglob("*"):  # let pytest clean up what chmod made unremovable
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def rel(path: Path) -> str:
    return os.path.relpath(path, ROOT)


def assert_alongside(
    bad: str, reference: ScanResult, expected_errors: list[tuple[str, str]]
) -> ScanResult:
    """Scan `bad` with fixtures/bugs: the bugs' findings are unchanged and the only errors are
    the expected ones (path, a fragment of the message)."""
    result = scan([bad, BUGS])
    assert {k for k in key(result) if k[0].startswith(BUGS)} == key(reference)
    got = errors(result)
    assert len(got) == len(expected_errors), got
    for (path, message), (want_path, fragment) in zip(
        sorted(got), sorted(expected_errors), strict=True
    ):
        assert path == want_path and fragment in message, (path, message)
    return result


# ---------------------------------------------------------------------------------------------
# Hand-written: fixtures/bad/

HAND_WRITTEN = [
    ("syntax_error.py", "syntax error at line 12, column 38: '(' was never closed"),
    ("python2.py", "syntax error at line 12, column 9: Missing parentheses in call to 'print'"),
    ("latin1_undeclared.py", "cannot decode as utf-8"),
    ("unknown_coding.py", "bad encoding declaration: unknown encoding: klingon"),
    ("nul_byte.py", "binary file (contains a NUL byte)"),
]


@pytest.mark.parametrize(("name", "message"), HAND_WRITTEN, ids=[n for n, _ in HAND_WRITTEN])
def test_hand_written_bad_file(name: str, message: str, reference: ScanResult) -> None:
    path = f"fixtures/bad/{name}"
    alone = scan([path])
    assert errors(alone) == [(path, errors(alone)[0][1])] and message in errors(alone)[0][1]
    assert alone.findings == []
    assert_alongside(path, reference, [(path, message)])


def test_empty_file_is_clean(reference: ScanResult) -> None:
    result = scan(["fixtures/bad/empty.py"])
    assert result.errors == [] and result.findings == [] and result.stats.files == 1
    assert scan_source("", "empty.py").errors == []
    assert_alongside("fixtures/bad/empty.py", reference, [])


def test_recursive_predicate_is_an_error_and_the_rest_of_the_enum_is_read(
    tmp_path: Path,
) -> None:
    # With an enum in the tree the mode model is read from it: compare with the well-formed
    # enum of the fixtures, which the recursive one extends.
    enum = str(corpus.recursive_enum(tmp_path))
    good = scan([BUGS, "fixtures/runtime"])
    bad = scan([BUGS, enum])
    assert bad.mode_model_source == enum
    assert key(bad) == {(p, ln, c, code, m, msg) for p, ln, c, code, m, msg in key(good)}
    assert errors(bad) == [
        (enum, "predicate `ForwardMode.is_forever` recurses (is_forever -> is_forever)"),
        (
            enum,
            "predicate `ForwardMode.is_speculative` recurses (is_speculative -> is_verify_like -> is_speculative)",
        ),
    ]


def test_whole_bad_folder_next_to_the_bugs(reference: ScanResult) -> None:
    result = scan(["fixtures/bad", BUGS])
    assert len(result.errors) == len(HAND_WRITTEN)
    assert {e.path for e in result.errors} >= {f"fixtures/bad/{n}" for n, _ in HAND_WRITTEN}


# ---------------------------------------------------------------------------------------------
# Generated


@pytest.mark.parametrize("shape", sorted(corpus.DEEP_SHAPES))
def test_expression_nested_5000_deep(shape: str, tmp_path: Path, reference: ScanResult) -> None:
    # Each shape once crashed or stalled something: libcst's parser (SIGSEGV on brackets,
    # lambdas and long `and` chains), its code generation (RecursionError), the interpreter.
    # A crash of the parser takes the process with it, so this runs the command line.
    path = rel(corpus.deep_expression(tmp_path, shape))
    proc = cli(path, BUGS, "--format", "json")
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    doc = json.loads(proc.stdout)
    assert [e["path"] for e in doc["errors"]] == [path]
    message = doc["errors"][0]["message"]
    assert "nested too deeply" in message or "too long to parse" in message, message
    found = {(f["path"], f["line"], f["code"], f["mode"], f["message"]) for f in doc["findings"]}
    assert found == {(p, line, code, mode, msg) for p, line, _, code, mode, msg in key(reference)}


def test_nesting_that_python_accepts_is_analysed(generated: Path) -> None:
    # 150 brackets (CPython allows 200) and a 600-deep lambda are real code: parsed, and the
    # site still found; the lambda's depth only costs the finding its exact column.
    head = (
        corpus.BACKEND_HEAD
        + "\n    def init_forward_metadata(self, forward_batch):\n"
        + "        bs = forward_batch.batch_size\n"
        + "        if forward_batch.forward_mode.is_target_verify():\n"
    )
    brackets = head + "            n = " + "(" * 150 + "self.steps + 1" + ")" * 150 + "\n"
    brackets += "            self.qo_indptr = torch.arange(0, bs * n + 1, step=n)\n"
    lam = head + "            junk = " + "lambda: " * 600 + "0\n"
    lam += "            self.qo_indptr = torch.arange(0, bs * (self.steps + 1) + 1, step=self.steps + 1)\n"
    for text in (brackets, lam):
        result = scan_source(text, "nested.py")
        assert result.errors == []
        assert [(f.code, f.mode) for f in result.findings] == [("IDX001", "TARGET_VERIFY")]


def test_five_megabyte_file(generated: Path, reference: ScanResult) -> None:
    path = corpus.big_file(generated)
    assert path.stat().st_size >= 5_000_000
    result = assert_alongside(rel(path), reference, [])
    own = [(f.span.line, f.code) for f in result.findings if f.span.path == rel(path)]
    assert own == [(25, "IDX002")]  # the backend at its head, as in fixtures/bugs


def test_ten_thousand_sites(generated: Path, reference: ScanResult) -> None:
    path, expected = corpus.many_sites(generated)
    result = scan([rel(path), BUGS], Config())
    assert result.errors == []
    own = {(f.span.line, f.code) for f in result.findings if f.span.path == rel(path)}
    assert own == expected and len(expected) == 10
    assert key(result) - {k for k in key(result) if k[0] == rel(path)} == key(reference)
    assert result.stats.sites >= 10_000 + reference.stats.sites


def test_symlink_loop(generated: Path, reference: ScanResult) -> None:
    loop = corpus.symlink_loop(generated)
    a, b, parent = rel(loop / "a.py"), rel(loop / "b.py"), rel(loop / "parent")
    # The link to the parent leads out of the scanned folder: reported, not followed.
    outside = "outside the scanned paths: not followed"
    assert_alongside(rel(loop), reference, [(a, "link loop"), (b, "link loop"), (parent, outside)])
    # Named directly, a looping link is not a file to read.
    assert_alongside(a, reference, [(a, "broken link or special file")])


def test_unreadable_file(generated: Path, reference: ScanResult) -> None:
    path, message = corpus.unreadable(generated)
    assert_alongside(rel(path), reference, [(rel(path), message)])


def test_chmod_000_file(generated: Path, reference: ScanResult) -> None:
    path = corpus.chmod_000(generated)
    result = scan([rel(path), BUGS])
    if os.geteuid() == 0:
        # Root reads a mode-000 file (CAP_DAC_OVERRIDE): it is scanned like any other, which is
        # the right result; the unreadable case is covered by test_unreadable_file.
        assert result.errors == []
        assert [(f.span.line, f.code) for f in result.findings if f.span.path == rel(path)] == [
            (25, "IDX002")
        ]
    else:
        assert errors(result) == [(rel(path), "cannot read: Permission denied")]
        assert key(result) == key(reference)


def test_fifo_is_not_opened(generated: Path, reference: ScanResult) -> None:
    # Opening a FIFO for reading would block until a writer comes: it must not be opened.
    path = corpus.fifo(generated)
    assert_alongside(rel(path), reference, [(rel(path), "not a regular file")])
    assert_alongside(rel(path.parent), reference, [(rel(path), "not a regular file")])


def test_directory_named_like_a_python_file(generated: Path, reference: ScanResult) -> None:
    folder = corpus.dir_named_like_a_file(generated)
    result = assert_alongside(rel(folder), reference, [])
    inner = rel(folder / "inner.py")
    assert [
        (f.span.path, f.span.line, f.code) for f in result.findings if f.span.path == inner
    ] == [(inner, 25, "IDX002")]


def test_path_that_does_not_exist(reference: ScanResult) -> None:
    assert_alongside(
        "no/such/backend.py", reference, [("no/such/backend.py", "no such file or directory")]
    )


def test_forward_mode_enum_with_300_members(generated: Path) -> None:
    enum = corpus.big_enum(generated)
    good = scan([BUGS, "fixtures/runtime"])
    big = scan([BUGS, rel(enum)])
    assert big.errors == []
    assert big.mode_model_source == rel(enum)
    assert key(big) == key(good)


# ---------------------------------------------------------------------------------------------
# The command line: exit codes, no traceback


def cli(*args: str, debug: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "idxcheck", *(["--debug"] if debug else []), "scan", *args]
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


def test_cli_on_the_whole_corpus(tmp_path: Path) -> None:
    for shape in sorted(corpus.DEEP_SHAPES):
        corpus.deep_expression(tmp_path, shape)
    corpus.symlink_loop(tmp_path)
    corpus.unreadable(tmp_path)
    corpus.fifo(tmp_path)
    corpus.dir_named_like_a_file(tmp_path)
    corpus.recursive_enum(tmp_path)
    proc = cli("fixtures/bad", rel(tmp_path), BUGS, "no/such/path.py", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    doc = json.loads(proc.stdout)
    recursive_predicates = 2
    expected = len(HAND_WRITTEN) + recursive_predicates + len(corpus.DEEP_SHAPES) + 2 + 1 + 1 + 1
    assert len(doc["errors"]) == expected
    proc = cli("fixtures/bad", rel(tmp_path), "--format", "text", debug=True)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr  # per-file errors are not internal errors
    for path in tmp_path.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_cli_exit_codes() -> None:
    assert cli("fixtures/bad/empty.py").returncode == 0
    assert cli("fixtures/correct").returncode == 0
    assert cli("fixtures/bad/nul_byte.py").returncode == 1  # a per-file error
    assert cli(BUGS).returncode == 1  # findings
    usage = cli(BUGS, "--format", "nope")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
