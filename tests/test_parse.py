"""The extractor parses without libcst's per-node validation: the same tree as libcst's own
parse, and validation back on for trees built by hand, after a parse and after a failed one."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from idxcheck.source.files import parse_module


def test_the_tree_is_the_one_libcst_builds_with_validation() -> None:
    paths = [
        p
        for d in ("bugs", "correct", "runtime", "kernels")
        for p in Path("fixtures", d).rglob("*.py")
    ]
    assert len(paths) > 10
    for path in sorted(paths):
        text = path.read_text()
        assert parse_module(text).deep_equals(cst.parse_module(text)), path


def test_validation_is_back_on_after_a_parse_and_after_a_syntax_error() -> None:
    parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("def (:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
