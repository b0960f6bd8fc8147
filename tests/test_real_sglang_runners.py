"""Runtime widths read from the runners of the same tree (real SGLang releases from PyPI)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from idxcheck.app.run import scan
from idxcheck.facts.mode_model import find_mode_model
from idxcheck.facts.runners import width_definitions
from idxcheck.facts.tree import runtime_model_from_tree
from idxcheck.model.config import Config
from idxcheck.model.findings import Finding, ScanResult
from idxcheck.profiles.schema import load_profile
from idxcheck.source.index import DataclassIndex
from idxcheck.source.tree import load_tree
from idxcheck.sym.render import render_term

from .realtree import sglang_tree
from .test_real_sglang import variant

pytestmark = pytest.mark.network

EAGLE_RUNNER = "EAGLEDraftExtendCudaGraphRunner"
TRITON = "srt/layers/attention/triton_backend.py"


def runner_of(finding: Finding) -> str:
    for related in finding.related:
        if related.role == "runner":
            return related.message.split(" ", 1)[0]
    return ""


def triton_v2_against_eagle_runner(result: ScanResult) -> list[Finding]:
    return [
        f
        for f in result.findings
        if f.span.path.endswith(TRITON)
        and f.mode == "DRAFT_EXTEND_V2"
        and runner_of(f) == EAGLE_RUNNER
    ]


def widths(tree: Path) -> dict[str, list[tuple[str, str]]]:
    profile = load_profile()
    loaded = load_tree([str(tree)], Config(), profile)
    modes, _ = find_mode_model(loaded, profile)
    model = runtime_model_from_tree(
        loaded,
        profile,
        modes,
        DataclassIndex(loaded.files),
        width_definitions(loaded.files, profile.tree_width_functions),
        [],
    )
    return {
        mode: [
            (w.runner, render_term(w.term, profile.display)) for w in found if not w.from_profile
        ]
        for mode, found in model.widths.items()
    }


@pytest.fixture(scope="module")
def srt_0512() -> Path:
    return sglang_tree("0.5.12") / "srt"


@pytest.fixture(scope="module")
def srt_0513() -> Path:
    return sglang_tree("0.5.13") / "srt"


@pytest.fixture(scope="module")
def scan_0513(srt_0513: Path) -> ScanResult:
    return scan([str(srt_0513)])


@pytest.fixture(scope="module")
def scan_0512(srt_0512: Path) -> ScanResult:
    return scan([str(srt_0512)])


def test_runner_widths_of_three_generations(srt_0512: Path, srt_0513: Path) -> None:
    old = widths(srt_0512)
    assert (EAGLE_RUNNER, "num_steps + 1") in old["DRAFT_EXTEND_V2"]
    assert ("CudaGraphRunner", "num_draft_tokens") in old["TARGET_VERIFY"]
    new = widths(srt_0513)
    assert (EAGLE_RUNNER, "num_draft_tokens") in new["DRAFT_EXTEND_V2"]
    multi = [
        w for r, w in new["DRAFT_EXTEND_V2"] if r == "MultiLayerEagleDraftExtendCudaGraphRunner"
    ]
    assert multi == ["num_steps + 1 + MultiLayerEagleDraftExtendCudaGraphRunner.step"]
    latest = widths(sglang_tree("0.5.23") / "srt")
    assert (EAGLE_RUNNER, "num_draft_tokens") in latest["DRAFT_EXTEND_V2"]
    assert ("DecodeCudaGraphRunner", "num_draft_tokens") in latest["TARGET_VERIFY"]
    assert any(
        r == "MultiLayerEagleDraftExtendCudaGraphRunner"
        and w == "num_draft_tokens + num_front_tokens"
        for r, w in latest["DRAFT_EXTEND_V2"]
    )


def test_0515_decode_runner_is_read_through_its_width_function_of_that_release() -> None:
    """0.5.15 names the decode runner's width function `decode_num_tokens_per_bs` (0.5.16
    renamed it `decode_num_tokens_per_req`); without it the runner was not read and target
    verify fell back to the profile's width."""
    found = widths(sglang_tree("0.5.15.post1") / "srt")
    assert ("DecodeCudaGraphRunner", "num_draft_tokens") in found["TARGET_VERIFY"]
    assert ("DecodeCudaGraphRunner", "num_draft_tokens") in found["DECODE"]


def test_0512_backend_and_runner_agree_on_num_steps_plus_one(scan_0512: ScanResult) -> None:
    result = scan_0512
    assert triton_v2_against_eagle_runner(result) == []
    assert result.mode_model_source.endswith("model_executor/forward_batch_info.py")
    # EAGLE v1 draft extend packs the accepted tokens: aiter's replay `cumsum(accept_lens)`
    # after a uniform capture is its layout, not a capture-replay mismatch. The one IDX003 is
    # TRT-LLM MLA's replay, which copies a `num_draft_tokens` stride into the buffer its
    # capture laid out with the runner's width (docs/triage/sglang-0.5.12-0.5.13.md).
    mismatches = [f for f in result.findings if f.code == "IDX003"]
    assert [(Path(f.span.path).name, f.mode) for f in mismatches] == [
        ("trtllm_mla_backend.py", "DRAFT_EXTEND")
    ]


def test_0512_v2_against_the_eagle_runner_is_checked_with_topk_1(scan_0512: ScanResult) -> None:
    """0.5.12 runs EAGLE with topk > 1 on the v1 workers ("spec v2 currently only supports
    topk = 1"), and its EAGLE draft-extend runner captures in DRAFT_EXTEND_V2 only for a v2
    worker: against that runner, DRAFT_EXTEND_V2 is checked with topk 1, and nothing is left
    (before the profile read that statement, NSA's and TRT-LLM MLA's v2 findings were refuted
    against it with topk 2). The multi-layer runner, which the v1 multi-layer worker also
    drives in DRAFT_EXTEND_V2, keeps the whole domain: its findings cite no such constraint."""
    v2 = [f for f in scan_0512.findings if f.mode == "DRAFT_EXTEND_V2"]
    assert v2
    assert [f for f in v2 if runner_of(f) == EAGLE_RUNNER] == []
    for finding in v2:
        assert runner_of(finding) == "MultiLayerEagleDraftExtendCudaGraphRunner"
        assert not any(line.startswith("tree constraint:") for line in finding.explain)


def test_0513_has_no_v1_worker_so_v1_draft_extend_does_not_run(
    scan_0512: ScanResult, scan_0513: ScanResult
) -> None:
    """0.5.13 keeps `ForwardMode.DRAFT_EXTEND` but no code puts a batch in it (the EAGLE v1
    worker is gone; the draft-extend runner's own v1 arm does not count): the fix's v1 arm
    (`triton_backend.py:445`) is not checked. 0.5.12's v1 worker still makes the mode run."""
    assert [f for f in scan_0513.findings if f.mode == "DRAFT_EXTEND"] == []
    assert [f for f in scan_0512.findings if f.mode == "DRAFT_EXTEND"] != []


V1_WORKER = """from sglang.srt.model_executor.forward_batch_info import ForwardMode


def draft_extend_after_decode(batch):
    batch.forward_mode = (
        ForwardMode.DRAFT_EXTEND if not batch.forward_mode.is_idle() else ForwardMode.IDLE
    )
"""


def test_0513_v1_grids_cover_the_accepted_tokens(tmp_path: Path, srt_0513: Path) -> None:
    """With a v1 worker added, the 0.5.13 draft-extend runner captures num_draft_tokens per
    request in v1 too (the size of its buffers); a v1 request carries at most
    min(num_steps + 1, num_draft_tokens), which the fix's v1 arm `max_extend_len = num_steps +
    1` covers. FlashAttention's and TRT-LLM MHA's `max_seq_len_q = 1` for a batch without CPU
    accept counts is a branch that draft extend does not take (the profile's runtime facts).
    The v1 arm's stride is still compared with the runner's width, and reported."""
    tree = tmp_path / "srt"
    shutil.copytree(srt_0513, tree)
    (tree / "speculative" / "v1_worker.py").write_text(V1_WORKER)
    result = scan([str(tree)])
    v1 = [
        (f.code, f.span.path.split("/srt/")[-1], f.span.line)
        for f in result.findings
        if f.mode == "DRAFT_EXTEND"
    ]
    assert v1 == [("IDX001", "layers/attention/triton_backend.py", 445)]


def test_0513_reverted_fix_is_flagged_against_the_runner(tmp_path: Path, srt_0513: Path) -> None:
    tree = tmp_path / "srt"
    shutil.copytree(srt_0513, tree)
    backend = tree / "layers/attention/triton_backend.py"
    backend.write_text(variant(backend.read_text(), {0, 1}))
    result = scan([str(tree)])
    flagged = triton_v2_against_eagle_runner(result)
    assert sorted(f.code for f in flagged) == ["IDX001", "IDX002"]
    for finding in flagged:
        assert finding.counterexample["speculative_eagle_topk"] > 1
        runner = next(r for r in finding.related if r.role == "runner")
        assert runner.span is not None
        assert runner.span.path.endswith("speculative/eagle_draft_extend_cuda_graph_runner.py")
        assert "runtime width" in "\n".join(finding.explain)


def test_0513_as_shipped_agrees_with_the_eagle_runner(scan_0513: ScanResult) -> None:
    assert triton_v2_against_eagle_runner(scan_0513) == []


def test_0523_as_shipped_agrees_with_the_eagle_runner() -> None:
    result = scan([str(sglang_tree("0.5.23"))])
    assert triton_v2_against_eagle_runner(result) == []
    assert result.errors == []
    triage = (Path(__file__).resolve().parent.parent / "docs/triage/sglang-0.5.23.md").read_text()
    for finding in result.findings:
        path = finding.span.path.split("/sglang/")[-1]
        entry = f"{path}:{finding.span.line} {finding.code} {finding.mode}"
        assert entry in triage, f"untriaged finding: {entry}"
    counted = re.findall(r"^\| (\d+) \| ", triage, re.MULTILINE)
    assert counted, "the triage lists UNSUPPORTED reasons with counts"


def test_0509_bugs_fixed_in_0510_are_flagged() -> None:
    """Two DRAFT_EXTEND_V2 replays of 0.5.9 that 0.5.10 rewrote: Triton's `qo_indptr` from
    `cumsum(accept_lens)` after a uniform capture, and TRT-LLM MLA's `max_seq_len_q = 1` when
    the v2 worker hands no CPU accept counts (SGLang PR #21987). The TRT-LLM MLA one is against
    the EAGLE runner, with the tree's `topk == 1` for spec v2 cited."""
    result = scan([str(sglang_tree("0.5.9") / "srt")])
    assert result.errors == []
    found = {
        (f.code, f.span.path.split("/srt/")[-1], f.span.line, f.mode): f for f in result.findings
    }
    replay = found[("IDX003", "layers/attention/triton_backend.py", 764, "DRAFT_EXTEND_V2")]
    assert "runtime lengths" in replay.message
    grid = found[("IDX002", "layers/attention/trtllm_mla_backend.py", 550, "DRAFT_EXTEND_V2")]
    assert runner_of(grid) == EAGLE_RUNNER
    assert grid.counterexample["speculative_eagle_topk"] == 1
    assert any(
        line.startswith("tree constraint:") and "server_args.py" in line for line in grid.explain
    )
