"""`dataclasses.replace` (`idxcheck.interp.library.copies`): a metadata object copied with some
fields changed, as vLLM's builders return `replace(metadata, query_start_loc_d=...)`. A field read
back from the copy is the changed value, or the object's where the call left it; a copy of an
object the analysis does not know stays unknown, with the reason.

The trees below are written for the test, in the shape of a vLLM decode builder."""

from __future__ import annotations

from pathlib import Path

import pytest

from idxcheck.app.run import scan
from idxcheck.model.config import Config

AUTO = Config(profile="auto")

BUILDER = """\
from dataclasses import dataclass, replace

import torch


@dataclass
class Plan:
    rows: int
    label: str


class CopiedPlanBuilder:
    def __init__(self, kv_cache_spec, layer_names, vllm_config, device):
        self.device = device
        self.reorder_batch_threshold = max_decode_query_len(vllm_config)
        self.verify_rows = 1 + vllm_config.speculative_config.num_speculative_tokens

    def _build_decode(self, seq_lens_device, query_start_loc_cpu, num_decode_tokens):
        num_reqs = seq_lens_device.size(0)
        plan = Plan(rows=1, label="decode")
        plan = COPY
        rows = plan.rows
        qo_indptr = torch.arange(0, (num_reqs + 1) * rows, step=rows, dtype=torch.int32)
        return DecodeMetadata(qo_indptr=qo_indptr)
"""


def scan_builder(root: Path, copy: str, imports: str = "") -> tuple[set[int], list[str]]:
    package = root / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    text = BUILDER.replace("COPY", copy)
    if imports:
        text = imports + text
    (package / "builder.py").write_text(text)
    result = scan([str(package)], AUTO)
    assert result.errors == []
    lines = {f.span.line for f in result.findings if f.code == "IDX001"}
    return lines, [n.reason for n in result.notes]


def line_of(needle: str, copy: str) -> int:
    text = BUILDER.replace("COPY", copy)
    (line,) = [n for n, row in enumerate(text.splitlines(), 1) if needle in row]
    return line


@pytest.mark.parametrize(
    "copy",
    [
        "replace(plan, rows=self.verify_rows)",
        "replace(plan, label='verify', rows=self.verify_rows)",
    ],
)
def test_a_changed_field_is_read_back_from_the_copy(tmp_path: Path, copy: str) -> None:
    flagged, notes = scan_builder(tmp_path, copy)
    assert flagged == set() and notes == []


def test_a_field_the_copy_leaves_is_the_object_s(tmp_path: Path) -> None:
    # `rows` stays 1: one row per request against a verify step of 1 + k.
    copy = "replace(plan, label='verify')"
    flagged, _ = scan_builder(tmp_path, copy)
    assert flagged == {line_of("plan = Plan(rows=1", copy)}


def test_dataclasses_replace_by_its_module(tmp_path: Path) -> None:
    copy = "dataclasses.replace(plan, rows=self.verify_rows)"
    flagged, notes = scan_builder(tmp_path, copy, imports="import dataclasses\n")
    assert flagged == set() and notes == []


def test_a_replace_the_file_does_not_import_from_dataclasses_is_not_modelled(
    tmp_path: Path,
) -> None:
    # The builder's own `replace` import is dropped: a name of that spelling from elsewhere
    # is not the library's.
    copy = "replace(plan, rows=self.verify_rows)"
    package = tmp_path / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    text = BUILDER.replace("COPY", copy).replace(
        "from dataclasses import dataclass, replace", "from dataclasses import dataclass"
    )
    (package / "builder.py").write_text(text)
    result = scan([str(package)], AUTO)
    assert result.findings == []
    assert any("name `replace` is not defined" in n.reason for n in result.notes)


def test_a_copy_of_an_unknown_object_stays_unknown(tmp_path: Path) -> None:
    copy = "replace(query_start_loc_cpu.plan, rows=self.verify_rows)"
    flagged, notes = scan_builder(tmp_path, copy)
    assert flagged == set()
    assert any("`replace()` of" in n for n in notes)
