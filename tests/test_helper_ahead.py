"""What a pre-commit run's helper (`idxcheck.parallel.workers._AheadParser`) does while it waits
for the files to analyse, beside parsing their classes: it reads the focused files' constants
once for every worker it will fork and lends them, with the texts it read, to the scan's copies
of the same bytes; and it parses ahead the classes the last run of the same files was hinted.
Each is checked against what the scan would compute itself."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from idxcheck.incremental.cache import Cache, solver_version
from idxcheck.parallel import workers
from idxcheck.source import files as source_module
from idxcheck.source.files import SourceFile, data_digest, texts_left_out
from idxcheck.source.modules import CONSTANT_READINGS, module_constant, module_constants

TEXT = (
    "LIMIT = 1 << 4\n"
    "WIDTH = 3\n"
    "WIDTH_TOO = 5\n"
    "WIDTH_TOO = 6\n"  # bound twice: no constant
    "\n"
    "class Backend:\n"
    "    def forward(self, x):\n"
    "        return x[: LIMIT * WIDTH]\n"
)


def _scan_copy(path: Path) -> SourceFile:
    """The file as a scan hands it to its helper: read from disk, pickled without its text."""
    data = path.read_bytes()
    source = SourceFile.from_bytes(str(path), data)
    source.data_digest = data_digest(data)
    with texts_left_out():
        copy: SourceFile = pickle.loads(pickle.dumps(source))
    assert copy._text is None
    return copy


def _parser() -> tuple[workers._AheadParser, int, int]:
    read_end, write_end = os.pipe()
    return workers._AheadParser(read_end), read_end, write_end


def test_the_focused_files_constants_are_read_once_and_lent_to_the_same_bytes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "backend.py"
    path.write_text(TEXT)
    parser, read_end, write_end = _parser()
    try:
        parser.read_ahead([str(path), str(tmp_path / "missing.py")])
        scanned = _scan_copy(path)
        assert not scanned.readings
        parser.lend([scanned])
        assert sorted(scanned.readings) == sorted(CONSTANT_READINGS)
        assert scanned._text == TEXT  # taken, not read from the file again
        # What the scan's copy holds is what it computes itself from the text.
        fresh = SourceFile(str(path), TEXT)
        assert module_constants(scanned) == module_constants(fresh) == {"LIMIT": 16, "WIDTH": 3}
        assert module_constant(scanned, "WIDTH_TOO") is None
        # A file changed since the helper read it takes nothing.
        path.write_text(TEXT.replace("WIDTH = 3", "WIDTH = 4"))
        changed = _scan_copy(path)
        parser.lend([changed])
        assert not changed.readings and changed._text is None
        assert module_constants(changed)["WIDTH"] == 4
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_constants_are_not_read_once_a_message_is_here(tmp_path: Path) -> None:
    path = tmp_path / "backend.py"
    path.write_text(TEXT)
    parser, read_end, write_end = _parser()
    try:
        os.write(write_end, b"x")  # the files to analyse come first
        parser.read_ahead([str(path)])
        scanned = _scan_copy(path)
        parser.lend([scanned])
        assert not scanned.readings
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_file_borrows_only_from_the_same_bytes() -> None:
    one = SourceFile.from_bytes("a.py", TEXT.encode())
    other = SourceFile.from_bytes("a.py", TEXT.encode())
    module_constants(one)
    assert not other.borrow(one, CONSTANT_READINGS)  # no digest known: nothing is taken
    one.data_digest = other.data_digest = data_digest(TEXT.encode())
    other.readings["constants"] = (("LIMIT", 1),)  # its own reading stays
    assert other.borrow(one, CONSTANT_READINGS)
    assert other.readings["constants"] == (("LIMIT", 1),)
    assert "imports" not in other.readings  # only the readings named


def test_the_last_runs_hint_is_parsed_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pre-commit run keeps its hint (`_store_hints`); the next run of the same files reads it
    back (`_stored_hints`) and parses those classes before its own hint comes. Another set of
    files, or an entry that does not load as a hint, gives none."""
    monkeypatch.chdir(tmp_path)
    base = tmp_path / "base.py"
    base.write_text("class Base:\n    def f(self):\n        return 1\n")
    focus = [str(tmp_path / "child.py")]
    wanted: list[workers.Wanted] = [(str(base), (1, 3))]
    directory = str(tmp_path / "cache")
    workers._store_hints(directory, focus, wanted)
    cache = Cache(Path(directory), solver_version())
    try:
        assert workers._stored_hints(cache, focus) == wanted
        assert workers._stored_hints(cache, [str(tmp_path / "other.py")]) == []
        parser, read_end, write_end = _parser()
        try:
            source_module._parsed_ahead.clear()
            parser.parse(workers._stored_hints(cache, focus))
            assert list(source_module._parsed_ahead) == [base.read_text()]
        finally:
            source_module._parsed_ahead.clear()
            os.close(read_end)
            os.close(write_end)
        cache.put_blob(workers._hints_key(cache, focus), pickle.dumps({"not": "a hint"}))
        assert workers._stored_hints(cache, focus) == []
    finally:
        cache.close()
