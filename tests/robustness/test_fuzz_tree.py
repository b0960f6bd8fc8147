"""A tree of random files beside a known-bad backend: random bytes under random names (bytes
that are not UTF-8, control characters, odd Unicode), some of them Python-like enough to pass
the prefilter. Scanned with the cache off and on, the backend's findings never change, the scan
returns (every bad file is at most a per-file error), and nothing is written outside the work
folder: each write the scan makes is watched through an audit hook."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from idxcheck.app.api import scan
from idxcheck.model.config import Config
from idxcheck.model.outcome import Scan

from ..conftest import FIXTURES
from .conftest import FUZZ

BUG = FIXTURES / "bugs" / "eagle_draft_extend_v2.py"
BACKEND = b"backend.py"
# Examples are whole scans (twice each): a few, unless IDXCHECK_FUZZ_EXAMPLES asks for more.
TREE_FUZZ = settings(FUZZ, max_examples=int(os.environ.get("IDXCHECK_FUZZ_EXAMPLES", 8)))

# Pieces of file names: bytes that are not UTF-8, control characters, shell and glob
# characters, right-to-left override, line separators, a surrogate-free astral character.
NAME_PIECES = [
    b"\xff",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\x80abc",
    b"\n",
    b"\r",
    b"\t",
    b"\x1b[31m",
    b"\x7f",
    b" ",
    b"*",
    b"?",
    b"[",
    b"-",
    b"~",
    b"$HOME",
    b"..",
    b"%s",
    b"\\",
    "é".encode(),
    "\u202e".encode(),
    "\u2028".encode(),
    "\u0085".encode(),
    "\ufeff".encode(),
    "\U0001d518".encode(),  # a mathematical Fraktur U
    "后端".encode(),
    b"a",
    b"x_",
]

# Pieces of file contents: the prefilter's words (so that some files are read as Python),
# headers, bytes that no encoding or parser wants, odd line ends and indentation, coding
# cookies and suppression comments. No runner, mode enum or tree-fact words: those could
# rightly change what the backend is checked against.
TEXT_PIECES = [
    b"qo_indptr",
    b"kv_indptr",
    b"max_extend_len",
    b"cu_seqlens_q",
    b" = torch.arange(0, bs * 3 + 1, step=3)",
    b"class DraftExtendBackend:\n",
    b"class X:\n",
    b"    def f(self, bs):\n",
    b"        ",
    b"\t",
    b"self.",
    b"\n",
    b"\r",
    b"\r\n",
    b"\f",
    b"\x0b",
    b"\x00",
    b"\xff\xfe",
    b"\xef\xbb\xbf",
    b"\xe9",
    "\u2028".encode(),
    "\x85".encode(),
    b"# -*- coding: latin-1 -*-\n",
    b"# coding: klingon\n",
    b"# idxcheck: ignore[IDX001] why\n",
    b"# idxcheck: ignore\n",
    b'"""',
    b"(" * 50,
    b"elif x:\n",
]

names = st.lists(st.sampled_from(NAME_PIECES), min_size=1, max_size=6).map(b"".join)
contents = st.one_of(
    st.binary(max_size=400),
    st.lists(st.one_of(st.sampled_from(TEXT_PIECES), st.binary(max_size=8)), max_size=30).map(
        b"".join
    ),
)
entries = st.lists(
    st.tuples(
        st.sampled_from([b"", b"sub", b"\xff\xfe", "é".encode(), b"\n"]),  # the folder
        names,
        st.sampled_from([b".py", b".py", b".pyi", b""]),  # most are read
        contents,
    ),
    max_size=8,
)


@contextmanager
def writes_watched(allowed: Path) -> Iterator[list[str]]:
    """Within, every file or folder the process creates, opens for writing, renames, removes
    or changes outside `allowed` is listed (through the audit events CPython raises)."""
    global _HOOKED
    if not _HOOKED:  # added once, for good (an audit hook cannot be removed)
        sys.addaudithook(_audit)
        _HOOKED = True
    outside: list[str] = []
    root = os.path.realpath(allowed) + os.sep
    _WATCHERS.append((root, outside))
    try:
        yield outside
    finally:
        _WATCHERS.remove((root, outside))


_WATCHERS: list[tuple[str, list[str]]] = []
_HOOKED = False
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CHANGING = {
    "os.mkdir": (0,),
    "os.rename": (0, 1),
    "os.replace": (0, 1),
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.symlink": (1,),
    "os.link": (1,),
    "os.truncate": (0,),
    "os.chmod": (0,),
    "os.utime": (0,),
    "shutil.rmtree": (0,),
    "shutil.copyfile": (1,),
    "shutil.move": (1,),
}


def _path_of(value: Any) -> str | None:
    if isinstance(value, (str, bytes, os.PathLike)):
        return os.fsdecode(value)
    return None  # a file descriptor: opened (and watched) before


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _WATCHERS:
        return
    paths: list[str | None] = []
    if event == "open":
        path, mode, flags = args
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writing:
            paths.append(_path_of(path))
    elif event == "sqlite3.connect":
        paths.append(_path_of(args[0]))
    elif event in _CHANGING:
        paths.extend(_path_of(args[i]) for i in _CHANGING[event] if i < len(args))
    for path in paths:
        if path is None or path == ":memory:":
            continue
        real = os.path.realpath(path)
        for root, outside in _WATCHERS:
            if not (real + os.sep).startswith(root):
                outside.append(f"{event}: {real}")


def findings_of(outcome: Scan, path: str) -> list[tuple[int, int, str, str, str]]:
    return sorted(
        (f.span.line, f.span.column, f.code, f.mode, f.message)
        for f in outcome.result.findings
        if f.span.path == path
    )


def build_tree(work: Path, files: list[tuple[bytes, bytes, bytes, bytes]]) -> str:
    tree = os.path.join(os.fsencode(work), b"tree")
    os.makedirs(tree)
    shutil.copyfile(BUG, os.path.join(tree, BACKEND))
    for folder, name, suffix, data in files:
        where = os.path.join(tree, folder) if folder else tree
        full = os.path.join(where, name + suffix)
        if name in (b".", b"..") or os.path.exists(full) or full.endswith(b"/" + BACKEND):
            continue
        try:
            os.makedirs(where, exist_ok=True)
            with open(full, "wb") as handle:
                handle.write(data)
        except OSError:
            continue  # a name this file system refuses: not a file of the tree
    return os.fsdecode(tree)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[int, int, str, str, str]]:
    work = tmp_path_factory.mktemp("reference")
    tree = build_tree(work, [])
    found = findings_of(scan([tree], Config(jobs=1)), os.path.join(tree, "backend.py"))
    assert {code for _, _, code, _, _ in found} == {"IDX001", "IDX002"}
    return found


@pytest.fixture(scope="module")
def work_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where each example makes its work folder (Hypothesis runs many in one test call)."""
    return tmp_path_factory.mktemp("trees")


def check_tree(
    root: Path,
    files: list[tuple[bytes, bytes, bytes, bytes]],
    reference: list[tuple[int, int, str, str, str]],
) -> None:
    work = Path(tempfile.mkdtemp(dir=root))
    tree = build_tree(work, files)
    backend = os.path.join(tree, "backend.py")
    listed = sorted(os.walk(tree))
    for cache in (None, str(work / "cache")):
        with writes_watched(work) as outside:
            outcome = scan([tree], Config(cache_dir=cache, jobs=1))
        assert outside == [], outside
        assert findings_of(outcome, backend) == reference, outcome.result.errors
        for error in outcome.result.errors:
            assert error.message and "internal" not in error.message.lower(), error
    assert sorted(os.walk(tree)) == listed  # the tree itself is left as it was


def utf8_paths(files: list[tuple[bytes, bytes, bytes, bytes]]) -> bool:
    try:
        for folder, name, suffix, _ in files:
            (folder + name + suffix).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@TREE_FUZZ
@given(files=entries)
def test_random_files_beside_a_backend(
    files: list[tuple[bytes, bytes, bytes, bytes]],
    work_root: Path,
    reference: list[tuple[int, int, str, str, str]],
) -> None:
    check_tree(work_root, files, reference)


# Characters CPython reads as ordinary in a comment, with the ones `str.splitlines` breaks at.
COMMENT_CHARS = st.one_of(
    st.sampled_from(["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\t"]),
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x00"),
)


@TREE_FUZZ
@given(line=st.integers(min_value=0), junk=st.text(COMMENT_CHARS, min_size=1, max_size=12))
def test_random_comment_in_the_backend(
    line: int, junk: str, work_root: Path, reference: list[tuple[int, int, str, str, str]]
) -> None:
    # A comment of random characters at the end of one of the backend's lines: no line
    # moves, so the findings are the backend's own (line, column, code, mode and message).
    lines = BUG.read_text(encoding="utf-8").split("\n")
    line %= len(lines) - 1
    if lines[line].rstrip().endswith("\\") or "idxcheck:" in junk.lower():
        return
    lines[line] += "  # " + junk
    work = Path(tempfile.mkdtemp(dir=work_root))
    tree = build_tree(work, [])
    with open(os.path.join(tree, "backend.py"), "w", encoding="utf-8", newline="") as handle:
        handle.write("\n".join(lines))
    outcome = scan([tree], Config(jobs=1))
    assert outcome.result.errors == []
    assert findings_of(outcome, os.path.join(tree, "backend.py")) == reference


NOT_UTF8 = [piece for piece in NAME_PIECES if not utf8_paths([(b"", piece, b"", b"")])]


def test_files_with_names_that_are_not_utf8(
    work_root: Path, reference: list[tuple[int, int, str, str, str]]
) -> None:
    # Every such piece at once, whatever the random trees above happen to draw.
    data = BUG.read_bytes()
    files = [(b"", piece, b".py", data) for piece in NOT_UTF8]
    files += [(b"\xff\xfe", b"inner", b".py", data), (b"\xff\xfe", b"x", b".pyi", b"\xff")]
    check_tree(work_root, files, reference)


def test_the_watch_sees_a_write_outside(tmp_path: Path) -> None:
    # The watch itself: a write outside the work folder is seen, one inside is not.
    inside, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    inside.mkdir()
    with writes_watched(inside) as outside:
        (inside / "ok.txt").write_text("ok")
        elsewhere.mkdir()
        with open(elsewhere / "x.txt", "w") as handle:
            handle.write("x")
    assert outside == [
        f"os.mkdir: {elsewhere.resolve()}",
        f"open: {(elsewhere / 'x.txt').resolve()}",
    ]
