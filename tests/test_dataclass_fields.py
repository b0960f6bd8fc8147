"""Field order of a `@dataclass` (what a positional construction binds), read from CPython's
tree of the class's block, or of the whole module where the block's text does not parse as
the class alone."""

from __future__ import annotations

from idxcheck.source.files import SourceFile, locate_blocks
from idxcheck.source.index import DataclassIndex, dataclass_fields
from idxcheck.source.lines import split_lines

TEXT = """
import dataclasses
from typing import ClassVar


@dataclasses.dataclass(frozen=True)
class Metadata:
    cu_seqlens_q: object
    kind: ClassVar[str] = "m"
    max_seq_len_q: int = 1; page_table: object = None

    def width(self) -> int:
        return 1


class Plain:
    x: int
"""

SPLIT = '''
from dataclasses import dataclass


@dataclass
class Split:
    qo_indptr: object
    note = """
a line at column 0"""
    kv_indptr: object
'''


def _fields(text: str, name: str, line_scan: bool = False) -> tuple[str, ...] | None:
    """`line_scan`: the file's blocks as the line scan finds them, whatever their strings."""
    located = (locate_blocks(split_lines(text)), {}) if line_scan else None
    source = SourceFile("m.py", text, located=located)
    return DataclassIndex([source]).resolver(source)(name)


def test_fields_in_declaration_order_without_class_variables() -> None:
    assert _fields(TEXT, "Metadata") == ("cu_seqlens_q", "max_seq_len_q", "page_table")


def test_a_class_that_is_not_a_dataclass_has_none() -> None:
    source = SourceFile("m.py", TEXT)
    block = source.blocks_named("Plain")[0]
    assert dataclass_fields(source.cpython_class(block)[0]) is None
    assert _fields(TEXT, "Plain") is None  # not in the index at all


def test_a_block_cut_short_by_a_column_0_line_is_read_from_the_whole_module() -> None:
    # The line scan stops the block at the string; a block placed so (where its quotes do not
    # tell) is read from the whole module. The file's own blocks are CPython's.
    cut = locate_blocks(split_lines(SPLIT))
    assert [b.end_line for b in cut if b.name == "Split"] == [8]
    assert _fields(SPLIT, "Split", line_scan=True) == ("qo_indptr", "kv_indptr")
    whole = SourceFile("m.py", SPLIT).blocks_named("Split")[0]
    assert whole.end_line == len(SPLIT.splitlines())
    assert _fields(SPLIT, "Split") == ("qo_indptr", "kv_indptr")


def test_a_syntax_error_gives_no_fields() -> None:
    assert _fields(TEXT.replace("page_table: object", "page_table: object ="), "Metadata") is None
