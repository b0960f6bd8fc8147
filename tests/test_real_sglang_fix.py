"""`scan --fix` and the operator's terms on real SGLang releases (downloaded from PyPI at test
time): the motivating fix reverted in 0.5.13 is restored by the fixes the findings carry, and
0.5.23's multi-layer EAGLE findings say how to launch them."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck.app.fixes import apply_fixes
from idxcheck.app.run import scan
from idxcheck.cli import main

from .realtree import sglang_tree
from .test_real_sglang import FIXED, variant
from .test_real_sglang_runners import TRITON, runner_of, triton_v2_against_eagle_runner

pytestmark = pytest.mark.network


def test_0513_reverted_backend_is_restored_by_scan_fix(tmp_path: Path) -> None:
    """The backend alone, both sites reverted: `scan --fix` writes back the real fix (the v2
    arm `self.num_draft_tokens`, the other modes' `num_steps + 1`), and the file scans clean,
    as the release does."""
    shipped = (sglang_tree("0.5.13") / TRITON).read_text()
    path = tmp_path / "triton_backend.py"
    path.write_text(variant(shipped, {0, 1}))
    result = CliRunner().invoke(main, ["scan", "--no-cache", "--fix", str(path)])
    assert result.exit_code == 0, result.output
    assert "applied 2 fixes in 1 file" in result.stderr
    fixed = path.read_text()
    assert len(FIXED.findall(fixed)) == 2
    assert " ".join(fixed.split()).replace("( ", "(").replace(" )", ")") == " ".join(
        shipped.split()
    ).replace("( ", "(").replace(" )", ")")
    assert scan([str(path)]).findings == []


@pytest.mark.slow
def test_0513_reverted_tree_fixed_scans_as_the_release(tmp_path: Path) -> None:
    """The whole tree with the fix reverted: the two findings against the EAGLE runner carry
    fixes, and once applied the tree's findings are the release's own."""
    tree = tmp_path / "srt"
    shutil.copytree(sglang_tree("0.5.13") / "srt", tree)
    backend = tree / "layers/attention/triton_backend.py"
    backend.write_text(variant(backend.read_text(), {0, 1}))
    reverted = scan([str(tree)])
    flagged = triton_v2_against_eagle_runner(reverted)
    assert sorted(f.code for f in flagged) == ["IDX001", "IDX002"]
    assert all(f.fix is not None for f in flagged)
    assert apply_fixes(flagged).count == 2
    fixed = scan([str(tree)])
    assert triton_v2_against_eagle_runner(fixed) == []
    shipped = scan([str(sglang_tree("0.5.13") / "srt")])

    def kinds(findings):  # type: ignore[no-untyped-def]
        return Counter(
            (f.code, f.mode, f.function, runner_of(f), f.span.path.split("/srt/")[-1])
            for f in findings
        )

    assert kinds(fixed.findings) == kinds(shipped.findings)


@pytest.mark.slow
def test_0523_multi_layer_finding_in_the_operators_terms() -> None:
    """Triton's draft extend against the multi-layer EAGLE runner (its boundary-KV front
    rows): the launch names the triton backend, multi-layer EAGLE, the boundary-KV switch and
    a hybrid model; the conditions are not the pair `self.dllm_attention is None` with
    `dllm_fa4` true that the class rules out (its base declares `dllm_attention = None`);
    the failing comparison is shown with the shared symbol cancelled."""
    result = scan([str(sglang_tree("0.5.23"))])
    finding = next(
        f
        for f in result.findings
        if f.span.path.endswith(TRITON) and f.code == "IDX001" and f.mode == "DRAFT_EXTEND_V2"
    )
    assert finding.launch is not None
    command = finding.launch.command.split()
    for word in (
        "--enable-multi-layer-eagle",
        "SGLANG_ENABLE_MTP_BOUNDARY_KV_FIX=1",
        "--speculative-algorithm",
    ):
        assert word in command
    assert "--attention-backend triton" in finding.launch.command
    assert any("hybrid linear-attention" in m for m in finding.launch.model)
    conditions = dict(finding.conditions)
    assert not (conditions.get("self.dllm_attention is None") and conditions.get("dllm_fa4"))
    assert conditions.get("dllm_fa4") is not True
    failing = next(line for line in finding.explain if line.startswith("fails whenever:"))
    assert "that is {num_front_tokens} != 0" in failing
    assert "{num_draft_tokens}" in finding.message
