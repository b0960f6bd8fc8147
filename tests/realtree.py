"""Real SGLang and vLLM trees for tests: downloaded from PyPI at test time into an ignored cache
(`.cache/sglang/<version>/sglang` by bench/sglang_tree.py, `.cache/vllm/<version>/vllm` by
bench/vllm_tree.py), never committed. Set IDXCHECK_OFFLINE=1 to skip the tests that need them,
with that reason; otherwise a failed download fails the test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import sglang_tree as _download
from bench import vllm_tree as _download_vllm


def sglang_tree(version: str) -> Path:
    """The `sglang` package folder of release `version`."""
    if os.environ.get("IDXCHECK_OFFLINE"):
        pytest.skip("IDXCHECK_OFFLINE is set: real SGLang releases are not downloaded")
    return _download.sglang_tree(version)


def vllm_tree(version: str) -> Path:
    """The `vllm` package folder of release `version`."""
    if os.environ.get("IDXCHECK_OFFLINE"):
        pytest.skip("IDXCHECK_OFFLINE is set: real vLLM releases are not downloaded")
    return _download_vllm.vllm_tree(version)


# vLLM's ROCm AITER MLA builder, and the files that give it its context: the builders and
# their bases, and what lays out the runtime's width (the dispatcher and the model runner).
VLLM_AITER = "v1/attention/backends/mla/rocm_aiter_mla.py"
VLLM_DECODE_PARTS = (
    "v1/attention",
    "model_executor/layers/attention/mla_attention.py",
    "v1/cudagraph_dispatcher.py",
    "v1/worker/gpu_model_runner.py",
)
