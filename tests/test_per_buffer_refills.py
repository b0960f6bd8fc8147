"""Refills per buffer and metadata per batch size (`idxcheck.interp.stores`).

A preallocated index pointer written in place is that buffer (its allocation), not every
buffer of its name; an entry a capture stores under its batch size (`self.meta[bs] = m`) is
what a replay reads back under the same key. Each backend here is built in the test."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan
from idxcheck.model.findings import ScanResult
from idxcheck.model.verdicts import Verdict

# Two preallocated pointers of one name: the verify pool's strided by the step count (wrong
# against the runner's `num_draft_tokens`), the extend pool's zeros that the replay refills.
TWO_POOLS = """import torch


class PoolBackend:
    def __init__(self, model_runner):
        self.ndt = model_runner.server_args.speculative_num_draft_tokens
        self.steps = model_runner.server_args.speculative_num_steps

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.verify_pool = {"qo_indptr": torch.arange(0, max_bs * self.steps + 1, step=self.steps)}
        self.extend_pool = {"qo_indptr": torch.zeros(max_bs + 1, dtype=torch.int32)}

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_target_verify():
            self.forward_metadata = Meta(qo_indptr=self.verify_pool["qo_indptr"][: bs + 1])
        elif forward_mode.is_draft_extend_v2():
            self.forward_metadata = Meta(qo_indptr=self.extend_pool["qo_indptr"][: bs + 1])

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        if forward_mode.is_draft_extend_v2():
            REFILL
"""


def _scan(tmp_path: Path, text: str) -> ScanResult:
    (tmp_path / "backend.py").write_text(text)
    result = scan([str(tmp_path)])
    assert result.errors == []
    return result


def _codes(result: ScanResult) -> list[tuple[str, int, str]]:
    return sorted((f.code, f.span.line, f.mode) for f in result.findings)


def test_a_refill_of_one_buffer_does_not_hide_another_of_its_name(tmp_path: Path) -> None:
    refill = (
        'qo_indptr = self.extend_pool["qo_indptr"]\n'
        "            qo_indptr[1 : bs + 1] = torch.cumsum(spec_info.lens, dim=0)"
    )
    result = _scan(tmp_path, TWO_POOLS.replace("REFILL", refill))
    assert _codes(result) == [("IDX001", 10, "TARGET_VERIFY")]


def test_a_refill_through_the_capture_object_is_that_object_s_buffer(tmp_path: Path) -> None:
    # The replay reaches the extend pool's buffer through the metadata object of the capture
    # (a per-forward attribute): the buffer is written by a name that is not modelled, so every
    # pointer of that name counts as refilled where that write runs (no guess at which one).
    refill = (
        "self.forward_metadata.qo_indptr[1 : bs + 1].copy_(torch.cumsum(spec_info.lens, dim=0))"
    )
    everywhere = TWO_POOLS.replace(
        "        if forward_mode.is_draft_extend_v2():\n            REFILL", "        " + refill
    )
    assert _codes(_scan(tmp_path, everywhere)) == []
    # Written in draft extend v2 only: no write runs in target verify, whose replays (the first
    # of them at least) read the verify pool's preset, strided by the step count.
    result = _scan(tmp_path, TWO_POOLS.replace("REFILL", refill))
    assert _codes(result) == [("IDX001", 10, "TARGET_VERIFY")]


# Metadata kept per batch size: the grid scalar reaches a kernel only at replay, through the
# entry the capture stored under `bs`.
PER_SIZE = """import torch


class SizedBackend:
    def __init__(self, model_runner):
        self.ndt = model_runner.server_args.speculative_num_draft_tokens
        self.steps = model_runner.server_args.speculative_num_steps
        self.graph_meta = {}

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_target_verify():
            self.graph_meta[bs] = Plan(rows=ROWS)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        if forward_mode.is_target_verify():
            plan = self.graph_meta[KEY]
            varlen_kernel(max_seqlen_q=plan.rows)
"""


def test_a_replay_reads_the_entry_its_capture_stored_under_the_batch_size(
    tmp_path: Path,
) -> None:
    wrong = _scan(tmp_path, PER_SIZE.replace("ROWS", "self.steps").replace("KEY", "bs"))
    assert _codes(wrong) == [("IDX002", 12, "TARGET_VERIFY")]
    related = {r.role: r for r in wrong.findings[0].related}
    assert related["binding"].span is not None and related["binding"].span.line == 17
    right = _scan(tmp_path, PER_SIZE.replace("ROWS", "self.ndt").replace("KEY", "bs"))
    assert _codes(right) == []
    assert right.stats.unsupported == 0
    assert right.stats.proved > 0


def test_an_entry_read_under_another_key_is_not_guessed(tmp_path: Path) -> None:
    result = _scan(tmp_path, PER_SIZE.replace("ROWS", "self.steps").replace("KEY", "bs - 1"))
    assert result.findings == []
    reasons = {s.reason for s in result.notes if s.verdict == Verdict.UNSUPPORTED}
    assert reasons == {"no entry of `self.graph_meta` is stored under this key"}


def test_an_entry_stored_in_another_mode_is_not_what_a_replay_reads(tmp_path: Path) -> None:
    # Stored in target verify only: a draft-extend replay that reads it raises (KeyError) in
    # the real code, so nothing is compared there.
    text = PER_SIZE.replace("ROWS", "self.steps").replace("KEY", "bs")
    text = text.replace(
        "        if forward_mode.is_target_verify():\n            plan",
        "        if forward_mode.is_draft_extend_v2():\n            plan",
    )
    result = _scan(tmp_path, text)
    assert result.findings == []
    assert result.stats.unsupported == 0


# The eager path lays out a normal and an expanded metadata object, each with its own
# `cu_seqlens_q`; so does the capture. Fields of one name on other objects are other layouts.
TWO_OBJECTS = """import torch


class TwoObjectsBackend:
    def __init__(self, model_runner):
        self.topk = model_runner.server_args.speculative_eagle_topk

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.normal_pool = torch.arange(0, max_bs * self.topk + 1, step=self.topk)
        self.expand_pool = torch.arange(0, max_bs * self.topk + 1)

    def init_forward_metadata(self, forward_batch):
        bs = forward_batch.batch_size
        if forward_batch.forward_mode.is_target_verify():
            normal = Meta()
            normal.cu_seqlens_q = torch.arange(0, bs * self.topk + 1, step=self.topk)
            expand = Meta()
            expand.cu_seqlens_q = torch.arange(0, bs * self.topk + 1)
            self.forward_metadata = (normal, expand)

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_target_verify():
            normal = Meta()
            normal.cu_seqlens_q = self.normal_pool[: bs + 1]
            expand = Meta()
            expand.cu_seqlens_q = self.EXPAND[: bs * self.topk + 1]
            self.forward_metadata = (normal, expand)
"""


def test_fields_of_one_name_on_other_objects_are_not_compared(tmp_path: Path) -> None:
    result = _scan(tmp_path, TWO_OBJECTS.replace("EXPAND", "expand_pool"))
    assert [f for f in result.findings if f.code == "IDX003"] == []
    # The same object laid out otherwise at capture is still compared.
    swapped = _scan(tmp_path, TWO_OBJECTS.replace("EXPAND", "normal_pool"))
    assert [(f.code, f.span.line) for f in swapped.findings if f.code == "IDX003"] == [
        ("IDX003", 18)
    ]


# A capture with the runner's width and a replay from the forward's extend lengths: in a mode
# that does not pack, every request extends by that width (the profile's `WIDTH_LENGTHS`);
# accepted counts, which vary, are still a mismatch.
LENGTHS = """import torch


class LengthsBackend:
    def __init__(self, model_runner):
        self.qo_indptr = torch.zeros((model_runner.max_bs + 1,), dtype=torch.int32)

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_draft_extend_v2():
            width = num_tokens // bs
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * width + 1, width)

    def init_forward_metadata_replay_cuda_graph(self, bs, seq_lens, forward_mode, spec_info):
        if forward_mode.is_draft_extend_v2():
            lens = torch.as_tensor(spec_info.LENGTHS, dtype=torch.int32)
            self.qo_indptr[1 : bs + 1] = torch.cumsum(lens, dim=0)
"""


def test_extend_lengths_of_a_mode_that_does_not_pack_are_the_width(tmp_path: Path) -> None:
    assert _codes(_scan(tmp_path, LENGTHS.replace("LENGTHS", "extend_seq_lens_cpu"))) == []
    accepted = _scan(tmp_path, LENGTHS.replace("LENGTHS", "num_accept_tokens"))
    assert _codes(accepted) == [("IDX003", 16, "DRAFT_EXTEND_V2")]
