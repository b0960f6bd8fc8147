"""Who reads a value on a real release: SGLang 0.5.23's TRT-LLM MLA backend stores draft-extend
widths that nothing reads (its forward takes the rows per request from `q.shape[0] // bs`), so
they are notes; its draft-extend runner is scanned with it, as in a whole-tree scan."""

from __future__ import annotations

import pytest

from idxcheck.app.run import scan
from idxcheck.model.config import Config

from .realtree import sglang_tree

pytestmark = pytest.mark.network


def test_trtllm_mla_draft_extend_stores_are_notes() -> None:
    srt = sglang_tree("0.5.23") / "srt"
    attention = srt / "layers" / "attention"
    paths = [
        attention / "trtllm_mla_backend.py",
        attention / "flashinfer_mla_backend.py",
        attention / "base_attn_backend.py",
        attention / "cutedsl_mla_backend.py",
        srt / "speculative",
        srt / "model_executor" / "forward_batch_info.py",
    ]
    result = scan([str(p) for p in paths], Config())
    trtllm = {
        (f.span.line, f.code): f
        for f in result.findings
        if f.span.path.endswith("trtllm_mla_backend.py")
    }
    assert set(trtllm) == {(564, "IDX002"), (569, "IDX001"), (635, "IDX002"), (695, "IDX002")}
    for finding in trtllm.values():
        assert finding.severity == "note"
        assert finding.mode == "DRAFT_EXTEND_V2"
        assert finding.consumer is not None and finding.consumer.status == "unread"
