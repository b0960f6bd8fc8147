"""A class's tree put together from its chunks' trees (`idxcheck.source.chunks`) is the tree
libcst builds from the whole text: for every class a scan of a real release reads, and for
the shapes of text where libcst's ownership of the lines between statements is subtle."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from idxcheck.incremental import parse_store
from idxcheck.incremental.cache import Cache
from idxcheck.profiles.schema import load_profile
from idxcheck.source import files as source_module
from idxcheck.source.chunks import assembled, chunk_text, class_chunks
from idxcheck.source.discover import Candidate, discover
from idxcheck.source.files import SourceFile, parse_module
from idxcheck.source.prefilter import Prefilter
from idxcheck.source.tree import LoadedTree, load_file

from .realtree import sglang_tree


def _by_chunks(text: str) -> cst.Module | None:
    cut = class_chunks(text, ast.parse(text))
    if cut is None:
        return None
    return assembled([parse_module(chunk_text(i, chunk)) for i, chunk in enumerate(cut)])


def _same_tree(text: str) -> bool | None:
    """Whether the tree put together is the whole text's (None: the text is not cut)."""
    made = _by_chunks(text)
    if made is None:
        return None
    whole = parse_module(text)
    return (
        made.deep_equals(whole)
        and made.code == text
        and (made.default_indent, made.default_newline)
        == (whole.default_indent, whole.default_newline)
    )


SHAPES = {
    "comments and blank lines between methods": '''\
class A(Base):
    """Doc."""

    x = 1
    # about f

    def f(self):
        return 1
        # deeper: the end of f's block

    # same indent: before g
    @property
    def g(self):
        pass

        # deeper after a blank line
# column 0
    def h(self):
        if self.x:
            pass
    # the class's last comment

''',
    "statements on one line are not cut": "class A:\n    a = 1; b = 2\n    c = 3\n",
    "a continued line": "class A:\n    a = (1 +\n         2)\n    b = \\\n        3\n    c = 4\n",
    "a nested class and a comment at the end of the text": (
        "class A:\n    class B:\n        x = 1\n\n    def f(self):\n        pass\n# end"
    ),
    "two-space indentation": "class A:\n  def f(self):\n    return 1\n\n  def g(self):\n    return 2\n",
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_class_put_together_from_chunks_is_the_whole_texts_tree(name: str) -> None:
    assert _same_tree(SHAPES[name]) is True


def test_texts_that_are_not_cut() -> None:
    for text in (
        "class A:\r\n    a = 1\r\n    b = 2\r\n",  # carriage returns
        "class A:\n\ta = 1\n\tb = 2\n",  # tabs
        "class A:\n    a = 1\n",  # one statement
        "def f():\n    a = 1\n    b = 2\n",  # not a class
    ):
        assert class_chunks(text, ast.parse(text)) is None
    # Cut where the lines between statements go to the next one only: not before `g` nor
    # `h`, which follow comments indented deeper (the ends of `f` and `g`).
    text = SHAPES["comments and blank lines between methods"]
    assert len(class_chunks(text, ast.parse(text)) or []) == 3


@pytest.mark.network
def test_every_class_a_scan_of_a_release_reads_is_put_together_as_parsed() -> None:
    tree_path = sglang_tree("0.5.23")
    profile = load_profile("sglang")
    loaded = LoadedTree()
    for item in discover([str(tree_path)], ()):
        if isinstance(item, Candidate):
            load_file(item, loaded, Prefilter(profile))
    checked = 0
    for source in loaded.files:
        for block in source.blocks:
            if block.kind != "class":
                continue
            same = _same_tree(source.parse_text(block))
            assert same is not False, f"{source.path}: {block.name}"
            checked += same is True
    assert checked > 300, "not a vacuous test"


def test_a_scan_takes_the_chunks_of_an_edited_class_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = SHAPES["comments and blank lines between methods"]
    edited = text.replace("return 1", "return 2")
    cache = Cache(tmp_path / "cache")
    parsed: list[str] = []
    original = source_module.parse_module

    def parse(block_text: str) -> cst.Module:
        parsed.append(block_text)
        return original(block_text)

    monkeypatch.setattr(source_module, "parse_module", parse)
    trees = []
    for version in (text, text.replace("x = 1", "x = 2"), edited):
        source = SourceFile("a.py", version)
        with parse_store.parses_from(cache):
            trees.append(source.parse_block(source.blocks[0]))
    block_text = source.parse_text(source.blocks[0])
    cut = class_chunks(block_text, ast.parse(block_text))
    assert cut is not None
    index = next(i for i, chunk in enumerate(cut) if "return 2" in chunk)
    # The third text: its edited chunk is parsed, and the chunk of `x = 1`, which the second
    # text changed (its mark, from the first, turns into its tree); the others are stored.
    assert parsed[-2:] == [chunk_text(1, cut[1]), chunk_text(index, cut[index])]
    assert sum(1 for p in parsed if "return 2" in p) == 1
    assert trees[2].deep_equals(parse_module(block_text).body[0])
    cache.close()
