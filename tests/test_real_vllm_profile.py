"""The vLLM profile on real vLLM releases (downloaded from PyPI at test time): the ROCm AITER
MLA decode builder of 0.26.0 lays out one query token per request where a verify step carries
1 + num_speculative_tokens (the motivating SGLang bug's shape); 0.27.0 fixed it."""

from __future__ import annotations

from pathlib import Path

import pytest

from idxcheck.app.run import scan
from idxcheck.model.config import Config

from .realtree import vllm_tree

pytestmark = [pytest.mark.network, pytest.mark.slow]

AITER = "v1/attention/backends/mla/rocm_aiter_mla.py"
# The builders, their base classes, and what lays out the runtime's width.
PARTS = (
    "v1/attention",
    "model_executor/layers/attention/mla_attention.py",
    "v1/cudagraph_dispatcher.py",
    "v1/worker/gpu_model_runner.py",
)


def scan_parts(tree: Path):  # type: ignore[no-untyped-def]
    return scan([str(tree / part) for part in PARTS], Config(profile="auto"))


def same_file(shown: str, path: Path) -> bool:
    """A scanned path is reported relative to the working folder where it lies below it."""
    return Path(shown).resolve() == path.resolve()


def aiter_findings(result, tree: Path):  # type: ignore[no-untyped-def]
    return [f for f in result.findings if same_file(f.span.path, tree / AITER)]


def test_aiter_mla_eager_decode_is_flagged_in_0_26_0() -> None:
    tree = vllm_tree("0.26.0")
    result = scan_parts(tree)
    found = aiter_findings(result, tree)
    assert {(f.code, f.function, f.mode) for f in found} == {
        ("IDX001", "AiterMLAMetadataBuilder._build_decode", "UNIFORM_DECODE"),
        ("IDX006", "AiterMLAMetadataBuilder._build_decode", "UNIFORM_DECODE"),
    }
    stride = next(f for f in found if f.code == "IDX001")
    assert "torch.arange" in (tree / AITER).read_text().splitlines()[stride.span.line - 2]
    assert stride.counterexample == {"bs": 2, "num_speculative_tokens": 1}
    assert "num_reqs=2 num_speculative_tokens=1" in stride.counterexample_text
    # Compared with the layout the tree's own runtime states, not the profile's default.
    assert any(r.role == "runner" for r in stride.related)
    assert not any(r.role == "profile" for r in stride.related)


def test_aiter_mla_decode_is_clean_in_0_27_0() -> None:
    tree = vllm_tree("0.27.0")
    result = scan_parts(tree)
    assert aiter_findings(result, tree) == []
    # The fixed builder's sites are checked, not skipped: its decode layouts are proved.
    aiter = [o for o in result.outcomes if same_file(o.span.path, tree / AITER)]
    assert any(o.mode == "UNIFORM_DECODE" and o.verdict.name == "PROVED" for o in aiter)


def test_the_decode_part_s_widest_query_is_not_the_batch_s_in_0_33_0() -> None:
    # `decode_max_query_len = 0` while a split batch has no decodes, in a metadata object
    # that also carries the whole batch's `query_start_loc`: the decode part's scalar is not
    # a grid scalar of that layout.
    tree = vllm_tree("0.33.0")
    sparse = tree / "model_executor/layers/attention/sparse_mla_attention.py"
    parts = [sparse, *(tree / p for p in PARTS[1:3]), tree / "v1/attention/backend.py"]
    result = scan([str(p) for p in parts], Config(profile="auto"))
    assert result.errors == []
    assert [f for f in result.findings if same_file(f.span.path, sparse)] == []
    assert result.stats.proved > 0


def test_a_decode_run_as_entry_and_inlined_pairs_within_each_run_in_0_33_0() -> None:
    # `_build_decode` runs as an entry point (its flag `self._decode_causal` opaque) and inlined
    # from `MLACommonMetadataBuilder.build` (the flag from the batch). The grid scalar of the
    # padded branch of one run (`max_qo_len = self._varlen_decode_qlen`) and the index pointer
    # of the other branch of the other run (`query_start_loc_device`) are arguments of two
    # calls of `get_mla_metadata_v1`, never of one: no IDX006 pairs them.
    tree = vllm_tree("0.33.0")
    result = scan_parts(tree)
    assert result.errors == []
    assert aiter_findings(result, tree) == []
    aiter = [o for o in result.outcomes if same_file(o.span.path, tree / AITER)]
    assert any(o.mode == "UNIFORM_DECODE" and o.verdict.name == "PROVED" for o in aiter)
