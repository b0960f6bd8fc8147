"""The concise report (`--output-format concise`): one line per finding, `path:line:col: CODE
message` (ruff's concise format), for editors' problem matchers and `grep`; then what the text
report ends with (per-file errors, the notes, the summary; `quiet` keeps the errors only)."""

from __future__ import annotations

from idxcheck.model.findings import Finding, ScanResult
from idxcheck.report.context import Report, as_report
from idxcheck.report.escape import display, line_start
from idxcheck.report.text import Style, tail_lines


def finding_line(finding: Finding, style: Style | None = None) -> str:
    style = style or Style(False)
    span = finding.span
    return (
        style.bold(line_start(f"{span.path}:{span.line}:{span.column + 1}:"))
        + " "
        + style.severity(finding.severity, finding.code)
        + f" {display(finding.message)}"
    )


def render(
    result: ScanResult | Report,
    *,
    color: bool = False,
    quiet: bool = False,
    show_unsupported: bool = False,
    strict: bool = False,
) -> str:
    report = as_report(result)
    style = Style(color)
    out = [finding_line(finding, style) for finding in report.findings]
    out.extend(
        tail_lines(report, style, strict=strict, quiet=quiet, show_unsupported=show_unsupported)
    )
    return "".join(line + "\n" for line in out)
