"""Modes whose requests are packed (the profile's `PACKED_MODES`: SGLang's EAGLE v1 draft
extend). The runner captures every request full, with its own width (what it sizes its buffers
for); a replay carries each request's accepted tokens, at most `min(num_steps + 1,
num_draft_tokens)`, one request's right after the last's. Grid scalars are compared with that
most, and runtime lengths at replay agree with a uniform layout at capture. DRAFT_EXTEND_V2,
which is not packed, is compared with the runner's width."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan
from idxcheck.model.findings import Finding

from .runner_texts import DRAFT_EXTEND_RUNNER, ENUM

RUNNER = DRAFT_EXTEND_RUNNER

BACKEND = """import torch


class Backend:
    def __init__(self, model_runner):
        self.num_steps = model_runner.server_args.speculative_num_steps
        self.ndt = model_runner.server_args.speculative_num_draft_tokens
        self.qo_indptr = torch.zeros((model_runner.max_bs + 1,), dtype=torch.int32)

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_draft_extend(include_v2=MODE_V2):
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * self.ndt + 1, self.ndt)
            self.max_extend_len = GRID

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        if forward_mode.is_draft_extend(include_v2=MODE_V2):
            self.qo_indptr[1 : bs + 1] = torch.cumsum(spec_info.accept_length[:bs], dim=0)
"""


def scan_tree(tmp_path: Path, v2: bool, grid: str) -> list[Finding]:
    (tmp_path / "forward_mode.py").write_text(ENUM)
    (tmp_path / "runner.py").write_text(RUNNER)
    backend = BACKEND.replace("MODE_V2", str(v2)).replace("GRID", grid)
    (tmp_path / "backend.py").write_text(backend)
    result = scan([str(tmp_path)])
    assert result.errors == []
    return result.findings


def test_v1_draft_extend_is_compared_with_the_most_a_request_carries(tmp_path: Path) -> None:
    assert scan_tree(tmp_path, v2=False, grid="self.num_steps + 1") == []


def test_a_grid_below_the_most_a_request_carries_is_flagged(tmp_path: Path) -> None:
    findings = scan_tree(tmp_path, v2=False, grid="1")
    assert [(f.code, f.mode) for f in findings] == [("IDX002", "DRAFT_EXTEND")]
    runner = next(r for r in findings[0].related if r.role == "runner")
    assert runner.message.startswith(
        "DraftExtendGraphRunner holds up to "
        "`model_runner.server_args.speculative_num_draft_tokens` tokens per request in "
        "DRAFT_EXTEND; each request has at most "
        "`min(speculative_num_steps + 1, speculative_num_draft_tokens)`"
    )
    assert runner.span is not None and runner.span.path.endswith("runner.py")


def test_draft_extend_v2_is_compared_with_the_runner_width(tmp_path: Path) -> None:
    """The backend serving both modes: in the one that is not packed, its grid is below the
    runner's width when topk > 1 (IDX002), and lengths replayed after a uniform capture are a
    mismatch (IDX003); in the packed one, neither."""
    findings = scan_tree(tmp_path, v2=True, grid="self.num_steps + 1")
    assert sorted((f.code, f.mode) for f in findings) == [
        ("IDX002", "DRAFT_EXTEND_V2"),
        ("IDX003", "DRAFT_EXTEND_V2"),
    ]
