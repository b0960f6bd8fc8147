"""Kernel-aware severity of the grid rule: with the launcher in the scanned tree, a grid scalar
smaller than the runtime width is an error when some real BLOCK_M of the launcher's table drops
rows, and a latent warning otherwise."""

from __future__ import annotations

from idxcheck.app.run import scan
from idxcheck.model.config import Config

PARTIAL_FIX = "fixtures/bugs/eagle_partial_fix.py"
LAUNCHER = "fixtures/kernels/extend_launcher.py"


def grid_finding(config: Config | None = None, with_launcher: bool = True):  # type: ignore[no-untyped-def]
    paths = [PARTIAL_FIX, LAUNCHER] if with_launcher else [PARTIAL_FIX]
    findings = [
        f
        for f in scan(paths, config).findings
        if f.code == "IDX002" and f.mode == "DRAFT_EXTEND_V2"
    ]
    assert len(findings) == 1
    return findings[0]


def test_error_with_the_block_size_that_drops_rows() -> None:
    finding = grid_finding()
    assert finding.severity == "error"
    cex = finding.counterexample
    assert cex["head_dim"] == 576
    assert cex["block_m"] == 32
    assert cex["speculative_num_draft_tokens"] > 32
    assert cex["speculative_num_draft_tokens"] > cex["speculative_num_steps"] + 1
    assert "arch=sm90" in finding.counterexample_text
    assert finding.replay is not None and finding.replay.block_m == 32
    assert finding.replay.head_dim == 576
    assert any(r.role == "kernel" and r.span and r.span.path == LAUNCHER for r in finding.related)
    assert any("latent under BLOCK_M 128 (sm90" in line for line in finding.explain)


def test_latent_warning_for_head_dim_128_on_hopper() -> None:
    config = Config(domain=("head_dim == 128", "sm == 90"))
    finding = grid_finding(config)
    assert finding.severity == "warning"
    assert "latent" in finding.message
    assert "it bites with BLOCK_M 16, 32, 64" in finding.message


def test_without_the_launcher_the_plain_rule_says_so() -> None:
    finding = grid_finding(with_launcher=False)
    assert finding.severity == "error"
    assert "block_m" not in finding.counterexample
    assert any("not in the scanned tree" in line for line in finding.explain)
