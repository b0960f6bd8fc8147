"""Several formats per run, as a user runs them: through the CLI, into files and stdout."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner

from idxcheck.app.api import scan
from idxcheck.cli import main
from idxcheck.report import github

from .sarif_check import assert_valid_sarif_file

BUGS = "fixtures/bugs"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_every_format_in_one_run(tmp_path: Path) -> None:
    targets = {
        name: tmp_path / f"out.{name}"
        for name in ("sarif", "json", "github", "markdown", "junit", "html")
    }
    args = ["scan", BUGS, "--format", "text"]
    for name, path in targets.items():
        args += ["--format", f"{name}={path}"]
    code, out, _ = run(*args)
    assert code == 1
    findings = json.loads(targets["json"].read_text())["findings"]
    assert findings
    # text went to stdout, one header line per finding
    headers = re.findall(r"^\S+:\d+:\d+: IDX\d{3} ", out, flags=re.MULTILINE)
    assert len(headers) == len(findings)
    sarif = assert_valid_sarif_file(targets["sarif"])
    assert len(sarif["runs"][0]["results"]) == len(findings)
    assert sarif["runs"][0]["invocations"][0]["exitCode"] == 1
    annotations = [
        line
        for line in targets["github"].read_text().splitlines()
        if line.startswith(("::error ", "::warning ", "::notice "))
        and not line.startswith("::notice title=idxcheck::")
    ]
    assert len(annotations) == len(findings)
    summary = targets["markdown"].read_text()
    # every finding is in the step summary, also past the 10 annotations GitHub shows
    assert len(findings) > 10
    for finding in findings:
        assert f"`{finding['path']}:{finding['line']}`" in summary
    suites = ET.parse(targets["junit"]).getroot()
    assert int(suites.get("failures", "0")) >= 1
    # Notes (values nothing reads) are skipped cases, not failures.
    notes = sum(1 for f in findings if f["severity"] == "note")
    assert (
        sum(len(case.findall("failure")) for case in suites.iter("testcase"))
        == len(findings) - notes
    )
    page = targets["html"].read_text()
    assert page.count('class="finding ') == len(findings)


def test_at_most_one_format_on_stdout() -> None:
    code, _, err = run("scan", BUGS, "--format", "text", "--format", "json")
    assert code == 2
    assert "at most one format can go to standard output" in err
    code, _, err = run("scan", BUGS, "--format", "yaml")
    assert code == 2 and "unknown format 'yaml'" in err


def test_output_option_takes_the_bare_format(tmp_path: Path) -> None:
    target = tmp_path / "x.sarif"
    code, out, _ = run("scan", BUGS, "--format", "sarif", "-o", str(target))
    assert code == 1 and out == ""
    assert_valid_sarif_file(target)


def test_sarif_carries_the_chain_and_the_counterexample(tmp_path: Path) -> None:
    target = tmp_path / "bug.sarif"
    run("scan", "fixtures/bugs/eagle_draft_extend_v2.py", "--format", f"sarif={target}")
    doc = assert_valid_sarif_file(target)
    run_ = doc["runs"][0]
    rules = {r["id"]: r for r in run_["tool"]["driver"]["rules"]}
    assert {"IDX001", "IDX002", "IDX900", "IDX901"} <= rules.keys()
    assert "**Invariant.**" in rules["IDX001"]["help"]["markdown"]
    stride = next(r for r in run_["results"] if r["ruleId"] == "IDX001")
    assert run_["tool"]["driver"]["rules"][stride["ruleIndex"]]["id"] == "IDX001"
    region = stride["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (29, 19)
    props = stride["properties"]
    assert props["mode"] == "DRAFT_EXTEND_V2"
    assert props["counterexample"]["speculative_eagle_topk"] > 1
    assert props["needs"] == "topk > 1"
    assert (
        props["replay"]["tokens_per_req"] == props["counterexample"]["speculative_num_draft_tokens"]
    )
    flow = stride["codeFlows"][0]["threadFlows"][0]["locations"]
    texts = [step["location"]["message"]["text"] for step in flow]
    assert texts[0].startswith("backend site: ")
    assert any(t.startswith("runner width: ") for t in texts)
    assert [s["executionOrder"] for s in flow] == list(range(1, len(flow) + 1))
    related_lines = {
        loc["physicalLocation"]["region"]["startLine"]
        for loc in stride["relatedLocations"]
        if "physicalLocation" in loc
    }
    assert 31 in related_lines  # `qo_indptr` is bound there
    fingerprint = stride["partialFingerprints"]["idxcheck/v1"]
    finding = next(
        f
        for f in scan(["fixtures/bugs/eagle_draft_extend_v2.py"]).result.findings
        if f.code == "IDX001"
    )
    assert fingerprint == f"{finding.fingerprint}:0"


def test_sarif_fingerprints_are_distinct_and_survive_moving_lines(tmp_path: Path) -> None:
    original = Path("fixtures/bugs/buffers_and_slices.py").read_text()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "backend.py").write_text(original)
    (tmp_path / "b" / "backend.py").write_text("import os\n\n\n" + original)
    docs = []
    for side in ("a", "b"):
        target = tmp_path / f"{side}.sarif"
        run("scan", str(tmp_path / side / "backend.py"), "--format", f"sarif={target}")
        docs.append(json.loads(target.read_text())["runs"][0]["results"])
    prints = [[r["partialFingerprints"]["idxcheck/v1"] for r in results] for results in docs]
    assert prints[0] == prints[1]
    assert len(set(prints[0])) == len(prints[0]) > 1  # identical claims are numbered apart
    lines = [
        [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results]
        for results in docs
    ]
    assert [line + 3 for line in lines[0]] == lines[1]


def test_github_annotations_escape_workflow_command_syntax() -> None:
    finding = scan(["fixtures/bugs/eagle_draft_extend_v2.py"]).result.findings[0]
    line = github.annotation(finding)
    assert line.startswith("::error file=fixtures/bugs/eagle_draft_extend_v2.py,line=29,")
    props, message = line[len("::error ") :].split("::", 1)
    assert "\n" not in line and "%0A" in message  # a multi-line message, one command line
    title = dict(p.split("=", 1) for p in props.split(","))["title"]
    assert title == "IDX001 qo-indptr-stride-mismatch (DRAFT_EXTEND_V2)"


def test_color_only_when_asked_or_on_a_terminal() -> None:
    _, plain, _ = run("scan", "fixtures/bugs/eagle_draft_extend_v2.py")
    assert "\x1b[" not in plain  # CliRunner's stdout is not a terminal: auto means no colour
    _, colored, _ = run("scan", "fixtures/bugs/eagle_draft_extend_v2.py", "--color", "always")
    assert "\x1b[1;31mIDX001\x1b[0m" in colored
    timing = re.compile(r"in \d+\.\d+s$", flags=re.MULTILINE)
    assert timing.sub("", re.sub(r"\x1b\[[0-9;]*m", "", colored)) == timing.sub("", plain)


def test_code_frame_puts_the_caret_under_the_expression() -> None:
    _, out, _ = run("scan", "fixtures/bugs/eagle_draft_extend_v2.py")
    lines = out.splitlines()
    source = next(i for i, line in enumerate(lines) if line.startswith("29 |"))
    caret_line = lines[source + 1]
    code = lines[source][len("29 | ") :]
    carets = caret_line[len("   | ") :]
    start = carets.index("^")
    assert code[start : start + len(carets.strip())] == "self.speculative_num_steps + 1"


def test_statistics_counts_findings_per_rule_and_mode() -> None:
    _, out, _ = run("scan", BUGS, "--statistics")
    findings = scan([BUGS]).result.findings
    # Columns are two or more spaces apart: a column name may hold one (`any mode`).
    table = [
        re.split(r" {2,}", line.strip())
        for line in out.splitlines()[:-1]
        if not line.startswith("note: ")
    ]
    header = table[0]
    for row in table[1:-1]:
        code = row[0]
        for mode, cell in zip(header[2:-1], row[2:-1], strict=True):
            assert int(cell) == sum(1 for f in findings if f.code == code and f.mode == mode)
        assert int(row[-1]) == sum(1 for f in findings if f.code == code)
    assert int(table[-1][-1]) == len(findings)
    assert not re.search(r"^\S+:\d+:\d+: IDX", out, flags=re.MULTILINE)  # counts, not the list
