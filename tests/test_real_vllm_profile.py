"""The vLLM profile on real vLLM releases (downloaded from PyPI at test time): the ROCm AITER
MLA decode builder of 0.26.0 lays out one query token per request where a verify step carries
1 + num_speculative_tokens (the motivating SGLang bug's shape); 0.27.0 fixed it."""

from __future__ import annotations

from pathlib import Path

import pytest

from idxcheck.app.run import scan
from idxcheck.model.config import Config

from .realtree import VLLM_AITER, VLLM_DECODE_PARTS, vllm_tree

pytestmark = [pytest.mark.network, pytest.mark.slow]

AITER = VLLM_AITER
PARTS = VLLM_DECODE_PARTS


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


def test_aiter_mla_eager_decode_is_flagged_from_0_14_0_and_clean_in_0_13_0() -> None:
    # 0.14.0 set `query_len_support = QueryLenSupport.UNIFORM` on the builder, so its decodes
    # carry a verify step's 1 + num_speculative_tokens tokens from then on; the stride-1 eager
    # layout stayed until 0.27.0 (docs/triage/vllm-releases.md). In 0.13.0 the class-body
    # default of the base keeps every decode at one token, and the same layout is proved.
    buggy = vllm_tree("0.14.0")
    found = aiter_findings(scan_parts(buggy), buggy)
    assert {(f.code, f.function, f.mode) for f in found} == {
        ("IDX001", "AiterMLAMetadataBuilder._build_decode", "UNIFORM_DECODE"),
        ("IDX006", "AiterMLAMetadataBuilder._build_decode", "UNIFORM_DECODE"),
    }
    clean = vllm_tree("0.13.0")
    result = scan_parts(clean)
    assert aiter_findings(result, clean) == []
    aiter = [o for o in result.outcomes if same_file(o.span.path, clean / AITER)]
    assert any(o.mode == "UNIFORM_DECODE" and o.verdict.name == "PROVED" for o in aiter)


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


# DFlash (0.26.0, fixed in 0.27.0): the drafter sizes its query buffers (`positions`,
# `_slot_mapping_buffer`) for `max_num_seqs * (1 + num_speculative_tokens)` tokens, while
# `dummy_run` and `propose` slice them at the count the CUDA-graph dispatcher pads to a capture
# size (`_determine_batch_execution_and_padding`), up to `max_cudagraph_capture_size`.
DFLASH = "v1/spec_decode/dflash.py"
PROPOSER = "v1/spec_decode/llm_base_proposer.py"


def scan_dflash(tree: Path):  # type: ignore[no-untyped-def]
    return scan([str(tree / DFLASH), str(tree / PROPOSER)], Config(profile="auto"))


def line_of(path: Path, text: str) -> int:
    """The line of the one occurrence of `text` in `path`."""
    (line,) = [n for n, row in enumerate(path.read_text().splitlines(), 1) if text in row]
    return line


def query_slices(tree: Path) -> set[int]:
    """The slices of the query buffers at the padded count: `_get_positions` and
    `_get_slot_mapping`'s view."""
    proposer = tree / PROPOSER
    return {
        line_of(proposer, "return self.positions[:num_tokens]"),
        line_of(proposer, "view = self._slot_mapping_buffer[:num_tokens]"),
    }


def test_dflash_query_buffers_are_flagged_in_0_26_0() -> None:
    tree = vllm_tree("0.26.0")
    result = scan_dflash(tree)
    assert result.errors == []
    found = [
        f
        for f in result.findings
        if f.code == "IDX005" and any(same_file(f.span.path, tree / p) for p in (DFLASH, PROPOSER))
    ]
    assert len(found) == 1
    (finding,) = found
    # The buffer DFlash allocates, sliced at the dispatcher's padded count.
    assert "self.max_query_tokens" in finding.message
    assert "{max_num_seqs} * (1 + {num_speculative_tokens})" in finding.message
    related = {
        r.span.line
        for r in finding.related
        if r.span is not None and same_file(r.span.path, tree / PROPOSER)
    }
    assert query_slices(tree) <= related
    # A configuration past the allocation, in vLLM's terms: a drafter has a speculative
    # config, and the largest capture size is above max_num_seqs * (1 + k).
    cex = finding.counterexample
    assert cex["num_speculative_tokens"] >= 1
    assert cex["max_cudagraph_capture_size"] > cex["max_bs"] * (1 + cex["num_speculative_tokens"])
    assert "max_num_seqs=" in finding.counterexample_text
    assert "max_cudagraph_capture_size=" in finding.counterexample_text
    refuted = {
        o.span.line
        for o in result.outcomes
        if o.code == "IDX005"
        and o.verdict.name == "REFUTED"
        and same_file(o.span.path, tree / PROPOSER)
    }
    assert query_slices(tree) <= refuted


def test_dflash_query_buffers_are_proved_in_0_27_0() -> None:
    tree = vllm_tree("0.27.0")
    result = scan_dflash(tree)
    assert result.errors == []
    assert [f for f in result.findings if f.code == "IDX005"] == []
    # The same slices are proved (`dummy_run`'s, and `propose`'s where the drafter's own count
    # is modelled), not merely left unsupported.
    at_slices = [
        o
        for o in result.outcomes
        if o.code == "IDX005"
        and same_file(o.span.path, tree / PROPOSER)
        and o.span.line in query_slices(tree)
    ]
    assert {o.span.line for o in at_slices if o.verdict.name == "PROVED"} == query_slices(tree)
    assert not any(o.verdict.name == "REFUTED" for o in at_slices)


def test_the_padded_verify_width_is_proved_in_0_34_0() -> None:
    # 0.34.0's widest decode adds the drafter's query slots
    # (`speculative_config.max_num_new_slots_for_drafting`, a symbol of the profile): with it the
    # builder's `reorder_batch_threshold` is known, and the padded verify width it copies
    # (`max_qo_len = self._varlen_decode_qlen`) is one token per request only where the
    # threshold keeps verify steps out of the decode path (decode context parallelism). Without
    # the symbol that fallback was refuted against 1 + num_speculative_tokens.
    tree = vllm_tree("0.34.0")
    parts = [
        tree / "v1/attention",
        tree / "model_executor/layers/attention/mla_attention.py",
        tree / "config/vllm.py",
    ]
    result = scan([str(p) for p in parts], Config(profile="auto"))
    assert result.errors == []
    assert aiter_findings(result, tree) == []
    # 0.34.0 has no V1 model runner or dispatcher: the width of a uniform decode and of a
    # capture is the configuration's property (`VllmConfig.uniform_decode_query_len`), not the
    # profile's default.
    assert {w.mode for w in result.profile_widths} == {"DRAFT"}
    padded = line_of(tree / AITER, "max_qo_len = self._varlen_decode_qlen")
    route = line_of(tree / AITER, "max_qo_len=int(max_qo_len),")
    aiter = [o for o in result.outcomes if same_file(o.span.path, tree / AITER)]
    assert padded < route
    assert any(
        o.span.line == route and o.mode == "UNIFORM_DECODE" and o.verdict.name == "PROVED"
        for o in aiter
    )


def test_the_runner_s_input_batch_is_the_runtime_s_in_0_33_0() -> None:
    # Model Runner V2's speculators take the runner's batch (`propose(input_batch, ...)`): the
    # slices it sizes are read from the runtime, no longer UNSUPPORTED for want of a caller.
    tree = vllm_tree("0.33.0")
    result = scan([str(tree / "v1/worker/gpu/spec_decode")], Config(profile="auto"))
    assert not any("parameter `input_batch`" in (o.reason or "") for o in result.outcomes)
    assert any(
        o.verdict.name == "PROVED" and o.reason == "read from the runtime"
        for o in result.outcomes
        if "speculator.py" in o.span.path
    )
