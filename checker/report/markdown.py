"""The Markdown report, for `$GITHUB_STEP_SUMMARY` (which holds every finding, where
annotations stop at 10) and for pasting into a review: a summary, a table of all findings,
then each finding with its code frame, counterexample and related locations."""

from __future__ import annotations

from idxcheck.model.findings import Finding, ScanResult
from idxcheck.report.context import Report, as_report, plural, summary_counts
from idxcheck.report.frames import frame


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def _anchor(index: int) -> str:
    return f"finding-{index}"


def _details(index: int, finding: Finding, report: Report) -> list[str]:
    span = finding.span
    title = f"{finding.code} {finding.name}" + (f" in {finding.mode}" if finding.mode else "")
    out = [
        f'<a id="{_anchor(index)}"></a>',
        f"### {index}. {title}",
        "",
        f"`{span.path}:{span.line}:{span.column + 1}`",
    ]
    if finding.function:
        out[-1] += f" in `{finding.function}`"
    out += ["", finding.message, ""]
    found = frame(span, report.sources)
    if found is not None:
        width = len(str(found.number))
        out += [
            "```text",
            f"{found.number} | {found.text}",
            f"{' ' * width} | {' ' * found.start}{'^' * (found.end - found.start)}",
            "```",
            "",
        ]
    if finding.counterexample_text:
        needs = f" (needs {finding.needs_text})" if finding.needs_text else ""
        out += [f"- **counterexample:** `{finding.counterexample_text}`{needs}"]
    for text, value in finding.conditions:
        out += [f"- **with** `{text}` {'true' if value else 'false'}"]
    for related in finding.related:
        where = f"`{related.span.path}:{related.span.line}` " if related.span else ""
        out += [f"- **{related.role}:** {where}{related.message}"]
    if finding.confirmation:
        c = finding.confirmation
        out += [f"- **confirmation:** {c.get('status')}: {c.get('reason', '')}"]
    out.append("")
    return out


def render(result: ScanResult | Report) -> str:
    report = as_report(result)
    findings = report.findings
    count = len(findings)
    heading = (
        plural(count, "new finding" if report.baseline_used else "finding")
        if count
        else "no findings"
    )
    out = [f"## idxcheck: {heading}", ""]
    counts = ", ".join(f"{value} {name}" for name, value in summary_counts(report))
    extras = []
    if report.suppressed:
        extras.append(f"{len(report.suppressed)} suppressed")
    if report.baselined:
        extras.append(f"{len(report.baselined)} baselined")
    if report.result.errors:
        extras.append(plural(len(report.result.errors), "error"))
    out += [counts + ("; " + ", ".join(extras) if extras else "") + ".", ""]
    if findings:
        out += [
            "| # | location | rule | mode | finding | counterexample |",
            "|---|---|---|---|---|---|",
        ]
        for index, finding in enumerate(findings, start=1):
            span = finding.span
            out.append(
                f"| [{index}](#{_anchor(index)}) | `{_cell(span.path)}:{span.line}` "
                f"| {finding.code} {finding.name} | {finding.mode or '-'} "
                f"| {_cell(finding.message)} | {_cell(finding.counterexample_text) or '-'} |"
            )
        out.append("")
        for index, finding in enumerate(findings, start=1):
            out += _details(index, finding, report)
    if report.result.errors:
        out += ["### Errors", ""]
        out += [f"- `{_cell(e.path)}`: {_cell(e.message)}" for e in report.result.errors]
        out.append("")
    if report.strict and report.unknown_notes():
        out += ["### Undecided (UNKNOWN)", ""]
        out += [
            f"- `{p}:{line}` {code} in {mode}: {reason}"
            for p, line, _c, code, mode, reason in report.unknown_notes()
        ]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
