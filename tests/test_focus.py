"""A focused scan (`--changed-only`: tree facts from every file, classes only where a finding
could touch the changed file) reports exactly what a full scan reports about that file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from idxcheck.app.changed import ChangedFiles
from idxcheck.app.run import scan
from idxcheck.model.config import Config
from idxcheck.model.findings import ScanResult

from .realtree import sglang_tree

FIXTURES = Path("fixtures")


def _touching(result: ScanResult, path: str) -> list[tuple[str, int, str, str, str]]:
    changed = ChangedFiles([path])
    return sorted(
        (f.span.path, f.span.line, f.code, f.mode, f.message)
        for f in result.findings
        if changed.touches(f, result.mode_model_source)
    )


def _same_as_full(root: str, files: list[str]) -> int:
    full = scan([root], Config())
    total = 0
    for path in files:
        focused = scan([root], replace(Config(), focus=(path,)))
        assert _touching(focused, path) == _touching(full, path), path
        total += len(_touching(full, path))
    return total


def test_focused_scan_equals_full_scan_on_every_fixture() -> None:
    files = sorted(str(p) for p in FIXTURES.rglob("*.py") if "golden" not in p.parts)
    files = [f for f in files if "/bad/" not in f]
    assert _same_as_full(str(FIXTURES), files) > 0, "no finding touches a fixture: vacuous"


def test_focused_scan_skips_unrelated_classes() -> None:
    target = str(FIXTURES / "bugs" / "eagle_draft_extend_v2.py")
    full = scan([str(FIXTURES)], Config())
    focused = scan([str(FIXTURES)], replace(Config(), focus=(target,)))
    assert focused.stats.parsed < full.stats.parsed


@pytest.mark.network
def test_focused_scan_equals_full_scan_on_a_release() -> None:
    tree = sglang_tree("0.5.23")
    attention = tree / "srt" / "layers" / "attention"
    files = [
        str(attention / "trtllm_mla_backend.py"),  # findings against a runner elsewhere
        str(attention / "triton_backend.py"),  # subclassed in other files
        str(attention / "flashinfer_backend.py"),
        # Raises on `speculative_eagle_topk` but names no registered backend: it feeds no tree
        # fact, so only its own classes are analysed.
        str(attention / "flashattention_backend.py"),
    ]
    assert _same_as_full(str(tree), files) > 0
