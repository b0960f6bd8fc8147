"""--emit-test: the emitted regression tests exist only for confirmed findings and run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from idxcheck.runtime_kernels.confirm import confirm_findings

pytestmark = pytest.mark.usefixtures("runtime")


def _doc() -> dict[str, object]:
    def finding(code: str, **kw: object) -> dict[str, object]:
        block = {
            "mode": "DRAFT_EXTEND_V2",
            "bs": 2,
            "capture_bs": 2,
            "tokens_per_req": 8,
            "qo_stride": None,
            "max_len": None,
            "block_m": None,
            "head_dim": 16,
        }
        block.update(kw)
        return {
            "code": code,
            "verdict": "REFUTED",
            "mode": "DRAFT_EXTEND_V2",
            "path": "python/sglang/srt/layers/attention/triton_backend.py",
            "line": 1,
            "counterexample": {"bs": 2},
            "replay": block,
        }

    return {
        "version": "0.1.0",
        "findings": [
            finding("IDX001", qo_stride=4, max_len=4),  # confirmed
            finding("IDX002", max_len=4),  # latent: no test
            finding("IDX002", tokens_per_req=48, max_len=4, block_m=32),  # confirmed
        ],
        "errors": [],
        "stats": {},
    }


def _pytest(path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.pop("TRITON_INTERPRET", None)  # the emitted test must choose the mode by itself
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=path.parent,
        timeout=600,
    )


def test_emitted_tests_run_and_can_fail(tmp_path: Path) -> None:
    out_dir = tmp_path / "emitted"
    out = confirm_findings(_doc(), device="cpu", emit_test_dir=str(out_dir))
    statuses = [f["confirmation"]["status"] for f in out["findings"]]
    assert statuses == ["confirmed", "not_reproduced", "confirmed"]
    files = sorted(out_dir.glob("test_*.py"))
    assert [f.name for f in files] == [
        "test_idxcheck_idx001_draft_extend_v2_1.py",
        "test_idxcheck_idx002_draft_extend_v2_2.py",
    ]
    text = files[0].read_text()
    assert "EXPECTED_UNWRITTEN = (8, 9, 10, 11, 12, 13, 14, 15)" in text
    assert "EXPECTED_WRONG = (4, 5, 6, 7)" in text
    assert "block_m=128" in text  # pinned, so the test means the same on every device

    proc = _pytest(out_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "6 passed" in proc.stdout

    # The pinned rows are real assertions: a test expecting a clean replay fails.
    broken = out_dir / "test_broken.py"
    broken.write_text(
        text.replace(
            "EXPECTED_UNWRITTEN = (8, 9, 10, 11, 12, 13, 14, 15)", "EXPECTED_UNWRITTEN = ()"
        )
    )
    proc = _pytest(broken)
    assert proc.returncode == 1 and "rows never written changed" in proc.stdout
