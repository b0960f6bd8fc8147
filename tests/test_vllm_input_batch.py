"""The batch a vLLM model runner hands its speculators and model states (`input_batch`, an
`InputBatch` of `v1/worker/gpu/input_batch.py`): a runtime object, as the builders'
`common_attn_metadata` is. Its counts size the slices of a drafter's buffers the way the
runtime sizes them; before, each such slice was UNSUPPORTED ("parameter `input_batch` ...,
whose callers are not in the class"). A slice sized by the configuration in the same method is
still checked.

The tree below is written for the test, in the shape of Model Runner V2's speculators."""

from __future__ import annotations

from pathlib import Path

from idxcheck.app.run import scan
from idxcheck.model.config import Config

SPECULATOR = """\
import torch


class ToySpeculator:
    def __init__(self, vllm_config, device):
        self.max_num_reqs = vllm_config.scheduler_config.max_num_seqs
        self.query_start_loc = torch.zeros(self.max_num_reqs + 1, dtype=torch.int32)
        self.positions = torch.zeros(self.max_num_reqs, dtype=torch.int64)

    def propose(self, input_batch, hidden_states):
        num_reqs = input_batch.num_reqs
        rows = self.positions[:num_reqs]
        query_start_loc = self.query_start_loc[: num_reqs + 1]
        return rows, query_start_loc
"""

OVERRUN = """\
    def widest(self, input_batch):
        extra = self.positions[: self.max_num_reqs + 1]
        return extra, input_batch
"""


def write_tree(root: Path, text: str) -> Path:
    package = root / "vllm"
    (package / "spec").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "spec" / "__init__.py").write_text("")
    (package / "spec" / "speculator.py").write_text(text)
    return package


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_slices_sized_by_the_runner_s_batch_are_read_from_the_runtime(tmp_path: Path) -> None:
    package = write_tree(tmp_path, SPECULATOR)
    result = scan([str(package)], Config(profile="auto"))
    assert result.findings == []
    lines = {line_of(SPECULATOR, "self.positions[:num_reqs]"), line_of(SPECULATOR, "num_reqs + 1]")}
    at = [o for o in result.outcomes if o.span.line in lines]
    assert {o.span.line for o in at} == lines
    assert all(o.verdict.name == "PROVED" for o in at), [(o.span.line, o.reason) for o in at]
    assert not any("input_batch" in (o.reason or "") for o in result.outcomes)


def test_a_slice_the_configuration_sizes_past_its_buffer_is_still_flagged(tmp_path: Path) -> None:
    text = SPECULATOR + "\n" + OVERRUN
    package = write_tree(tmp_path, text)
    result = scan([str(package)], Config(profile="auto"))
    assert {(f.code, f.span.line) for f in result.findings} == {
        ("IDX005", line_of(text, "self.max_num_reqs + 1]"))
    }
