"""Shared helpers for the runtime-companion tests.

torch/triton are looked up with ``find_spec`` rather than ``pytest.importorskip``: importing
triton fixes, for the whole process, whether its kernels compile or run under the interpreter
(see ``runtime_kernels/_jit.py``), and the replay wants to make that choice itself (the
interpreter on a machine without a GPU). A test that needs the runtime takes the ``runtime``
fixture; GPU tests are marked ``gpu`` and take ``cuda``.
"""

from __future__ import annotations

import importlib.util

import pytest


def _missing_runtime() -> str | None:
    for name in ("torch", "triton", "numpy"):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed (pip install 'idxcheck[runtime]')"
    return None


@pytest.fixture
def runtime() -> None:
    """Skip unless torch, triton and numpy can be imported."""
    reason = _missing_runtime()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture
def cuda(runtime: None) -> str:
    """Skip unless a CUDA device is usable; return its torch device string."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return "cuda"
