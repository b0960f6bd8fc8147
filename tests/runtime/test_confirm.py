"""confirm_findings: finding -> replay -> confirmation, skipped paths, bring-your-own kernel."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from idxcheck.runtime_kernels.confirm import INSTALL_HINT, case_from_finding, confirm_findings

HD = 32
KEYS = {
    "status",
    "convention",
    "reason",
    "rows_unwritten",
    "rows_wrong",
    "rel_error",
    "block_m",
    "device",
    "seconds",
}


def _finding(code: str, **replay: Any) -> dict[str, Any]:
    block = {
        "mode": "DRAFT_EXTEND_V2",
        "bs": 2,
        "capture_bs": 2,
        "tokens_per_req": 8,
        "qo_stride": None,
        "max_len": None,
        "block_m": None,
        "head_dim": HD,
    }
    block.update(replay)
    return {
        "code": code,
        "verdict": "REFUTED",
        "mode": "DRAFT_EXTEND_V2",
        "counterexample": {
            "bs": block["bs"],
            "speculative_eagle_topk": 4,
            "speculative_num_steps": 3,
            "speculative_num_draft_tokens": block["tokens_per_req"],
        },
        "replay": block,
    }


def _doc(*findings: dict[str, Any]) -> dict[str, Any]:
    return {"version": "0.1.0", "findings": list(findings), "errors": [], "stats": {}}


def test_case_from_finding_fills_nulls_from_the_layout() -> None:
    case = case_from_finding(_finding("IDX001", qo_stride=4))
    assert (case.bs, case.padded_bs, case.tokens_per_req) == (2, 2, 8)
    assert (case.qo_stride, case.max_len, case.block_m, case.head_dim) == (4, 8, None, HD)
    with pytest.raises(ValueError, match="tokens_per_req"):
        case_from_finding({"verdict": "REFUTED", "replay": {"bs": 2}})


@pytest.mark.usefixtures("runtime")
def test_confirms_the_bug_and_not_its_fix_or_a_latent_grid() -> None:
    doc = _doc(
        _finding("IDX001", qo_stride=4, max_len=4),  # the motivating bug
        _finding("IDX001", qo_stride=8, max_len=8),  # its fixed variant
        _finding("IDX002", max_len=4),  # grid scalar 4 < W = 8, but 128 >= 8
        _finding("IDX002", tokens_per_req=48, max_len=4, block_m=32),  # exposed at 32
        {"code": "IDX001", "verdict": "PROVED"},
        {"code": "IDX001", "verdict": "REFUTED"},  # no replay block: left alone
    )
    before = copy.deepcopy(doc)
    out = confirm_findings(doc, device="cpu")
    assert doc == before  # the input is not mutated
    bug, fixed, latent, exposed, proved, no_replay = out["findings"]
    for f in (bug, fixed, latent, exposed):
        assert set(f["confirmation"]) == KEYS
        assert f["confirmation"]["device"].startswith("cpu")
        assert f["confirmation"]["seconds"] > 0
    assert "confirmation" not in proved and "confirmation" not in no_replay

    c = bug["confirmation"]
    assert c["status"] == "confirmed"
    assert (c["rows_unwritten"], c["rows_wrong"], c["block_m"]) == (8, 4, 128)
    assert c["rel_error"] > 0.1
    assert "8 of 16 rows never written" in c["reason"]
    assert "qo_indptr stride 4" in c["reason"]

    assert fixed["confirmation"]["status"] == "not_reproduced"
    assert fixed["confirmation"]["rows_unwritten"] == 0
    assert "agrees with the layout" in fixed["confirmation"]["reason"]

    c = latent["confirmation"]
    assert c["status"] == "not_reproduced"
    assert c["reason"].startswith(
        "grid covers cdiv(max_len, BLOCK_M)*BLOCK_M = 128 >= 8 rows per request at BLOCK_M 128: "
        "the mismatch is latent at this block size"
    )

    c = exposed["confirmation"]
    assert c["status"] == "confirmed"
    assert (c["rows_unwritten"], c["rows_wrong"], c["block_m"]) == (32, 0, 32)
    assert "cdiv(4, 32)*32 = 32 < 48" in c["reason"]
    json.dumps(out, allow_nan=False)  # the document stays plain JSON


@pytest.mark.usefixtures("runtime")
def test_latent_reason_names_a_block_size_that_would_expose_it() -> None:
    out = confirm_findings(_doc(_finding("IDX002", tokens_per_req=48, max_len=4)), device="cpu")
    c = out["findings"][0]["confirmation"]
    assert c["status"] == "not_reproduced" and c["block_m"] == 128
    assert "at BLOCK_M 32 it would leave 16 of 48 rows per request unwritten" in c["reason"]


def test_malformed_replay_block_is_skipped_with_a_reason() -> None:
    bad = _finding("IDX001")
    bad["replay"]["tokens_per_req"] = "eight"
    out = confirm_findings(_doc(bad), device="cpu")
    c = out["findings"][0]["confirmation"]
    assert c["status"] == "skipped" and "tokens_per_req" in c["reason"]


def test_a_layout_of_several_segments_per_request_is_not_replayed() -> None:
    """A per-token index pointer (one segment per token, DSA's draft-extend `cu_seqlens_q`) is
    not the one-segment-per-request layout a replay builds from its stride: replaying it would
    count rows the backend does compute as unwritten."""
    per_token = _finding("IDX001", tokens_per_req=4, qo_stride=1, segments_per_req=3)
    per_request = _finding("IDX001", tokens_per_req=8, qo_stride=4, segments_per_req=1)
    out = confirm_findings(_doc(per_token, per_request), device="cpu")
    skipped, replayed = (f["confirmation"] for f in out["findings"])
    assert skipped["status"] == "skipped"
    assert "3 segments per request" in skipped["reason"]
    assert skipped["rows_unwritten"] is None
    assert replayed["status"] == "confirmed"


def test_skipped_when_torch_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import torch` raise ImportError, as if not installed.
    monkeypatch.setitem(sys.modules, "torch", None)
    out = confirm_findings(_doc(_finding("IDX001", qo_stride=4)), device="cpu")
    c = out["findings"][0]["confirmation"]
    assert c["status"] == "skipped"
    assert INSTALL_HINT in c["reason"] and "torch" in c["reason"]
    assert c["rows_unwritten"] is None and c["device"] is None


def test_confirm_module_imports_and_skips_without_torch_or_triton(tmp_path: Path) -> None:
    # A fresh interpreter in which torch and triton cannot be imported at all.
    script = textwrap.dedent(
        """
        import importlib.abc, json, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "triton"):
                    raise ImportError("blocked: " + name)
                return None

        sys.meta_path.insert(0, Block())
        from idxcheck.runtime_kernels.confirm import confirm_findings
        doc = json.loads(sys.argv[1])
        print(json.dumps(confirm_findings(doc)))
        assert "torch" not in sys.modules and "triton" not in sys.modules
        """
    )
    doc = _doc(_finding("IDX001", qo_stride=4))
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(doc)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    c = json.loads(proc.stdout)["findings"][0]["confirmation"]
    assert c["status"] == "skipped" and INSTALL_HINT in c["reason"]


def test_cuda_requested_without_a_gpu_is_skipped() -> None:
    torch = pytest.importorskip("torch")  # torch alone does not import triton
    if torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    out = confirm_findings(_doc(_finding("IDX001", qo_stride=4)), device="cuda")
    c = out["findings"][0]["confirmation"]
    assert c["status"] == "skipped" and "CUDA" in c["reason"]


# -- bring your own kernel --------------------------------------------------------------------

_SGLANG_LIKE = '''
"""A user kernel with SGLang's extend_attention_fwd signature (delegates to ours)."""
from idxcheck.runtime_kernels.extend_attention import extend_attention_fwd as _ours

CALLS = []


def _get_block_sizes_for_extend_attention(Lq, Lv):
    return (Lq, 0, Lv, 64, 64, 4)


def extend_attention_fwd(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer,
                         qo_indptr, kv_indptr, kv_indices, custom_mask, is_causal,
                         mask_indptr, max_len_extend, k_scale, v_scale, sm_scale=None,
                         logit_cap=0.0):
    assert custom_mask is None and mask_indptr is None and is_causal
    assert k_scale == 1.0 and v_scale == 1.0
    CALLS.append(max_len_extend)
    _ours(q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
          kv_indices, max_len_extend, block_m=64, sm_scale=sm_scale)
'''

_SKIPS_LAST_REQUEST = '''
"""A kernel in our convention that never computes the last request (not the contract)."""
from idxcheck.runtime_kernels.extend_attention import extend_attention_fwd as _ours


def attention(q, k, v, o, k_pool, v_pool, qo_indptr, kv_indptr, kv_indices, max_len_extend,
              *, block_m, sm_scale):
    _ours(q, k, v, o, k_pool, v_pool, qo_indptr[:-1], kv_indptr[:-1], kv_indices,
          max_len_extend, block_m=block_m, sm_scale=sm_scale)
'''


@pytest.fixture
def user_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "idxc_user_sglang_like.py").write_text(_SGLANG_LIKE)
    (tmp_path / "idxc_user_partial.py").write_text(_SKIPS_LAST_REQUEST)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("idxc_user_sglang_like", "idxc_user_partial"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


@pytest.mark.usefixtures("runtime", "user_modules")
def test_sglang_convention_kernel_agrees_with_ours() -> None:
    doc = _doc(_finding("IDX001", qo_stride=4, max_len=4), _finding("IDX001", qo_stride=8))
    ours = confirm_findings(doc, device="cpu")
    assert "idxc_user_sglang_like" not in sys.modules  # user code only when asked
    theirs = confirm_findings(
        doc, device="cpu", kernel="idxc_user_sglang_like:extend_attention_fwd"
    )
    module = sys.modules["idxc_user_sglang_like"]
    assert module.CALLS and set(module.CALLS) == {4, 8}  # max_len passed through, frozen per case
    for a, b in zip(ours["findings"], theirs["findings"], strict=True):
        ca, cb = a["confirmation"], b["confirmation"]
        assert (ca["status"], ca["rows_unwritten"], ca["rows_wrong"]) == (
            cb["status"],
            cb["rows_unwritten"],
            cb["rows_wrong"],
        )
        assert cb["block_m"] == 64  # read from the module's block-size helper
        assert "idxc_user_sglang_like:extend_attention_fwd" in cb["reason"]


@pytest.mark.usefixtures("runtime", "user_modules")
def test_kernel_breaking_the_contract_is_flagged_against_the_probe() -> None:
    out = confirm_findings(
        _doc(_finding("IDX001", qo_stride=8, max_len=8)),
        device="cpu",
        kernel="idxc_user_partial:attention",
    )
    c = out["findings"][0]["confirmation"]
    # Correct metadata, but the kernel skips request 1: its 8 rows stay unwritten.
    assert c["status"] == "confirmed" and c["rows_unwritten"] == 8
    assert "does not follow the contract" in c["reason"]


@pytest.mark.usefixtures("runtime")
def test_unloadable_kernel_is_skipped_with_the_reason() -> None:
    out = confirm_findings(
        _doc(_finding("IDX001", qo_stride=4)), device="cpu", kernel="no_such_module_xyz:fn"
    )
    c = out["findings"][0]["confirmation"]
    assert c["status"] == "skipped" and "no_such_module_xyz" in c["reason"]
    out = confirm_findings(_doc(_finding("IDX001", qo_stride=4)), device="cpu", kernel="json:dumps")
    assert "calling convention" in out["findings"][0]["confirmation"]["reason"]
