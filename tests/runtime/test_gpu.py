"""GPU path: real torch.cuda.CUDAGraph capture and replay (marked ``gpu``; skipped without CUDA).

Run them in a process of their own (``pytest -m gpu tests/runtime``): once a CPU test has put this
process's triton in interpreter mode, compiled kernels are unavailable and these tests skip.

Set ``IDXCHECK_SGLANG_PATH`` to a folder holding SGLang's ``triton_ops/extend_attention.py`` (and
what it imports, or stubs) to compare with SGLang's own kernel, and ``IDXCHECK_VLLM_KERNEL`` to a
vLLM tree's ``vllm/v1/attention/ops/triton_unified_attention.py`` to replay on vLLM's own kernel.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys

import pytest

from idxcheck.runtime_kernels.layout import predict_rows, predict_rows_end_aligned, uniform_indptr
from idxcheck.runtime_kernels.replay import ReplayCase, ReplayResult

pytestmark = pytest.mark.gpu

SGLANG_KERNEL = "sglang.srt.layers.attention.triton_ops.extend_attention:extend_attention_fwd"


@pytest.fixture
def gpu(cuda: str) -> str:
    from idxcheck.runtime_kernels._jit import ensure_mode

    if not ensure_mode(False):
        pytest.skip("triton is in interpreter mode in this process: run `pytest -m gpu` alone")
    return cuda


# DOMAIN.md section 1 (real SGLang kernel on an H200): (bs, W, stride, max_len, head dim, heads,
# kv heads, rows never written on sm90).
TABLE = [
    pytest.param(2, 8, 4, 4, 128, 4, 4, 8, id="2-4-3-8-stride"),
    pytest.param(2, 8, 8, 4, 128, 4, 4, 0, id="2-4-3-8-maxlen-latent"),
    pytest.param(4, 16, 4, 4, 128, 8, 2, 48, id="4-8-3-16-gqa-stride"),
    pytest.param(4, 16, 16, 4, 128, 8, 2, 0, id="4-8-3-16-gqa-maxlen-latent"),
    pytest.param(2, 48, 4, 4, 576, 4, 1, 88, id="2-8-3-48-mla-stride"),
    pytest.param(2, 48, 48, 4, 576, 4, 1, 32, id="2-8-3-48-mla-maxlen"),
    pytest.param(2, 4, 4, 4, 128, 4, 4, 0, id="2-1-3-4-topk1"),
]


def _case(bs: int, w: int, stride: int, max_len: int, hd: int, h: int, kvh: int) -> ReplayCase:
    return ReplayCase(
        bs=bs,
        tokens_per_req=w,
        qo_stride=stride,
        max_len=max_len,
        head_dim=hd,
        num_heads=h,
        num_kv_heads=kvh,
    )


def _check_against_contract(result: ReplayResult) -> None:
    case = result.case
    assert result.block_m is not None
    predicted = predict_rows(
        bs=case.bs,
        capture_bs=case.padded_bs,
        tokens_per_req=case.tokens_per_req,
        qo_indptr=uniform_indptr(case.padded_bs, case.qo_stride),
        max_len=case.max_len,
        block_m=result.block_m,
    )
    assert result.unwritten_rows == predicted.unwritten
    assert result.wrong_rows == predicted.wrong
    assert result.probe is not None
    assert result.probe.rows.computed_as == predicted.computed_as


@pytest.mark.parametrize(("bs", "w", "stride", "max_len", "hd", "h", "kvh", "unwritten"), TABLE)
def test_domain_table_under_a_real_cuda_graph(
    gpu: str,
    bs: int,
    w: int,
    stride: int,
    max_len: int,
    hd: int,
    h: int,
    kvh: int,
    unwritten: int,
) -> None:
    import torch

    from idxcheck.runtime_kernels.replay import ReplaySession

    session = ReplaySession(_case(bs, w, stride, max_len, hd, h, kvh), device=gpu)
    assert isinstance(session._graph, torch.cuda.CUDAGraph)
    result = session.run()
    assert result.dtype == "bfloat16"
    _check_against_contract(result)
    if torch.cuda.get_device_capability()[0] == 9:
        assert result.block_m == (128 if hd <= 128 else 32)
        assert result.rows_unwritten == unwritten
    again = session.run()  # refilled in place, replayed again: same rows
    assert (again.unwritten_rows, again.wrong_rows) == (result.unwritten_rows, result.wrong_rows)


def test_padded_capture_and_small_block(gpu: str) -> None:
    from idxcheck.runtime_kernels.replay import replay

    case = ReplayCase(
        bs=3, capture_bs=8, tokens_per_req=48, qo_stride=48, max_len=4, block_m=16, head_dim=128
    )
    result = replay(case, device=gpu)
    assert result.rows_unwritten == 3 * 32
    _check_against_contract(result)


def test_replay_is_fast_after_capture(gpu: str) -> None:
    import time

    from idxcheck.runtime_kernels.replay import ReplaySession

    session = ReplaySession(_case(2, 8, 4, 4, 128, 4, 4), device=gpu)
    session.run()
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        session.run()
        times.append(time.perf_counter() - t0)
    # Target 50 ms; the bound is loose so a busy host does not make the test flaky.
    assert statistics.median(times) < 0.25


@pytest.fixture
def sglang_path() -> str:
    path = os.environ.get("IDXCHECK_SGLANG_PATH")
    if not path or not os.path.isdir(path):
        pytest.skip("set IDXCHECK_SGLANG_PATH to compare with SGLang's extend_attention_fwd")
    if path not in sys.path:
        sys.path.insert(0, path)
    return path


@pytest.mark.parametrize(("bs", "w", "stride", "max_len", "hd", "h", "kvh", "unwritten"), TABLE)
def test_sglang_kernel_agrees_with_ours(
    gpu: str,
    sglang_path: str,
    bs: int,
    w: int,
    stride: int,
    max_len: int,
    hd: int,
    h: int,
    kvh: int,
    unwritten: int,
) -> None:
    from idxcheck.runtime_kernels.replay import replay

    case = _case(bs, w, stride, max_len, hd, h, kvh)
    theirs = replay(case, device=gpu, kernel=SGLANG_KERNEL)
    assert theirs.block_m is not None  # read from SGLang's block-size helper
    ours = replay(dataclasses.replace(case, block_m=theirs.block_m), device=gpu)
    assert theirs.unwritten_rows == ours.unwritten_rows
    assert theirs.wrong_rows == ours.wrong_rows
    _check_against_contract(theirs)


@pytest.fixture
def vllm_kernel() -> str:
    path = os.environ.get("IDXCHECK_VLLM_KERNEL")
    if not path or not os.path.isfile(path):
        pytest.skip("set IDXCHECK_VLLM_KERNEL to replay on vLLM's unified_attention")
    return f"{path}:unified_attention"


# vLLM 0.26.0's ROCm AITER MLA eager decode (stride 1, W = 1 + k), a padded capture of the same
# bug, and the fixed layouts.
VLLM_CASES = [
    pytest.param(ReplayCase(bs=2, tokens_per_req=2, qo_stride=1, max_len=2), id="aiter-k1"),
    pytest.param(
        ReplayCase(bs=3, capture_bs=8, tokens_per_req=4, qo_stride=1, max_len=4, num_heads=8),
        id="aiter-k3-padded",
    ),
    pytest.param(ReplayCase(bs=2, tokens_per_req=2, qo_stride=2, max_len=2), id="fixed-k1"),
    pytest.param(
        ReplayCase(bs=3, capture_bs=8, tokens_per_req=4, qo_stride=4, max_len=4, num_heads=8),
        id="fixed-k3-padded",
    ),
]


@pytest.mark.parametrize("case", VLLM_CASES)
def test_vllm_kernel_under_a_real_cuda_graph(gpu: str, vllm_kernel: str, case: ReplayCase) -> None:
    from idxcheck.runtime_kernels.replay import replay

    result = replay(case, device=gpu, kernel=vllm_kernel, convention="vllm")
    predicted = predict_rows_end_aligned(
        bs=case.bs,
        capture_bs=case.padded_bs,
        tokens_per_req=case.tokens_per_req,
        qo_indptr=uniform_indptr(case.padded_bs, case.qo_stride),
    )
    assert result.dtype == "bfloat16"
    assert result.unwritten_rows == predicted.unwritten
    assert result.wrong_rows == predicted.wrong
    assert result.reproduced == (case.qo_stride != case.tokens_per_req)
