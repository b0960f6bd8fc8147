"""A tree written in another project's style: vLLM, scanned with the SGLang profile (the only
one). Its backends read no SGLang `ForwardMode` and no SGLang graph runner, so most of its
sites have no forward mode to be checked in; what the scan can model it proves, what it cannot
it says, and it reports nothing false and breaks on no file."""

from __future__ import annotations

import pytest

from idxcheck.app.run import scan

from .realtree import vllm_tree

pytestmark = pytest.mark.network


def test_vllm_scans_without_errors_or_findings() -> None:
    result = scan([str(vllm_tree("0.33.0"))])
    assert result.errors == []
    assert result.findings == []
    stats = result.stats
    assert stats.files > 2_500 and stats.parsed > 100 and stats.sites > 100
    assert stats.proved > 0
    assert stats.unknown == 0
