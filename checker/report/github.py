"""GitHub Actions workflow commands: one `::error`/`::warning` annotation per finding, shown
on the pull request's diff. GitHub shows at most 10 annotations of each kind per step, so a
workflow also writes the Markdown report (all findings) to `$GITHUB_STEP_SUMMARY`."""

from __future__ import annotations

from idxcheck.model.findings import Finding, ScanResult
from idxcheck.report.context import Report, as_report, plural
from idxcheck.report.detail import detail_lines
from idxcheck.report.escape import display, workflow_data, workflow_property


def _data(lines: list[str]) -> str:
    # Each line of the message escaped for display, then for the command (`%0A` between).
    return workflow_data("\n".join(display(line) for line in lines))


def _prop(text: str) -> str:
    return workflow_property(display(text))


def annotation(finding: Finding) -> str:
    span = finding.span
    props = [
        f"file={_prop(span.path)}",
        f"line={span.line}",
        f"endLine={span.end_line}",
        f"col={span.column + 1}",
    ]
    if span.end_line == span.line and span.end_column > span.column:
        props.append(f"endColumn={span.end_column + 1}")
    title = f"{finding.code} {finding.name}" + (f" ({finding.mode})" if finding.mode else "")
    props.append(f"title={_prop(title)}")
    lines = [finding.message, *detail_lines(finding)]
    kind = {"error": "error", "note": "notice"}.get(finding.severity, "warning")
    return f"::{kind} {','.join(props)}::{_data(lines)}"


def render(result: ScanResult | Report) -> str:
    report = as_report(result)
    out = [annotation(f) for f in report.findings]
    for error in report.result.errors:
        out.append(f"::error file={_prop(error.path)},title=idxcheck::{_data([error.message])}")
    if report.strict:
        for path, line, column, code, mode, reason in report.unknown_notes():
            out.append(
                f"::error file={_prop(path)},line={line},col={column + 1},"
                f"title={_prop(code + ' UNKNOWN')}::{_data([f'UNKNOWN in {mode}: {reason}'])}"
            )
    count = len(report.findings)
    out.append(
        f"::notice title=idxcheck::{_data([plural(count, 'finding') if count else 'No findings'])}"
    )
    return "\n".join(out) + "\n"
