"""vLLM's own Triton kernel (`unified_attention`) through the `vllm` convention, on the CPU.

The kernel file is read from a downloaded vLLM tree (`tests/realtree.py`, marked ``network`` and
``slow``) and imported with idxcheck's stand-ins for the rest of vLLM (`vllm_standin.py`); no vLLM
code is committed. The offline tests check the stand-in loader on a hand-written tree and the
adapter on a plain-torch kernel that follows vLLM's calling convention.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from idxcheck.runtime_kernels.layout import predict_rows_end_aligned, uniform_indptr
from idxcheck.runtime_kernels.replay import ReplayCase, ReplayResult

from ..realtree import VLLM_AITER, VLLM_DECODE_PARTS, vllm_tree

pytestmark = [
    pytest.mark.usefixtures("runtime"),
    # vLLM's kernel divides fully masked rows by zero under the interpreter (its business).
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
]

KERNEL_FILE = "v1/attention/ops/triton_unified_attention.py"
# vLLM 0.26.0's ROCm AITER MLA eager decode: qo_indptr stride 1, runner width 1 + k = 2.
AITER_CASE = ReplayCase(bs=2, tokens_per_req=2, qo_stride=1, max_len=2, mode="UNIFORM_DECODE")


def _kernel(version: str) -> str:
    """vLLM's kernel in a downloaded tree, if this Triton's interpreter can run it (its version is
    read without importing triton, whose first import fixes the process's mode: `_jit.py`)."""
    from importlib.metadata import version as installed

    if tuple(int(x) for x in installed("triton").split(".")[:2]) < (3, 7):
        # Seen on the H200 host (Triton 3.6): "InterpreterError: TypeError('only 0-dimensional
        # arrays can be converted to Python scalars')", as SGLang's kernel fails there
        # (tests/runtime/test_sglang_kernel_cpu.py); the GPU run of that host is test_gpu.py's.
        pytest.skip(
            "vLLM's kernel loops over loaded scalars, which Triton < 3.7's interpreter cannot do "
            "with NumPy >= 2.4"
        )
    return f"{vllm_tree(version) / KERNEL_FILE}:unified_attention"


def _predicted(case: ReplayCase) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    rows = predict_rows_end_aligned(
        bs=case.bs,
        capture_bs=case.padded_bs,
        tokens_per_req=case.tokens_per_req,
        qo_indptr=uniform_indptr(case.padded_bs, case.qo_stride),
    )
    return rows.unwritten, rows.wrong, rows.stray_rows


def _seen(result: ReplayResult) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    return result.unwritten_rows, result.wrong_rows, result.stray_write_rows


# -- the stand-in loader, on a tree written here ------------------------------------------------

KERNEL_SOURCE = """
import vllm.envs as envs
from vllm.logger import init_logger
from vllm.platforms import current_platform
from vllm.triton_utils import tl, triton
from vllm.v1.attention.ops.sibling import double
from vllm.v1.kv_cache_interface import KVQuantMode

logger = init_logger(__name__)
logger.debug_once("loaded")
SEEN = (envs.VLLM_BATCH_INVARIANT, current_platform.fp8_dtype(), int(KVQuantMode.NONE))


def entry(x):
    return double(x)
"""


@pytest.fixture
def triton_mode_kept() -> None:
    """The stand-ins import triton: let it come up interpreted, as a CPU replay later in this
    process needs (a process's triton keeps the mode of its first import, `_jit.py`)."""
    from idxcheck.runtime_kernels._jit import ensure_mode

    ensure_mode(True)


def _tree(tmp_path: Path) -> Path:
    ops = tmp_path / "unpacked" / "vllm" / "v1" / "attention" / "ops"
    ops.mkdir(parents=True)
    (ops / "kernel.py").write_text(KERNEL_SOURCE)
    (ops / "sibling.py").write_text("def double(x):\n    return 2 * x\n")
    (ops / "wants_config.py").write_text("from vllm.config import VllmConfig\n")
    # Never run: the stand-ins replace every package above the kernel's own folder.
    (tmp_path / "unpacked" / "vllm" / "__init__.py").write_text("raise RuntimeError('ran')\n")
    return ops


def test_a_tree_file_loads_with_the_stand_ins_and_leaves_sys_modules_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, triton_mode_kept: None
) -> None:
    import torch

    from idxcheck.runtime_kernels.vllm_standin import load_kernel_file

    ops = _tree(tmp_path)
    sentinel = object()
    monkeypatch.setitem(sys.modules, "vllm", sentinel)  # type: ignore[arg-type]
    module = load_kernel_file(ops / "kernel.py")
    assert module.__name__ == "vllm.v1.attention.ops.kernel"
    assert module.entry(21) == 42
    assert module.SEEN == (False, torch.float8_e4m3fn, 0)
    assert sys.modules["vllm"] is sentinel
    assert not [m for m in sys.modules if m.startswith("vllm.")]


def test_a_part_of_vllm_without_a_stand_in_is_named(tmp_path: Path, triton_mode_kept: None) -> None:
    from idxcheck.runtime_kernels.vllm_standin import load_kernel_file

    ops = _tree(tmp_path)
    with pytest.raises(ModuleNotFoundError, match=r"vllm\.config"):
        load_kernel_file(ops / "wants_config.py")
    assert "vllm" not in sys.modules


def test_a_file_outside_a_vllm_tree_is_refused(tmp_path: Path, triton_mode_kept: None) -> None:
    from idxcheck.runtime_kernels.vllm_standin import load_kernel_file

    (tmp_path / "kernel.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match="vllm"):
        load_kernel_file(tmp_path / "kernel.py")


# -- the adapter, on a plain-torch kernel in vLLM's calling convention -------------------------


def torch_unified_attention(
    q: Any,
    k: Any,
    v: Any,
    out: Any,
    cu_seqlens_q: Any,
    max_seqlen_q: int,
    seqused_k: Any,
    max_seqlen_k: int,
    softmax_scale: float,
    causal: bool,
    window_size: tuple[int, int],
    block_table: Any,
    softcap: float,
    q_descale: Any,
    k_descale: Any,
    v_descale: Any,
) -> None:
    """vLLM's contract in plain torch: paged keys through the block table, the queries of a
    request aligned with the end of its sequence."""
    import torch

    assert causal and window_size == (-1, -1) and softcap == 0.0
    block = k.shape[1]
    group = q.shape[1] // k.shape[2]
    starts, seq_lens = cu_seqlens_q.tolist(), seqused_k.tolist()
    for i, seq in enumerate(seq_lens):
        first, n = starts[i], starts[i + 1] - starts[i]
        if n <= 0:
            continue
        pos = torch.arange(seq)
        pages = block_table[i, pos // block].long()
        keys = k[pages, pos % block].double().repeat_interleave(group, dim=1)
        values = v[pages, pos % block].double().repeat_interleave(group, dim=1)
        scores = torch.einsum("qhd,khd->hqk", q[first : first + n].double(), keys)
        last_seen = seq - n + torch.arange(n)
        visible = pos[None, :] <= last_seen[:, None]
        probs = (scores * softmax_scale).masked_fill(~visible, float("-inf")).softmax(-1)
        out[first : first + n] = torch.einsum("hqk,khd->qhd", probs, values).to(out.dtype)


REFERENCE = f"{__name__}:torch_unified_attention"


@pytest.mark.parametrize(
    "case",
    [
        AITER_CASE,
        AITER_CASE.fixed(),
        ReplayCase(bs=3, capture_bs=4, tokens_per_req=4, qo_stride=3, max_len=4),
        ReplayCase(bs=3, capture_bs=4, tokens_per_req=4, qo_stride=4, max_len=1),
        # Prefixes longer than a 16-token block: a request's keys span several pages.
        ReplayCase(bs=2, tokens_per_req=3, qo_stride=3, max_len=3, prefix_lens=(40, 17)),
    ],
)
def test_the_adapter_feeds_a_kernel_of_vllms_contract_the_runners_layout(
    case: ReplayCase,
) -> None:
    from idxcheck.runtime_kernels.replay import replay

    # By name, so that a process whose triton compiles can replay it in its CPU subprocess.
    result = replay(case, device="cpu", kernel=REFERENCE, convention="vllm")
    assert _seen(result) == _predicted(case)
    assert result.probe is None  # the extend probe does not model this contract
    if case.qo_stride == case.tokens_per_req:
        assert result.rel_error is not None and result.rel_error < 1e-5


def test_the_vllm_convention_is_guessed_from_the_parameters() -> None:
    from idxcheck.runtime_kernels.adapters import detect_convention

    assert detect_convention(torch_unified_attention) == "vllm"


# -- vLLM's own kernel, read from the downloaded trees ------------------------------------------


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.26.0", "0.27.0", "0.33.0"])
def test_vllms_kernel_reproduces_the_aiter_layout_and_is_clean_on_the_fixed_one(
    version: str,
) -> None:
    from idxcheck.runtime_kernels.replay import replay

    kernel = _kernel(version)
    broken = replay(AITER_CASE, device="cpu", kernel=kernel, convention="vllm")
    assert broken.reproduced, broken
    assert _seen(broken) == _predicted(AITER_CASE)
    fixed = replay(AITER_CASE.fixed(), device="cpu", kernel=kernel, convention="vllm")
    assert _seen(fixed) == ((), (), 0)
    assert fixed.rel_error is not None and fixed.rel_error < 1e-5
    # The convention is guessed from the signature as well.
    guessed = replay(AITER_CASE, device="cpu", kernel=kernel)
    assert _seen(guessed) == _seen(broken)


@pytest.mark.network
@pytest.mark.slow
def test_the_aiter_finding_of_vllm_0_26_0_is_confirmed_with_vllms_kernel() -> None:
    from idxcheck.app.run import scan
    from idxcheck.model.config import Config
    from idxcheck.report.json_format import to_dict
    from idxcheck.runtime_kernels.confirm import case_from_finding, confirm_findings

    kernel = _kernel("0.26.0")
    tree = vllm_tree("0.26.0")
    doc = to_dict(scan([str(tree / part) for part in VLLM_DECODE_PARTS], Config(profile="auto")))
    aiter = [
        f for f in doc["findings"] if Path(f["path"]).resolve() == (tree / VLLM_AITER).resolve()
    ]
    assert aiter, "the 0.26.0 finding is gone: see tests/test_real_vllm_profile.py"
    out = confirm_findings(
        {**doc, "findings": aiter}, kernel=kernel, kernel_adapter="vllm", device="cpu"
    )
    for finding in out["findings"]:
        confirmation = finding["confirmation"]
        assert confirmation["status"] == "confirmed", confirmation
        case = case_from_finding(finding)
        unwritten, wrong, _ = _predicted(case)
        assert (confirmation["rows_unwritten"], confirmation["rows_wrong"]) == (
            len(unwritten),
            len(wrong),
        )
        assert confirmation["rows_unwritten"] >= 1 and confirmation["rows_wrong"] >= 1
        assert "unified_attention" in confirmation["convention"]
        # What a fixed backend builds for the same layout: every row written and right.
        fixed = confirm_findings(
            {"findings": [{**finding, "replay": {**finding["replay"], "qo_stride": None}}]},
            kernel=kernel,
            kernel_adapter="vllm",
            device="cpu",
        )["findings"][0]["confirmation"]
        assert fixed["status"] == "not_reproduced", fixed
        assert (fixed["rows_unwritten"], fixed["rows_wrong"]) == (0, 0)
    # 0.27.0 builds that layout (stride 1 + k): tests/test_real_vllm_profile.py proves it clean.


def test_the_kernel_file_spec_is_split_at_its_last_colon(tmp_path: Path) -> None:
    from idxcheck.runtime_kernels.adapters import load_user_kernel

    folder = tmp_path / "a:b"
    folder.mkdir()
    (folder / "mine.py").write_text(
        "def fn(q, k, v, o, k_pool, v_pool, qo_indptr, kv_indptr, kv_indices, max_len_extend,"
        " *, block_m, sm_scale):\n    pass\n"
    )
    adapter = load_user_kernel(f"{folder / 'mine.py'}:fn", interpret=True)
    assert adapter.name.endswith("mine.py:fn")
    assert adapter.block_m(128, 128, 64) == 64  # the idxcheck convention, guessed


def test_an_emitted_test_for_vllms_convention_pins_rows_without_a_probe(tmp_path: Path) -> None:
    import os
    import subprocess

    from idxcheck.runtime_kernels.confirm import confirm_findings

    finding = {
        "code": "IDX001",
        "verdict": "REFUTED",
        "mode": "UNIFORM_DECODE",
        "path": "v1/attention/backends/mla/rocm_aiter_mla.py",
        "line": 1,
        "replay": {"mode": "UNIFORM_DECODE", "bs": 2, "tokens_per_req": 2, "qo_stride": 1},
    }
    out_dir = tmp_path / "emitted"
    out = confirm_findings(
        {"findings": [finding]},
        kernel=REFERENCE,
        kernel_adapter="vllm",
        device="cpu",
        emit_test_dir=str(out_dir),
    )
    assert out["findings"][0]["confirmation"]["status"] == "confirmed"
    (path,) = out_dir.glob("test_*.py")
    text = path.read_text()
    unwritten, wrong, _ = _predicted(AITER_CASE)
    assert f"EXPECTED_UNWRITTEN = {unwritten!r}" in text
    assert f"EXPECTED_WRONG = {wrong!r}" in text
    assert "test_probe_matches_contract" not in text and "predict_rows" not in text
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=out_dir,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout + proc.stderr
