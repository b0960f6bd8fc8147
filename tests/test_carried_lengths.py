"""A runner's batch that always carries the extend lengths its width is (`idxcheck.facts.
batch_fields`): a backend's fallback for lengths that are None is not compared with that
runner's width, since no batch of it takes that branch. Where the runner's batch may carry
None (a value idxcheck cannot show is never None), the fallback is compared as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from idxcheck.app.run import scan
from idxcheck.facts.batch_fields import carried_fields
from idxcheck.model.findings import ScanResult
from idxcheck.source.files import SourceFile
from tests.runner_texts import ENUM

BACKEND = """from forward_mode import ForwardMode


class LengthsBackend:
    def __init__(self, model_runner):
        self.steps = model_runner.server_args.speculative_num_steps

    def init_forward_metadata(self, forward_batch):
        if forward_batch.forward_mode.is_draft_extend_v2():
            max_seqlen_q = (
                max(forward_batch.extend_seq_lens_cpu)
                if forward_batch.extend_seq_lens_cpu is not None
                else self.steps + 1
            )
            self.max_seqlen_q = max_seqlen_q

    def forward_extend(self, q, k, v, layer, forward_batch):
        return flash_attn_varlen_func(q, k, v, max_seqlen_q=self.max_seqlen_q)
"""

RUNNER = """from forward_mode import ForwardMode


class DraftExtendGraphRunner:
    def __init__(self, model_runner, max_bs):
        self.capture_forward_mode = ForwardMode.DRAFT_EXTEND_V2
        self.num_tokens_per_bs = model_runner.server_args.speculative_num_draft_tokens
        self.lengths = [self.num_tokens_per_bs] * max_bs

    def get_forward_batch(self, bs):
        LENGTHS
        return ForwardBatch(
            forward_mode=self.capture_forward_mode,
            batch_size=bs,
            extend_seq_lens_cpu=lengths,
        )
"""


def _scan(tmp_path: Path, lengths: str) -> ScanResult:
    (tmp_path / "forward_mode.py").write_text(ENUM)
    (tmp_path / "backend.py").write_text(BACKEND)
    (tmp_path / "runner.py").write_text(RUNNER.replace("LENGTHS", lengths))
    result = scan([str(tmp_path)])
    assert result.errors == []
    return result


def test_lengths_the_runner_always_carries_are_not_none(tmp_path: Path) -> None:
    result = _scan(tmp_path, "lengths = self.lengths[:bs]")
    assert result.findings == []


@pytest.mark.parametrize(
    "lengths",
    [
        "lengths = self.lengths_for(bs)",  # a call: may return None
        "lengths = self.lengths[:bs] if bs else None",
        "lengths = self.lengths[bs]",  # an element, not a slice
    ],
)
def test_lengths_that_may_be_none_leave_the_fallback_compared(tmp_path: Path, lengths: str) -> None:
    result = _scan(tmp_path, lengths)
    found = [(f.code, f.mode, f.span.line) for f in result.findings]
    assert found == [("IDX002", "DRAFT_EXTEND_V2", 13)]
    (finding,) = result.findings
    assert ("extend_seq_lens_cpu is None", True) in finding.conditions


def _carried(text: str) -> tuple[str, ...]:
    source = SourceFile.from_bytes("runner.py", text.encode())
    (block,) = source.blocks_named("Runner")
    return carried_fields(source.class_source(block), ("ForwardBatch",))


def test_a_field_set_to_none_after_the_batch_is_built_is_not_carried() -> None:
    text = """class Runner:
    def __init__(self):
        self.lens = [1, 2]

    def build(self, bs):
        fb = ForwardBatch(extend_seq_lens_cpu=self.lens[:bs], seq_lens=list(self.lens))
        fb.extend_seq_lens_cpu = None
        return fb
"""
    assert _carried(text) == ("seq_lens",)


def test_every_batch_of_the_runner_must_carry_the_field() -> None:
    text = """class Runner:
    def first(self, bs):
        return ForwardBatch(extend_seq_lens_cpu=[bs], seq_lens=[bs])

    def second(self, lens):
        return ForwardBatch(extend_seq_lens_cpu=lens, seq_lens=[1])
"""
    # `lens` is a parameter of `second`: nothing says it is never None.
    assert _carried(text) == ("seq_lens",)


def test_an_attribute_is_carried_only_if_each_of_its_stores_is_never_none() -> None:
    text = """class Runner:
    def __init__(self, n):
        self.lens = [n]

    def reset(self):
        self.lens = None

    def build(self, bs):
        return ForwardBatch(extend_seq_lens_cpu=self.lens[:bs], seq_lens=self.lens)
"""
    assert _carried(text) == ("extend_seq_lens_cpu",)
