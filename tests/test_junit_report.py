"""The JUnit report counts findings: one failing test case per finding, with the finding's
message and its place (`file`, `line`, and the failure's first line), names unique in a suite,
and one passing case per forward mode checked without a finding."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from idxcheck.app.api import scan
from idxcheck.cli import main
from idxcheck.report import junit
from idxcheck.report.context import Report

BUGS = "fixtures/bugs"


def test_one_failing_case_per_finding(tmp_path: Path) -> None:
    target = tmp_path / "junit.xml"
    result = CliRunner().invoke(main, ["scan", BUGS, "--format", f"junit={target}"])
    assert result.exit_code == 1, result.output
    doc = json.loads(CliRunner().invoke(main, ["scan", BUGS, "--format", "json"]).stdout)
    findings = doc["findings"]
    # Several findings share a backend and a mode: the case that grouped them is gone.
    cells = Counter((f["path"], f.get("function", "").split(".")[0], f["mode"]) for f in findings)
    assert max(cells.values()) > 1
    root = ET.parse(target).getroot()
    cases = list(root.iter("testcase"))
    failing = [c for c in cases if c.find("failure") is not None]
    # A note (a value nothing reads) is a skipped case, not a failure.
    notes = [f for f in findings if f["severity"] == "note"]
    assert notes
    assert int(root.get("failures", "")) == len(failing) == len(findings) - len(notes)
    assert int(root.get("skipped", "")) == len(notes)
    assert all(len(c.findall("failure")) == 1 for c in failing)
    assert int(root.get("tests", "")) == len(cases)
    for suite in root.iter("testsuite"):
        names = [c.get("name") for c in suite.iter("testcase")]
        assert len(names) == len(set(names)), names
        assert int(suite.get("failures", "")) == sum(
            1 for c in suite.iter("testcase") if c.find("failure") is not None
        )
    # Each finding has its own case: its place and its message.
    unmatched = list(failing)
    skipped = [c for c in cases if c.find("skipped") is not None]
    for note in notes:
        assert any(
            c.get("file") == note["path"] and c.get("line") == str(note["line"]) for c in skipped
        )
    for finding in findings:
        if finding["severity"] == "note":
            continue
        where = f"{finding['path']}:{finding['line']}:{finding['column']}: {finding['code']} "
        own = [
            c
            for c in unmatched
            if c.get("file") == finding["path"]
            and c.get("line") == str(finding["line"])
            and (c.findtext("failure") or "").startswith(where)
            and finding["message"] in (c.find("failure").get("message") or "")  # type: ignore[union-attr]
        ]
        assert own, f"no test case of its own for {where}{finding['message']}"
        unmatched.remove(own[0])
    assert unmatched == []


def test_findings_at_one_place_get_cases_of_distinct_names() -> None:
    scanned = scan(["fixtures/bugs/eagle_draft_extend_v2.py"]).result
    first = scanned.findings[0]
    twice = replace(scanned, findings=[first, replace(first, message=first.message + " again")])
    root = ET.fromstring(junit.render(Report(twice)))
    failing = [c for c in root.iter("testcase") if c.find("failure") is not None]
    assert len(failing) == 2
    assert len({c.get("name") for c in failing}) == 2
    assert {c.find("failure").get("message") for c in failing} == {  # type: ignore[union-attr]
        f"{first.code} {first.message}",
        f"{first.code} {first.message} again",
    }
