"""Entries stored per batch size where the storing code is a base's, reached through `super()`.

The resolver pass of `analyse_class` runs the methods that store entries, and those whose
`super()` calls reach a base's method that stores (directly, or through the methods that one
calls in turn). The backends here are built in the test: the capture that stores the verify
entry is the root's, the middle's and the leaf's captures only delegate to it, and the leaf's
replay reads the entry back and hands its fields to a kernel: without the store, the replay's
entry is unknown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from idxcheck.app.run import scan
from idxcheck.interp import classes
from idxcheck.interp.interpreter import ClassInterpreter
from idxcheck.model.config import Config
from idxcheck.source.files import FunctionSource

HEAD = """from dataclasses import dataclass

import torch


@dataclass
class Entry:
    qo_indptr: torch.Tensor
    rows: int


class RootBackend:
    def __init__(self, model_runner):
        cfg = model_runner.server_args
        self.span = cfg.speculative_num_draft_tokens
        self.hops = cfg.speculative_num_steps
        self.by_size = {}

    def init_cuda_graph_state(self, max_bs, max_num_tokens):
        self.pool = torch.arange(0, max_bs * self.span + 1, step=self.span)
"""

# The root's capture stores the entry itself.
DIRECT = """
    def init_forward_metadata_capture_cuda_graph(
        self, bs, num_tokens, req_pool_indices, seq_lens, encoder_lens, forward_mode, spec_info
    ):
        if forward_mode.is_target_verify():
            self.by_size[bs] = Entry(self.pool[: bs + 1], ROWS)
"""

# The root's capture calls a helper of its own, which builds the entry and stores it.
THROUGH_HELPER = """
    def init_forward_metadata_capture_cuda_graph(
        self, bs, num_tokens, req_pool_indices, seq_lens, encoder_lens, forward_mode, spec_info
    ):
        if forward_mode.is_target_verify():
            self._keep(bs)

    def _keep(self, bs):
        self.by_size[bs] = Entry(self.pool[: bs + 1], ROWS)
"""

LEAF = """

class MiddleBackend(RootBackend):
    def init_forward_metadata_capture_cuda_graph(
        self, bs, num_tokens, req_pool_indices, seq_lens, encoder_lens, forward_mode, spec_info
    ):
        super().init_forward_metadata_capture_cuda_graph(
            bs, num_tokens, req_pool_indices, seq_lens, encoder_lens, forward_mode, spec_info
        )


class LeafBackend(MiddleBackend):
    def init_forward_metadata_capture_cuda_graph(
        self, bs, num_tokens, req_pool_indices, seq_lens, encoder_lens, forward_mode, spec_info
    ):
        super().init_forward_metadata_capture_cuda_graph(
            bs, num_tokens, req_pool_indices, seq_lens, encoder_lens, forward_mode, spec_info
        )

    def init_forward_metadata_replay_cuda_graph(
        self, bs, req_pool_indices, seq_lens, seq_lens_sum, encoder_lens, forward_mode, spec_info
    ):
        entry = self.by_size[bs]
        if forward_mode.is_target_verify():
            varlen_plan(cu_seqlens_q=entry.qo_indptr, max_seqlen_q=entry.rows)

    def init_forward_metadata(self, forward_batch):
        super().init_cuda_graph_state(forward_batch.batch_size, 0)
"""


def _text(capture: str, rows: str) -> str:
    return HEAD + capture.replace("ROWS", rows) + LEAF


def _line(text: str, words: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if words in line)


# Where the findings point: the stored grid scalar where the entry is built in the method the
# capture reaches; the entry's field at the replay's kernel call where a helper built it.
CASES = [
    pytest.param(DIRECT, "Entry(self.pool", id="direct"),
    pytest.param(THROUGH_HELPER, "varlen_plan(", id="through-helper"),
]


@pytest.mark.parametrize(("capture", "anchor"), CASES)
def test_a_store_reached_through_super_is_read_back_at_replay(
    tmp_path: Path, capture: str, anchor: str
) -> None:
    text = _text(capture, "self.hops")
    (tmp_path / "backend.py").write_text(text)
    wrong = scan([str(tmp_path)], Config(jobs=1))
    assert wrong.errors == []
    line = _line(text, anchor)
    assert {(f.code, f.span.line, f.mode) for f in wrong.findings} == {
        ("IDX002", line, "TARGET_VERIFY"),  # `self.hops` rows against `num_draft_tokens`
        ("IDX006", line, "TARGET_VERIFY"),  # and against the pool's stride
    }
    assert wrong.stats.unsupported == 0
    (tmp_path / "backend.py").write_text(_text(capture, "self.span"))
    right = scan([str(tmp_path)], Config(jobs=1))
    assert right.findings == []
    assert right.stats.unsupported == 0


def test_a_method_whose_super_reaches_no_store_is_not_run_for_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The leaf's `init_forward_metadata` calls `super()` of a method that stores nothing: the
    resolver and reader passes run the leaf's capture (which reaches the root's store) and not
    it."""
    (tmp_path / "backend.py").write_text(_text(DIRECT, "self.span"))
    ran: list[tuple[str, str]] = []
    run = ClassInterpreter.run
    refills_and_stores = classes._refills_and_stores

    def counted(self: ClassInterpreter, fn: FunctionSource, *rest: Any, **kwargs: Any) -> Any:
        ran.append((self.class_name, fn.name))
        return run(self, fn, *rest, **kwargs)

    def spied(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(ClassInterpreter, "run", counted)
        try:
            return refills_and_stores(*args, **kwargs)
        finally:
            monkeypatch.setattr(ClassInterpreter, "run", run)

    monkeypatch.setattr(classes, "_refills_and_stores", spied)
    assert scan([str(tmp_path)], Config(jobs=1)).findings == []
    leaf = {name for cls, name in ran if cls == "LeafBackend"}
    assert leaf == {"init_forward_metadata_capture_cuda_graph"}
