"""Refills per buffer and metadata per batch size on a real backend: SGLang 0.5.13's
FlashAttention, which preallocates one metadata dictionary per mode in `init_cuda_graph_state`,
stores each capture's metadata object under its batch size and refills the draft-extend
`cu_seqlens_q` in place at replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from idxcheck.app.run import scan
from idxcheck.model.findings import ScanResult

from .realtree import sglang_tree

pytestmark = [pytest.mark.network, pytest.mark.slow]

VERIFY_DICT = "self.target_verify_metadata = {"
STRIDE = "step=self.speculative_num_draft_tokens,"


def _scan(tmp_path: Path, text: str) -> ScanResult:
    path = tmp_path / "flashattention_backend.py"
    path.write_text(text)
    return scan([str(path)])


def test_a_wrong_stride_in_one_dict_is_not_hidden_by_another_s_refill(tmp_path: Path) -> None:
    text = (sglang_tree("0.5.13") / "srt/layers/attention/flashattention_backend.py").read_text()
    shipped = _scan(tmp_path, text)
    assert shipped.errors == []
    # The per-batch-size lookups are read (177 UNSUPPORTED obligations on the whole release
    # before), and the release as shipped keeps its findings to none here.
    reasons = {n.reason for n in shipped.notes}
    assert "a dict indexed by a non-constant key" not in reasons
    start = text.index(VERIFY_DICT)
    at = text.index(STRIDE, start)
    line = text.count("\n", 0, at) + 1
    assert not [f for f in shipped.findings if f.span.line == line]
    mutated = text[:at] + "step=self.speculative_num_steps," + text[at + len(STRIDE) :]
    result = _scan(tmp_path, mutated)
    # The verify dictionary's pointer, sliced at capture, now strides by the step count: the
    # draft-extend dictionary's `cu_seqlens_q` refilled at replay is another buffer.
    flagged = [f for f in result.findings if f.mode == "TARGET_VERIFY"]
    assert flagged, [f.message for f in result.findings]
    assert any(
        f.span.line == line or any(r.span is not None and r.span.line == line for r in f.related)
        for f in flagged
    )
