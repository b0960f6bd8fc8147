"""Fixes: where the backend holds the runtime's width in an attribute, a finding carries the
replacement of its expression (guarded by the mode where its function runs in other modes
too); SARIF carries it as a fix, and `idxcheck scan --fix` applies it, after which the file
scans clean."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from idxcheck.app.fixes import apply_fixes
from idxcheck.app.run import scan
from idxcheck.cli import main

from .conftest import FIXTURES
from .sarif_check import assert_valid_sarif

# One helper reached in v1 and v2 draft extend: v1's runner lays out num_steps + 1 per request
# (the profile default), v2's num_draft_tokens. Only v2 is wrong, so the fix keeps v1's arm.
TWO_MODES = """import torch


class TwoModesBackend:
    def __init__(self, model_runner):
        args = model_runner.server_args
        self.num_draft_tokens = args.speculative_num_draft_tokens
        self.speculative_num_steps = args.speculative_num_steps
        max_bs = model_runner.req_to_token_pool.size
        self.qo_indptr = torch.zeros((max_bs + 1,), dtype=torch.int64)

    def _fill(self, bs, forward_mode):
        per_req = self.speculative_num_steps + 1  # v2 lays out more
        qo_indptr = self.qo_indptr[: bs + 1]
        qo_indptr[: bs + 1] = torch.arange(0, bs * per_req + 1, step=per_req, dtype=torch.int32)

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, seq_lens, forward_mode, spec_info):
        if forward_mode.is_draft_extend(include_v2=True):
            self._fill(bs, forward_mode)
"""


def _fix_run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["scan", "--no-cache", "--color", "never", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_motivating_fixture_is_fixed_and_then_scans_clean(tmp_path: Path) -> None:
    path = tmp_path / "backend.py"
    path.write_text((FIXTURES / "bugs/eagle_draft_extend_v2.py").read_text())
    before = scan([str(path)])
    assert sorted(f.code for f in before.findings) == ["IDX001", "IDX002"]
    for finding in before.findings:
        assert finding.fix is not None
        assert finding.fix.original == "self.speculative_num_steps + 1"
        assert finding.fix.replacement == "self.num_draft_tokens"
    code, out, err = _fix_run("--fix", str(path))
    assert code == 0, out + err
    assert "applied 2 fixes in 1 file" in err
    assert "No findings" in out
    text = path.read_text()
    assert "self.speculative_num_steps + 1" not in text
    assert text.count("self.num_draft_tokens") == 3  # the attribute and the two fixes
    assert scan([str(path)]).findings == []


def test_a_function_of_several_modes_gets_a_guarded_fix(tmp_path: Path) -> None:
    path = tmp_path / "two_modes.py"
    path.write_text(TWO_MODES)
    [finding] = scan([str(path)]).findings
    assert finding.mode == "DRAFT_EXTEND_V2"
    assert finding.fix is not None
    assert finding.fix.replacement == (
        "(self.num_draft_tokens if forward_mode.is_draft_extend_v2() "
        "else self.speculative_num_steps + 1)"
    )
    assert "DRAFT_EXTEND" in finding.fix.description
    assert apply_fixes([finding]).count == 1
    fixed = path.read_text()
    assert "per_req = (self.num_draft_tokens if forward_mode.is_draft_extend_v2() else" in fixed
    assert "# v2 lays out more" in fixed  # the rest of the line is kept
    result = scan([str(path)])
    assert result.findings == [] and result.errors == []
    # Both modes are still checked, and proved.
    assert {o.mode for o in result.outcomes} >= {"DRAFT_EXTEND", "DRAFT_EXTEND_V2"}


def test_no_fix_where_no_attribute_holds_the_width(tmp_path: Path) -> None:
    path = tmp_path / "no_attribute.py"
    path.write_text(
        TWO_MODES.replace("        self.num_draft_tokens = args.speculative_num_draft_tokens\n", "")
    )
    [finding] = scan([str(path)]).findings
    assert finding.fix is None
    code, _, err = _fix_run("--fix", str(path))
    assert code == 1 and "applied 0 fixes in 0 files" in err
    assert path.read_text() == TWO_MODES.replace(
        "        self.num_draft_tokens = args.speculative_num_draft_tokens\n", ""
    )


def test_a_fix_whose_text_moved_is_left_out(tmp_path: Path) -> None:
    """A file edited between the scan and the fix: the expression is no longer at its place,
    and the file is left as it is."""
    path = tmp_path / "backend.py"
    path.write_text((FIXTURES / "bugs/eagle_draft_extend_v2.py").read_text())
    findings = scan([str(path)]).findings
    edited = "# a line added above\n" + path.read_text()
    path.write_text(edited)
    applied = apply_fixes(findings)
    assert applied.count == 0 and len(applied.skipped) == 2
    assert all("changed since the scan" in s for s in applied.skipped)
    assert path.read_text() == edited


def test_sarif_carries_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "backend.py"
    path.write_text((FIXTURES / "bugs/eagle_draft_extend_v2.py").read_text())
    out = tmp_path / "report.sarif"
    code, _, _ = _fix_run("--format", f"sarif={out}", str(path))
    assert code == 1
    doc = json.loads(out.read_text())
    assert_valid_sarif(doc)
    lines = path.read_text().splitlines()
    for result in doc["runs"][0]["results"]:
        [fix] = result["fixes"]
        [change] = fix["artifactChanges"]
        [replacement] = change["replacements"]
        region = replacement["deletedRegion"]
        line = lines[region["startLine"] - 1]
        deleted = line[region["startColumn"] - 1 : region["endColumn"] - 1]
        assert deleted == "self.speculative_num_steps + 1"
        assert replacement["insertedContent"]["text"] == "self.num_draft_tokens"


def test_fix_is_described_as_unsafe_in_help() -> None:
    result = CliRunner().invoke(main, ["scan", "--help"])
    assert "--fix" in result.output
    assert "unsafe" in " ".join(result.output.split())


def test_where_no_attribute_holds_it_the_width_the_runtime_publishes_is_read(
    tmp_path: Path,
) -> None:
    # No attribute holds the runner's width, but the function holds the speculative input the
    # runtime publishes it on: the fix reads it there, the original kept as its default.
    path = tmp_path / "published.py"
    text = (
        TWO_MODES.replace("        self.num_draft_tokens = args.speculative_num_draft_tokens\n", "")
        .replace(
            "def _fill(self, bs, forward_mode):", "def _fill(self, bs, forward_mode, spec_info):"
        )
        .replace("self._fill(bs, forward_mode)", "self._fill(bs, forward_mode, spec_info)")
    )
    path.write_text(text)
    [finding] = scan([str(path)]).findings
    assert finding.fix is not None
    assert finding.fix.replacement == (
        '(getattr(spec_info, "num_tokens_per_req", self.speculative_num_steps + 1) '
        "if forward_mode.is_draft_extend_v2() else self.speculative_num_steps + 1)"
    )
    assert "the width the runtime publishes" in finding.fix.description
    assert apply_fixes([finding]).count == 1
    result = scan([str(path)])
    assert result.findings == [] and result.errors == []
    assert {o.mode for o in result.outcomes} >= {"DRAFT_EXTEND", "DRAFT_EXTEND_V2"}
