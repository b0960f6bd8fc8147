"""Each analysed block's share of its file's cached part (`idxcheck.incremental.parts`): after
a code edit in one class of a file, the file's other classes are not analysed again where
their shares still hold, and every scan gives what an uncached scan gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from idxcheck.app.run import scan
from idxcheck.check import analyse
from idxcheck.model.config import Config
from idxcheck.report.json_format import to_dict

FIXTURES = Path("fixtures")
BUGGY = FIXTURES / "bugs" / "eagle_draft_extend_v2.py"
FIXED = FIXTURES / "correct" / "eagle_full_fix.py"
STRIDE = "per_req = self.speculative_num_steps + 1"
# The same width, written otherwise: the code changes, the lines and the verdicts do not.
STRIDE_AGAIN = "per_req = 1 + self.speculative_num_steps"
FIXED_WIDTH = "return self.speculative_num_steps + 1"
ROWS = "        qo_indptr = self.qo_indptr[: bs + 1]\n"


def _json(tree: Path, cache_dir: Path | None) -> dict[str, Any]:
    config = Config(cache_dir=str(cache_dir) if cache_dir else None, jobs=1)
    doc = to_dict(scan([str(tree)], config))
    doc.pop("stats", None)  # seconds differ run to run
    return doc


@pytest.fixture
def analysed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the classes analysed, in order."""
    seen: list[str] = []
    original = analyse.analyse_class

    def counting(cls: Any, ctx: Any) -> Any:
        seen.append(cls.name)
        return original(cls, ctx)

    monkeypatch.setattr(analyse, "analyse_class", counting)
    return seen


def _fixed_class() -> str:
    """The fixed backend's class, without the dataclass of its file (the buggy file has one)."""
    text = FIXED.read_text()
    return text[text.index("class FixedBackend") :]


def _pair(tmp_path: Path, between: str = "") -> Path:
    """One file holding the buggy backend and, after it, the fixed one: two classes with sites,
    one of them with findings."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "pair.py").write_text(BUGGY.read_text() + "\n\n" + between + _fixed_class())
    return tree


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"the fixture's `{old}` moved: update this test"
    path.write_text(text.replace(old, new))


def test_an_edit_in_one_class_keeps_the_others_share(tmp_path: Path, analysed: list[str]) -> None:
    tree = _pair(tmp_path)
    cache_dir = tmp_path / "cache"
    before = _json(tree, cache_dir)
    assert analysed == ["DraftExtendBackend", "FixedBackend"]
    assert before["findings"] and all(f["line"] < 60 for f in before["findings"])
    analysed.clear()
    _edit(tree / "pair.py", STRIDE, STRIDE_AGAIN)
    after = _json(tree, cache_dir)
    # The fixed backend's share (sites, no finding) came from the cache.
    assert analysed == ["DraftExtendBackend"]
    assert after == _json(tree, None)
    assert [(f["code"], f["line"]) for f in after["findings"]] == [
        (f["code"], f["line"]) for f in before["findings"]
    ]


def test_a_share_with_findings_is_analysed_again(tmp_path: Path, analysed: list[str]) -> None:
    """The readers analysis of a finding reads the file's other classes: an edit in any of them
    analyses the class with findings again."""
    tree = _pair(tmp_path)
    cache_dir = tmp_path / "cache"
    _json(tree, cache_dir)
    analysed.clear()
    _edit(tree / "pair.py", FIXED_WIDTH, "return 1 + self.speculative_num_steps")
    after = _json(tree, cache_dir)
    assert analysed == ["DraftExtendBackend", "FixedBackend"]
    assert after == _json(tree, None)


def test_moved_lines_and_module_code_analyse_the_class_again(
    tmp_path: Path, analysed: list[str]
) -> None:
    """A class's share holds its places: a line added above it analyses it again; so does an
    edit of the code outside the classes, which every class's analysis may read."""
    tree = _pair(tmp_path)
    cache_dir = tmp_path / "cache"
    _json(tree, cache_dir)
    analysed.clear()
    _edit(tree / "pair.py", ROWS, ROWS + "        per_req = per_req\n")
    after = _json(tree, cache_dir)
    assert analysed == ["DraftExtendBackend", "FixedBackend"]
    assert after == _json(tree, None)
    analysed.clear()
    _edit(tree / "pair.py", "\nimport torch\n", "\nimport torch\nimport math\n")
    _edit(tree / "pair.py", "        per_req = per_req\n", "")
    after = _json(tree, cache_dir)
    assert analysed == ["DraftExtendBackend", "FixedBackend"]
    assert after == _json(tree, None)


def test_a_subclass_in_the_same_file_shares_places_and_is_analysed_with_its_base(
    tmp_path: Path, analysed: list[str]
) -> None:
    """A subclass of the fixed backend in the same file reaches the base's methods: the two
    shares touch the same places, so neither is stored apart."""
    tree = _pair(tmp_path)
    (tree / "pair.py").write_text(
        (tree / "pair.py").read_text()
        + "\n\nclass FixedDraftBackend(FixedBackend):\n"
        + "    def forward_extend(self, q, k, v, layer, forward_batch):\n"
        + "        return self.forward_metadata.qo_indptr\n"
    )
    cache_dir = tmp_path / "cache"
    _json(tree, cache_dir)
    assert analysed == ["DraftExtendBackend", "FixedBackend", "FixedDraftBackend"]
    analysed.clear()
    _edit(tree / "pair.py", STRIDE, STRIDE_AGAIN)
    after = _json(tree, cache_dir)
    assert analysed == ["DraftExtendBackend", "FixedBackend", "FixedDraftBackend"]
    assert after == _json(tree, None)


def test_an_edit_of_a_class_another_reads_analyses_the_reader_again(
    tmp_path: Path, analysed: list[str]
) -> None:
    """The fixed backend takes a constant from a base class of the same file, which has no
    methods: an edit of the base's constant analyses the backend again."""
    tree = _pair(tmp_path, "class WidthDefaults:\n    extra_rows = 1\n\n\n")
    _edit(tree / "pair.py", "class FixedBackend:", "class FixedBackend(WidthDefaults):")
    _edit(tree / "pair.py", FIXED_WIDTH, "return self.speculative_num_steps + self.extra_rows")
    cache_dir = tmp_path / "cache"
    before = _json(tree, cache_dir)
    assert analysed == ["DraftExtendBackend", "FixedBackend"]
    analysed.clear()
    _edit(tree / "pair.py", "extra_rows = 1", "extra_rows = 2")
    after = _json(tree, cache_dir)
    # The buggy backend is analysed again for its findings; the fixed one for its lookup.
    assert analysed == ["DraftExtendBackend", "FixedBackend"]
    assert after == _json(tree, None)
    assert len(after["findings"]) > len(before["findings"])  # the new width is read
