"""The fast text scans give what the plain ones they replace give: blocks located in the text
against blocks located line by line, a pattern's alternatives against the pattern, the kernel
call search against its lookbehind pattern, the quoted-name search against one test per name,
and shared mode rewriters against a fresh rewriter."""

from __future__ import annotations

import gc
import re
from pathlib import Path

import pytest

from idxcheck.facts.kernels import _calls
from idxcheck.facts.modes import top_level_alternatives
from idxcheck.facts.tree import _quotes_any
from idxcheck.source.files import Block, SourceFile, locate_blocks, locate_blocks_in_text
from idxcheck.source.lines import cpython_newlines, split_lines
from idxcheck.sym.terms import (
    Atom,
    Cmp,
    Const,
    ModeIs,
    conj,
    disj,
    forget_specialisations,
    mode_rewriter,
    specialise_formula,
)

FIXTURES = Path("fixtures")
SOURCES = sorted(p for p in FIXTURES.rglob("*.py") if "bad" not in p.parts)

EDGE_TEXTS = [
    "",
    "class A:\n    pass",
    "class A:\n    pass\n\n\n",
    "@d\n@e(\n  x)\nclass A(B):\n  x = 1\n\n# c\n\ndef f():\n  pass\n   \n",
    "def f(): pass\nclass",
    "\n\nclass A: pass\n\n",
    "x\n\ndef f():\n\n  return 1\n\n\n",
    "async def g():\n    return 1\n)\ndef h():\n    pass\n",
    'class C:\n    s = """\nclass Inside:\n"""\n',
    "class W:\r\n    pass\r\n",  # carriage returns and form feeds: the line-by-line path
    "class V:\r    pass\r\x0c\r\x0cclass U:\r    pass\r",
    "class T:\n    x = 1  # \x0b\x1c\x85\u2028\n    y = 2\n",  # not line ends to CPython
]


@pytest.mark.parametrize(
    "text",
    [*(p.read_text() for p in SOURCES), *EDGE_TEXTS],
    ids=[*(str(p) for p in SOURCES), *(f"edge{i}" for i in range(len(EDGE_TEXTS)))],
)
def test_blocks_located_in_the_text_are_the_line_by_line_blocks(text: str) -> None:
    lines = split_lines(text)  # CPython's lines, of the text with CPython's line ends
    expected = locate_blocks(lines)
    in_text = locate_blocks_in_text(cpython_newlines(text))
    source = SourceFile("x.py", text, located=in_text or (expected, {}))
    assert source.blocks == expected
    for block in expected:
        assert source.text == cpython_newlines(text)
        assert source.header_text(block) == "".join(lines[block.start_line - 1 : block.header_line])
        assert source.block_text(block) == "".join(lines[block.start_line - 1 : block.end_line])
        assert source.block_text(block, decorators=False) == "".join(
            lines[block.header_line - 1 : block.end_line]
        )
    if "\r" in text:
        assert locate_blocks_in_text(text) is None


def test_a_block_that_ends_in_a_string_is_placed_by_cpython() -> None:
    # The line scan ends `C` inside its string and finds a class `Inside` there; the blocks
    # of the file are CPython's statements.
    text = EDGE_TEXTS[8]
    assert [b.name for b in locate_blocks(split_lines(text))] == ["C", "Inside"]
    assert SourceFile("x.py", text).blocks == [Block("class", "C", 1, 1, 4)]


@pytest.mark.parametrize(
    ("pattern", "branches"),
    [
        (r"ForwardMode\.X\b(?!_)|\.is_x\(", [r"ForwardMode\.X\b(?!_)", r"\.is_x\("]),
        (r"a|b(c|d)", ["a", "b(c|d)"]),
        (r"[|]x|y", ["[|]x", "y"]),
        (r"\|a|b", [r"\|a", "b"]),
        (r"[]|]|z", ["[]|]", "z"]),
        (r"[^]|]|z", ["[^]|]", "z"]),
        (r"(?:a|b)", ["(?:a|b)"]),
        (r"(?i)a|b", ["(?i)a|b"]),
    ],
)
def test_top_level_alternatives(pattern: str, branches: list[str]) -> None:
    assert top_level_alternatives(pattern) == branches
    for text in ("a", "b", "c", "d", "x", "y", "z", "|", "]", "ForwardMode.X", ".is_x(", "A"):
        whole = re.search(pattern, text) is not None
        assert whole == any(re.search(b, text) for b in branches), (pattern, text)


CALL_TEXTS = [
    "kern(x)",
    "def kern(x):\n    pass\n",
    "def kern(x): return kern (y)",
    "my_kern(x)",
    "obj.kern(x)",
    "kern\n(x)",
    "x = 1",
    "def  kern(x)",
    "ékern(x)",
]


@pytest.mark.parametrize("text", [*CALL_TEXTS, *(p.read_text() for p in SOURCES)])
def test_kernel_call_search_matches_the_lookbehind_pattern(text: str) -> None:
    for name in ("kern", "extend_attention_fwd", "decode_attention_fwd", "torch", "range"):
        old = re.search(rf"(?<!def )\b{re.escape(name)}\s*\(", text) is not None
        assert _calls(re.compile(rf"{re.escape(name)}\s*\("), text) == old, (name, text[:40])


@pytest.mark.parametrize(
    "text",
    ['x = "flashinfer"', 'x = "fa3x"', "x = 'fa3'", '"a"fa3"', '"trtllm_mla" "fa3"', ""],
)
def test_quoted_names_search_matches_one_test_per_name(text: str) -> None:
    for names in ({"flashinfer", "fa3", "trtllm_mla"}, {"fa3"}, set(), {"a.b", "x-y"}):
        expected = any(f'"{n}"' in text for n in names)
        assert _quotes_any(text, names) == expected, (text, names)


def test_shared_mode_rewriters_give_what_a_fresh_rewriter_gives() -> None:
    """Formulas are built, specialised, dropped and built again (so that ids are reused):
    the shared rewriter must never answer with the rewrite of a dead node."""
    forget_specialisations()
    try:
        for round_ in range(30):
            atoms = [Atom(f"a{round_}_{i}", f"a{i}") for i in range(5)]
            modes = ModeIs(frozenset({"EXTEND", "DECODE"}))
            formula = disj(
                conj(atoms[0], modes, Cmp("<", Const(round_), Const(7))),
                conj(atoms[1], atoms[2]),
                conj(ModeIs(frozenset({"TARGET_VERIFY"})), atoms[3]),
            )
            for mode in ("EXTEND", "DECODE", "TARGET_VERIFY", "IDLE"):
                assert specialise_formula(formula, mode) == mode_rewriter(mode).formula(formula)
            del formula, atoms, modes
            gc.collect()
    finally:
        forget_specialisations()
