"""The static core on real SGLang releases (downloaded from PyPI at test time)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from idxcheck.app.run import scan

from .realtree import sglang_tree

pytestmark = pytest.mark.network

FIXED = re.compile(
    r"\(\s*self\.num_draft_tokens\s*if forward_mode\.is_draft_extend_v2\(\)\s*"
    r"else self\.speculative_num_steps \+ 1\s*\)"
)
OLD = "self.speculative_num_steps + 1"


@pytest.fixture(scope="module")
def triton_0513() -> str:
    return (sglang_tree("0.5.13") / "srt/layers/attention/triton_backend.py").read_text()


def variant(text: str, revert: set[int]) -> str:
    """The backend with the fixed expressions at the given occurrences (0: the stride in
    `_update_draft_extend_buffers`, 1: `max_extend_len`) put back to the old one."""
    matches = list(FIXED.finditer(text))
    assert len(matches) == 2, "the two fixed expressions of the real fix"
    for index in sorted(revert, reverse=True):
        m = matches[index]
        text = text[: m.start()] + OLD + text[m.end() :]
    return text


def scan_text(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "triton_backend.py"
    path.write_text(text)
    return scan([str(path)])


def draft_extend_v2(findings):  # type: ignore[no-untyped-def]
    return sorted((f.code, f.mode) for f in findings if f.mode == "DRAFT_EXTEND_V2")


def test_both_reverted_flags_both_sites(tmp_path: Path, triton_0513: str) -> None:
    result = scan_text(tmp_path, variant(triton_0513, {0, 1}))
    assert draft_extend_v2(result.findings) == [
        ("IDX001", "DRAFT_EXTEND_V2"),
        ("IDX002", "DRAFT_EXTEND_V2"),
    ]
    for finding in result.findings:
        assert finding.counterexample["speculative_eagle_topk"] > 1
        assert "topk > 1" in finding.needs_text
        assert any("profile default" in r.message for r in finding.related)
    stride = next(f for f in result.findings if f.code == "IDX001")
    assert stride.function == "TritonAttnBackend._update_draft_extend_buffers"


def test_only_grid_reverted_is_exactly_the_grid_finding(tmp_path: Path, triton_0513: str) -> None:
    result = scan_text(tmp_path, variant(triton_0513, {1}))
    assert [(f.code, f.mode) for f in result.findings] == [("IDX002", "DRAFT_EXTEND_V2")]
    assert result.findings[0].function == "TritonAttnBackend._build_cuda_graph_forward_metadata"


def test_only_stride_reverted_is_exactly_the_stride_finding(
    tmp_path: Path, triton_0513: str
) -> None:
    result = scan_text(tmp_path, variant(triton_0513, {0}))
    assert [(f.code, f.mode) for f in result.findings] == [("IDX001", "DRAFT_EXTEND_V2")]


def test_as_shipped_has_none(tmp_path: Path, triton_0513: str) -> None:
    result = scan_text(tmp_path, triton_0513)
    assert result.findings == []
    assert result.errors == []
    assert result.stats.proved > 0
