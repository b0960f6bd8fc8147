"""SGLang's own extend_attention_fwd, downloaded at test time, replayed on the CPU interpreter.

Marked ``network`` (it downloads sglang 0.5.13 through ``tests/realtree.py``) and ``slow``. The
release's two Triton files are copied into the ignored ``.cache/`` folder with a two-function
stub for ``sglang.srt.utils`` (the only other thing they import); no SGLang code is committed.

Without a GPU, SGLang's block-size table falls to its "older architectures" row: BLOCK_M 64 for
head dims <= 128. Our kernel replayed at that BLOCK_M must give the same rows.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from idxcheck.runtime_kernels.replay import ReplayCase

from ..realtree import sglang_tree as release_tree

pytestmark = [
    pytest.mark.network,
    pytest.mark.slow,
    pytest.mark.usefixtures("runtime"),
    # SGLang's kernel divides masked-out rows by zero under the interpreter (its business).
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
]

VERSION = "0.5.13"
KERNEL = "sglang.srt.layers.attention.triton_ops.extend_attention:extend_attention_fwd"
FILES = (
    "sglang/srt/layers/attention/triton_ops/extend_attention.py",
    "sglang/srt/layers/attention/triton_ops/prefill_attention.py",
)
UTILS_STUB = '''"""idxcheck test stub: what triton_ops imports from sglang.srt.utils."""
import torch


def is_hip() -> bool:
    return torch.version.hip is not None


def is_cuda() -> bool:
    return torch.cuda.is_available() and torch.version.cuda is not None
'''


def _prepare(root: Path) -> Path:
    tree = root / f"sglang-{VERSION}"
    if all((tree / f).exists() for f in FILES):
        return tree
    release = release_tree(VERSION).parent  # the unpacked wheel: `sglang/...` below it
    for name in FILES:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(release / name, tree / name)
    for pkg in (
        "sglang",
        "sglang/srt",
        "sglang/srt/layers",
        "sglang/srt/layers/attention",
        "sglang/srt/layers/attention/triton_ops",
    ):
        (tree / pkg / "__init__.py").touch()
    (tree / "sglang/srt/utils").mkdir(parents=True, exist_ok=True)
    (tree / "sglang/srt/utils/__init__.py").write_text(UTILS_STUB)
    return tree


@pytest.fixture
def sglang_tree() -> Iterator[Path]:
    import triton  # type: ignore[import-untyped]

    if tuple(int(x) for x in triton.__version__.split(".")[:2]) < (3, 7):
        pytest.skip(
            "SGLang's kernel loops over loaded scalars, which Triton < 3.7's interpreter "
            "cannot do with NumPy >= 2.4"
        )
    tree = _prepare(Path(__file__).resolve().parents[2] / ".cache" / "idxcheck-sglang")
    sys.path.insert(0, str(tree))
    try:
        yield tree
    finally:
        sys.path.remove(str(tree))
        for name in [m for m in sys.modules if m == "sglang" or m.startswith("sglang.")]:
            del sys.modules[name]


@pytest.mark.parametrize(
    ("stride", "max_len", "unwritten", "wrong"),
    [(4, 4, 8, 4), (8, 4, 0, 0), (8, 8, 0, 0)],
)
def test_sglang_kernel_on_the_interpreter_matches_ours(
    sglang_tree: Path, stride: int, max_len: int, unwritten: int, wrong: int
) -> None:
    from idxcheck.runtime_kernels.replay import replay

    case = ReplayCase(bs=2, tokens_per_req=8, qo_stride=stride, max_len=max_len, head_dim=32)
    theirs = replay(case, device="cpu", kernel=KERNEL)
    assert theirs.block_m == 64  # SGLang's table without CUDA, head dim <= 128
    ours = replay(dataclasses.replace(case, block_m=theirs.block_m), device="cpu")
    assert (theirs.rows_unwritten, theirs.rows_wrong) == (unwritten, wrong)
    assert theirs.unwritten_rows == ours.unwritten_rows
    assert theirs.wrong_rows == ours.wrong_rows
    assert theirs.probe is not None and theirs.probe.unwritten == theirs.unwritten_rows
