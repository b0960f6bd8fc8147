"""Every fixture is scanned; the findings must be exactly the `# expect:` lines, both when the
whole folder is scanned (the ForwardMode enum then comes from fixtures/runtime) and when each
file is scanned alone (the profile's default mode model and widths)."""

from __future__ import annotations

from pathlib import Path

import pytest

from idxcheck.app.run import scan
from idxcheck.model.config import Config

from .conftest import FIXTURES, ROOT
from .expectations import expectations

BACKENDS = sorted((FIXTURES / "bugs").glob("*.py")) + sorted((FIXTURES / "correct").glob("*.py"))
STRICT = Config(raise_on_unsupported=True)


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def found(result_findings: list) -> set[tuple[str, int, str]]:  # type: ignore[type-arg]
    return {(f.span.path, f.span.line, f.code) for f in result_findings}


def test_fixture_folder_matches_expectations() -> None:
    result = scan(["fixtures/bugs", "fixtures/correct", "fixtures/runtime"], STRICT)
    expected: set[tuple[str, int, str]] = set()
    for path in BACKENDS:
        expected |= expectations(path, rel(path))
    assert result.errors == []
    assert result.mode_model_source == "fixtures/runtime/forward_mode.py"
    assert found(result.findings) == expected


@pytest.mark.parametrize("path", BACKENDS, ids=lambda p: p.name)
def test_each_fixture_alone(path: Path) -> None:
    result = scan([rel(path)], STRICT)
    assert result.errors == []
    assert result.mode_model_source == "profile sglang"
    assert found(result.findings) == expectations(path, rel(path))


def test_bug_fixtures_are_flagged_and_correct_ones_are_not() -> None:
    bugs = scan(["fixtures/bugs"], STRICT)
    assert {f.span.path for f in bugs.findings} == {
        rel(p) for p in (FIXTURES / "bugs").glob("*.py")
    }
    correct = scan(["fixtures/correct"], STRICT)
    assert correct.findings == []
    assert correct.stats.proved > 0
    assert correct.stats.unsupported == 0


def test_motivating_bug_counterexample_needs_a_tree_draft() -> None:
    result = scan(["fixtures/bugs/eagle_draft_extend_v2.py"], STRICT)
    stride = next(f for f in result.findings if f.code == "IDX001")
    grid = next(f for f in result.findings if f.code == "IDX002")
    for finding in (stride, grid):
        assert finding.mode == "DRAFT_EXTEND_V2"
        assert finding.counterexample["speculative_eagle_topk"] > 1
        cex = finding.counterexample
        assert cex["speculative_num_draft_tokens"] != cex["speculative_num_steps"] + 1
        assert "topk > 1" in finding.needs_text
        # Scanned alone, the runtime width is the profile's default, and the finding says so.
        assert any(r.role == "profile" and "profile default" in r.message for r in finding.related)
    assert stride.counterexample == {
        "bs": 2,
        "speculative_eagle_topk": 2,
        "speculative_num_steps": 1,
        "speculative_num_draft_tokens": 3,
    }
    assert stride.message == (
        "qo_indptr stride `self.speculative_num_steps + 1` != runtime tokens per request "
        "`{num_draft_tokens}` in DRAFT_EXTEND_V2"
    )
    assert stride.replay is not None and stride.replay.to_dict() == {
        "mode": "DRAFT_EXTEND_V2",
        "bs": 2,
        "capture_bs": 2,
        "tokens_per_req": 3,
        "qo_stride": 2,
        "max_len": 2,
        "segments_per_req": 1,
        "block_m": None,
        "head_dim": None,
    }


def test_topk1_domain_makes_the_old_expression_safe() -> None:
    config = Config(raise_on_unsupported=True, domain=("speculative_eagle_topk == 1",))
    assert scan(["fixtures/bugs/eagle_draft_extend_v2.py"], config).findings == []


def test_a_replay_of_runtime_lengths_is_named_so() -> None:
    """The capture-replay finding on a replay that lays out runtime lengths: no term of its own
    to quote, so the message says where its layout comes from."""
    (finding,) = scan(["fixtures/bugs/capture_replay.py"], STRICT).findings
    assert finding.code == "IDX003"
    assert finding.message.startswith(
        "`qo_indptr` is laid out from runtime lengths here but with the uniform stride "
        "`speculative_num_draft_tokens` at capture"
    )
