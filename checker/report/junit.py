"""JUnit XML, for CI systems other than GitHub (GitLab, Jenkins, Azure, Buildkite read it).

One test suite per backend (`path:Class`); in it one failing test case per finding (its rule,
mode and place: `file` and `line` name where it is, its `<failure>` what it says), and one
passing case per forward mode checked there without a finding, so the failures count the
findings. Findings outside the matrix (suppression comments) and per-file errors get suites of
their own. A scan with nothing to check still writes one passing case, so the CI system sees
that the job ran. What comes from the scanned tree is shown escaped
(`escape.display`), and ElementTree escapes it for XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from idxcheck.model.findings import Finding, ScanResult
from idxcheck.report import matrix
from idxcheck.report.context import Report, as_report
from idxcheck.report.detail import detail_lines
from idxcheck.report.escape import display, line_start, xml_chars


def _lines(lines: list[str]) -> str:
    # Text of several lines: each escaped for display and unable to open a CI log command.
    return "\n".join(line_start(line) for line in lines)


def _failure_text(finding: Finding) -> str:
    span = finding.span
    head = f"{span.path}:{span.line}:{span.column + 1}: {finding.code} {finding.message}"
    return _lines([head, *detail_lines(finding)])


def _failure(case: ET.Element, finding: Finding) -> None:
    # A note (a value nothing reads) fails nothing: a skipped case that says why.
    tag = "skipped" if finding.severity == "note" else "failure"
    failure = ET.SubElement(
        case, tag, message=display(f"{finding.code} {finding.message}"), type=finding.code
    )
    failure.text = _failure_text(finding)


def _finding_case(
    suite: ET.Element, row: matrix.Row, finding: Finding, names: set[str]
) -> ET.Element:
    """The test case of one finding: named by its rule, mode and place (the file too when it
    is not the backend's), unique in its suite as CI systems key cases by name."""
    span = finding.span
    place = f"{span.line}:{span.column + 1}"
    if span.path != row.path:
        place = f"{span.path}:{place}"
    base = f"{finding.code} in {finding.mode} at {place}"
    name, number = base, 1
    while name in names:
        number += 1
        name = f"{base} ({number})"
    names.add(name)
    return ET.SubElement(
        suite,
        "testcase",
        classname=display(row.label),
        name=display(name),
        file=display(span.path),
        line=str(span.line),
    )


def to_element(result: ScanResult | Report) -> ET.Element:
    report = as_report(result)
    grid = matrix.build(report)
    suites = _matrix_suites(report, grid)
    for extra in (_loose_suite(report, grid.loose), _errors_suite(report)):
        if extra is not None:
            suites.append(extra)
    if not suites:
        suite = ET.Element("testsuite", name="idxcheck")
        ET.SubElement(suite, "testcase", classname="idxcheck", name="scan")
        suites.append(suite)
    root = ET.Element("testsuites", name="idxcheck")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        cases = suite.findall("testcase")
        counts = {
            "tests": len(cases),
            "failures": sum(1 for c in cases if c.find("failure") is not None),
            "errors": sum(1 for c in cases if c.find("error") is not None),
            "skipped": sum(1 for c in cases if c.find("skipped") is not None),
        }
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", "0")
        root.append(suite)
    for key, value in totals.items():
        root.set(key, str(value))
    return root


def _matrix_suites(report: Report, grid: matrix.Matrix) -> list[ET.Element]:
    """A suite per row of the matrix: a case per finding, else one per mode with obligations."""
    suites: list[ET.Element] = []
    unknown = (
        {(p, c, m) for p, _l, _col, c, m, _r in report.unknown_notes()} if report.strict else set()
    )
    for row in grid.rows:
        suite = ET.Element("testsuite", name=display(row.label))
        names: set[str] = set()
        for mode in grid.modes:
            cell = grid.cells.get((row, mode))
            if cell is None:
                continue
            for index in cell.findings:
                finding = report.findings[index]
                _failure(_finding_case(suite, row, finding, names), finding)
            if cell.findings:
                continue
            case = ET.SubElement(
                suite,
                "testcase",
                classname=display(row.label),
                name=display(mode),
                file=display(row.path),
            )
            if cell.category in ("unknown", "unsupported"):
                is_failure = cell.category == "unknown" and any(
                    p == row.path and m == mode for p, _c, m in unknown
                )
                if is_failure:
                    failure = ET.SubElement(
                        case, "failure", message="UNKNOWN: the solver gave up", type="UNKNOWN"
                    )
                    failure.text = _lines(list(cell.reasons))
                else:
                    ET.SubElement(case, "system-out").text = f"{cell.category}: " + "; ".join(
                        display(r) for r in cell.reasons
                    )
        suites.append(suite)
    return suites


def _loose_suite(report: Report, loose: Sequence[int]) -> ET.Element | None:
    """The findings of no matrix cell (the meta rules' findings on comments)."""
    if not loose:
        return None
    suite = ET.Element("testsuite", name="idxcheck comments")
    for index in loose:
        finding = report.findings[index]
        case = ET.SubElement(
            suite,
            "testcase",
            classname="idxcheck comments",
            name=display(f"{finding.span.path}:{finding.span.line} {finding.code}"),
            file=display(finding.span.path),
            line=str(finding.span.line),
        )
        _failure(case, finding)
    return suite


def _errors_suite(report: Report) -> ET.Element | None:
    if not report.result.errors:
        return None
    suite = ET.Element("testsuite", name="idxcheck errors")
    for error in report.result.errors:
        path, message = display(error.path), display(error.message)
        case = ET.SubElement(suite, "testcase", classname="idxcheck errors", name=path, file=path)
        ET.SubElement(case, "error", message=message, type="FileError").text = message
    return suite


def _xml_safe(root: ET.Element) -> None:
    # What the scanned tree filled is escaped above; this keeps the document well-formed
    # whatever else a field holds (XML 1.0 cannot hold most control characters).
    for element in root.iter():
        if element.text:
            element.text = xml_chars(element.text)
        for key, value in element.attrib.items():
            element.set(key, xml_chars(value))


def render(result: ScanResult | Report) -> str:
    element = to_element(result)
    _xml_safe(element)
    ET.indent(element)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(element, encoding="unicode") + "\n"
    )
