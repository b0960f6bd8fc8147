"""What a linter's user expects of `idxcheck scan`'s output: the concise format, --quiet,
--exit-zero, paths relative to the working folder, `.` without paths, --show-unsupported, a
summary whose counts add up, and a note where a mode was compared with the profile's default
width for want of its runner."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from idxcheck.cli import main

from .conftest import ROOT
from .runner_texts import DRAFT_EXTEND_RUNNER, ENUM

BUG = ROOT / "fixtures/bugs/eagle_draft_extend_v2.py"
CONCISE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>IDX\d{3}) \S.*$")
SUMMARY = re.compile(
    r"(?P<obligations>\d+) obligations?: (?P<proved>\d+) proved, (?P<refuted>\d+) refuted"
    r"(?: in (?P<from_refuted>\d+) findings?(?: and (?P<notes>\d+) notes?)?)?, "
    r"(?P<unknown>\d+) unknown, "
    r"(?P<unsupported>\d+) unsupported, (?P<unreachable>\d+) unreachable"
)
# A backend whose index pointer's stride is a power of an opaque value: UNSUPPORTED for the
# stride rule (the solver is not handed powers), and a finding of another rule.
UNSUPPORTED = """import torch


class Backend:
    def __init__(self, model_runner):
        self.ndt = model_runner.server_args.speculative_num_draft_tokens
        self.qo_indptr = torch.zeros((model_runner.max_bs + 1,), dtype=torch.int32)

    def init_forward_metadata_capture_cuda_graph(self, bs, num_tokens, forward_mode, spec_info):
        if forward_mode.is_target_verify():
            step = opaque_helper(self.ndt) ** 3
            self.qo_indptr[: bs + 1] = torch.arange(0, bs * step + 1, step)
"""


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["scan", "--isolated", "--no-cache", *args])
    return result.exit_code, result.stdout


def test_concise_is_one_line_per_finding_then_the_summary() -> None:
    code, out = run(str(BUG), "--output-format", "concise")
    lines = out.splitlines()
    findings = [m for m in map(CONCISE.match, lines) if m]
    assert code == 1
    assert [(m["path"], m["code"]) for m in findings] == [
        ("fixtures/bugs/eagle_draft_extend_v2.py", "IDX001"),
        ("fixtures/bugs/eagle_draft_extend_v2.py", "IDX002"),
    ]
    assert lines[: len(findings)] == [m.string for m in findings]  # the findings come first
    assert lines[-1].startswith("Found 2 findings")
    assert not any(line.startswith(" ") for line in lines)  # no frames, no related lines
    # `--format concise` is the same option (the summary's timing aside).
    again_code, again = run(str(BUG), "--format", "concise")
    assert (again_code, again.splitlines()[:-1]) == (code, lines[:-1])


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_quiet_prints_the_findings_only(fmt: str) -> None:
    code, out = run(str(BUG), "--output-format", fmt, "--quiet")
    assert code == 1
    assert "Found" not in out and "note:" not in out
    headers = [line for line in out.splitlines() if CONCISE.match(line)]
    assert len(headers) == 2
    # A clean scan under --quiet prints nothing at all.
    assert run(str(ROOT / "fixtures/correct/eagle_full_fix.py"), "-q", "--output-format", fmt) == (
        0,
        "",
    )


def test_exit_zero_keeps_the_report_and_exits_0() -> None:
    code, out = run(str(BUG), "--exit-zero")
    assert code == 0
    assert out.splitlines()[-1].startswith("Found 2 findings")
    # A usage error is still one.
    assert run(str(BUG), "--exit-zero", "--select", "IDX777")[0] == 2


def test_paths_below_the_working_folder_are_shown_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pkg").mkdir()
    shutil.copy(BUG, tmp_path / "pkg/backend.py")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(BUG, elsewhere / "other.py")
    monkeypatch.chdir(tmp_path / "pkg")
    _, out = run(str(tmp_path / "pkg/backend.py"), str(elsewhere), "--output-format", "concise")
    paths = {m["path"] for m in map(CONCISE.match, out.splitlines()) if m}
    # Below the working folder: relative; above or beside it: as given.
    assert paths == {"backend.py", str(elsewhere / "other.py")}
    code, out = run(str(tmp_path / "pkg/missing.py"))
    assert code == 1 and "missing.py: error: no such file or directory" in out
    assert str(tmp_path) not in out


def test_no_path_scans_the_working_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pkg").mkdir()
    shutil.copy(BUG, tmp_path / "pkg/backend.py")
    monkeypatch.chdir(tmp_path)
    code, out = run("--output-format", "concise")
    assert code == 1
    assert {m["path"] for m in map(CONCISE.match, out.splitlines()) if m} == {"pkg/backend.py"}
    # The hook's mode names the changed files: none is a usage error, not a scan of `.`.
    result = CliRunner().invoke(main, ["scan", "--isolated", "--changed-only"])
    assert result.exit_code == 2 and "--changed-only needs the changed files" in result.output


def test_show_unsupported_lists_the_sites_with_their_reason(tmp_path: Path) -> None:
    path = tmp_path / "backend.py"
    path.write_text(UNSUPPORTED)
    for fmt in ("text", "concise"):
        _, plain = run(str(path), "--output-format", fmt)
        _, shown = run(str(path), "--output-format", fmt, "--show-unsupported")
        line = f"{path}:12:13: IDX001 unsupported in TARGET_VERIFY: operator `Power`"
        assert line not in plain.splitlines()
        assert line in shown.splitlines()
        assert SUMMARY.search(shown)["unsupported"] == "1"  # type: ignore[index]


def counts(summary: str) -> dict[str, int]:
    found = SUMMARY.search(summary)
    assert found is not None, summary
    return {k: int(v) for k, v in found.groupdict().items() if v is not None}


def taken_out(summary: str) -> int:
    """The findings the summary says the reporting policy took out."""
    kinds = ("suppressed", "baselined", "ignored by per-file-ignores", "outside the changed files")
    return sum(int(n) for kind in kinds for n in re.findall(rf"(\d+) {kind}", summary))


def test_the_summary_adds_up(tmp_path: Path) -> None:
    """Every verdict is counted, the verdicts sum to the obligations, and the findings the
    refuted obligations make, less those the policy took out, plus those about comments, are
    the findings reported."""
    baseline = tmp_path / "baseline.json"
    run(str(BUG), "--write-baseline", str(baseline))
    for args in (
        ["fixtures"],
        ["fixtures/golden/inputs/suppressed_backend.py"],
        ["fixtures/bugs/capture_replay.py", "fixtures/correct"],
        ["fixtures/bugs", "--baseline", str(baseline)],
    ):
        paths = [str(ROOT / a) if a.startswith("fixtures") else a for a in args]
        _, out = run(*paths, "--output-format", "concise")
        summary = out.splitlines()[-1]
        seen = counts(summary)
        verdicts = ("proved", "refuted", "unknown", "unsupported", "unreachable")
        assert sum(seen[v] for v in verdicts) == seen["obligations"], summary
        reported = int(re.match(r"Found (\d+) (?:new )?finding", summary)[1])  # type: ignore[index]
        about = re.search(r"(\d+) findings? about suppression comments", summary)
        assert seen.get("from_refuted", 0) <= seen["refuted"]
        assert (
            seen.get("from_refuted", 0) - taken_out(summary) + (int(about[1]) if about else 0)
            == reported
        ), summary
        # A note (a value nothing reads) has its concise line too, and fails nothing.
        notes = seen.get("notes", 0)
        assert reported + notes == sum(1 for line in out.splitlines() if CONCISE.match(line))


def test_the_summary_counts_unsupported_and_unreachable_verdicts(tmp_path: Path) -> None:
    path = tmp_path / "backend.py"
    path.write_text(UNSUPPORTED)
    _, out = run(str(path))
    seen = counts(out.splitlines()[-1])
    assert (seen["obligations"], seen["unsupported"], seen["refuted"]) == (2, 1, 1)


def test_a_mode_without_its_runner_says_it_used_the_profile_default(tmp_path: Path) -> None:
    backend = BUG.read_text().replace("from fixtures.runtime.forward_mode", "from forward_mode")
    (tmp_path / "backend.py").write_text(backend)
    _, alone = run(str(tmp_path / "backend.py"))
    note = (
        "note: no runner for DRAFT_EXTEND_V2 among the scanned files: compared with the sglang "
        "profile's default width `speculative_num_draft_tokens`"
    )
    assert any(line.startswith(note) for line in alone.splitlines())
    doc = json.loads(run(str(tmp_path / "backend.py"), "--format", "json")[1])
    assert doc["profile_defaults"] == [
        {"profile": "sglang", "mode": "DRAFT_EXTEND_V2", "width": "speculative_num_draft_tokens"}
    ]
    # With the runner in the tree, its width is used, and nothing is said.
    (tmp_path / "forward_mode.py").write_text(ENUM)
    (tmp_path / "runner.py").write_text(DRAFT_EXTEND_RUNNER)
    _, whole = run(str(tmp_path))
    assert "no runner for DRAFT_EXTEND_V2" not in whole
    assert json.loads(run(str(tmp_path), "--format", "json")[1])["profile_defaults"] == []
    assert "note:" not in run(str(tmp_path / "backend.py"), "-q")[1]  # no notes under --quiet


@pytest.mark.network
def test_one_real_backend_alone_says_its_runner_was_not_scanned() -> None:
    """SGLang 0.5.23's trtllm_mla_backend.py scanned alone: its draft-extend v2 obligations
    rest on the profile's default width, and the report says so (the whole tree, which holds
    the runner, flags the file where this scan cannot)."""
    from .realtree import sglang_tree

    backend = sglang_tree("0.5.23") / "srt/layers/attention/trtllm_mla_backend.py"
    _, out = run(str(backend), "--select", "IDX001", "--output-format", "concise")
    lines = out.splitlines()
    assert lines[-1].startswith("No findings")
    assert any(
        line.startswith("note: no runner for DRAFT_EXTEND_V2 among the scanned files")
        for line in lines
    )
    assert sum(counts(lines[-1])[v] for v in ("proved", "refuted", "unsupported")) >= 1
