"""The replay block of a finding (`scan --format json`, read by `idxcheck confirm`) says how the
backend lays out its index pointer: its stride, its grid scalar, and how many segments it gives
each request, so that a layout the replay cannot build is not replayed as another one."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan

ENUM = Path("fixtures/runtime/forward_mode.py").read_text()

BACKEND = """import torch


class Backend:
    def __init__(self, model_runner):
        self.steps = model_runner.server_args.speculative_num_steps

    def init_forward_metadata_capture_cuda_graph(self, bs, forward_mode):
        if forward_mode.is_draft_extend_v2():
            self.cu_seqlens_q = torch.arange(0, bs * ENDS + 1, STRIDE, dtype=torch.int32)
"""


def replay_of(tmp_path: Path, ends: str, stride: str) -> tuple[dict[str, object], dict[str, int]]:
    (tmp_path / "forward_mode.py").write_text(ENUM)
    (tmp_path / "backend.py").write_text(BACKEND.replace("ENDS", ends).replace("STRIDE", stride))
    result = scan([str(tmp_path)])
    assert result.errors == []
    [finding] = result.findings
    assert (finding.code, finding.mode) == ("IDX001", "DRAFT_EXTEND_V2")
    assert finding.replay is not None
    return finding.replay.to_dict(), dict(finding.counterexample)


def test_a_per_token_layout_gives_its_segments_per_request(tmp_path: Path) -> None:
    # One segment per token: `steps + 1` segments of one token for each request.
    replay, counterexample = replay_of(tmp_path, "(self.steps + 1)", "1")
    assert replay["qo_stride"] == 1
    assert replay["segments_per_req"] == counterexample["speculative_num_steps"] + 1
    assert replay["tokens_per_req"] == counterexample["speculative_num_draft_tokens"]


def test_a_per_request_layout_has_one_segment_per_request(tmp_path: Path) -> None:
    replay, counterexample = replay_of(tmp_path, "(self.steps + 1)", "(self.steps + 1)")
    assert replay["segments_per_req"] == 1
    assert replay["qo_stride"] == counterexample["speculative_num_steps"] + 1
